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
    # Only to be quick on sparse images: a zero block's digest, once.
    zero_block = bytes(block)
    zero_digest = hashlib.new(algo, zero_block).digest()
    size = 0
    f = sys.stdin.buffer if path == "-" else open(path, "rb")
    while True:
        data = f.read(block)
        if not data:
            break
        # A short read in the middle would shift the blocks.
        while len(data) < block:
            more = f.read(block - len(data))
            if not more:
                break
            data += more
        if data == zero_block:
            outer.update(zero_digest)
        else:
            outer.update(hashlib.new(algo, data).digest())
        size += len(data)
    outer.update(struct.pack("<Q", size))
    print(outer.hexdigest())


main()
