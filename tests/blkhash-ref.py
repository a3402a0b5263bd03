#!/usr/bin/env python3
# An independent reference for --blkhash, for the tests: reads a raw
# image (a file, or '-' for stdin) and prints
# H(H(block_0) || ... || H(block_n-1) || le64(size)) in hex.
# Usage: blkhash-ref.py [ALGO[/BLOCKSIZE]] FILE
import hashlib
import struct
import sys


def main():
    spec = sys.argv[1] if len(sys.argv) > 2 else "sha256"
    path = sys.argv[-1]
    algo, _, bs = spec.partition("/")
    block = 64 * 1024
    if bs:
        mult = {"K": 1024, "M": 1024 * 1024}.get(bs[-1].upper(), 1)
        block = int(bs.rstrip("kKmM")) * mult
    outer = hashlib.new(algo)
    # Only to be quick on sparse images: a zero block's digest, once,
    # and whole runs of zero blocks at a time (small blocks included).
    zero_block = bytes(block)
    zero_digest = hashlib.new(algo, zero_block).digest()
    chunk = max(block, 1024 * 1024)
    size = 0
    f = sys.stdin.buffer if path == "-" else open(path, "rb")
    while True:
        data = f.read(chunk)
        if not data:
            break
        # A short read in the middle would shift the blocks.
        while len(data) < chunk:
            more = f.read(chunk - len(data))
            if not more:
                break
            data += more
        whole = len(data) // block * block
        if data[:whole].count(0) == whole:
            outer.update(zero_digest * (whole // block))
        else:
            for i in range(0, whole, block):
                b = data[i : i + block]
                if b == zero_block:
                    outer.update(zero_digest)
                else:
                    outer.update(hashlib.new(algo, b).digest())
        if whole < len(data):  # the short last block
            outer.update(hashlib.new(algo, data[whole:]).digest())
        size += len(data)
    outer.update(struct.pack("<Q", size))
    print(outer.hexdigest())


main()
