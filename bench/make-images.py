#!/usr/bin/env python3
"""Build the fragmented source images of workloads 11, 12 and 13.

    make-images.py frag FILE SIZE
        Workload 11: SIZE bytes, 4 KiB of data every 8 KiB (the map the
        issue gives), written with pwrite into a new sparse file.

    make-images.py fs FILE SIZE TREE SEED
        Workload 12: a raw image laid out as ext4 lays out the files of
        TREE (a real directory, /usr/share by default): see fs_layout.
        Prints the number of data extents and data bytes.

    make-images.py alternating FILE MAP SIZE SEED
        Workload 13: data and hole extents alternating, each 512 bytes
        to 64 KiB; the data goes into FILE (sparse) and the data extents
        into MAP, in the format of nbdkit-extentlist-filter.

Python 3 standard library only.  Data bytes are pseudo-random, so no
copier can skip them as zero.
"""

import os
import random
import sys

BLOCK = 4096
GROUP = 128 << 20          # an ext4 block group of 4 KiB blocks
MIB = 1 << 20


def parse_size(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if s[-1:].upper() in units:
        return int(s[:-1]) * units[s[-1].upper()]
    return int(s)


def open_new(path, size):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fd, size)
    return fd


def frag(path, size):
    fd = open_new(path, size)
    b = os.urandom(BLOCK)
    for off in range(0, size, 2 * BLOCK):
        os.pwrite(fd, b, off)
    os.close(fd)


class Writer:
    """Writes pseudo-random data extents, different from one another."""

    def __init__(self, fd, seed):
        self.fd = fd
        self.buf = random.Random(seed).randbytes(4 * MIB)
        self.n = 0

    def write(self, off, length):
        while length > 0:
            k = (self.n * 4099) % (len(self.buf) // 2)
            n = min(length, len(self.buf) - k)
            os.pwrite(self.fd, self.buf[k:k + n], off)
            off += n
            length -= n
            self.n += 1


def tree_files(tree):
    """(top-level directory, size) of every regular file under TREE, in
    path order, as a package manager unpacks them."""
    out = []
    for root, dirs, files in os.walk(tree):
        dirs.sort()
        rel = os.path.relpath(root, tree)
        top = rel.split(os.sep)[0] if rel != "." else ""
        for f in sorted(files):
            try:
                st = os.lstat(os.path.join(root, f))
            except OSError:
                continue
            if st.st_size > 0 and (st.st_mode & 0o170000) == 0o100000:
                out.append((top, st.st_size))
    return out


def fs_layout(size, files, seed):
    """Data extents of a freshly installed ext4 filesystem holding FILES.

    How ext4 places them (mke2fs defaults for a disk of this size):
    4 KiB blocks, 128 MiB block groups, flex_bg packing the bitmaps and
    the used part of the inode tables at the start of group 0, backup
    superblocks at the start of groups 1 and the powers of 3, 5 and 7;
    the Orlov allocator spreads top-level directories over the groups,
    and each file goes, block-aligned, after the previous one in its
    directory's group, spilling into the next group when that is full.
    Then a quarter of the files (seeded) are removed and their blocks
    discarded, as a published image is trimmed after the installer's
    temporary files and package caches are gone.  Data fills up to a
    quarter of the disk; the files are taken in path order."""
    rng = random.Random(seed)
    ngroups = max(1, size // GROUP)
    extents = []
    # Metadata: the superblock and group descriptors at 0, then (flex_bg)
    # every group's bitmaps, then their inode tables, 2 MiB each, of
    # which only the used inodes' blocks hold data.
    itable = 4 * MIB
    extents.append((0, BLOCK * (1 + 1 + 2 * ngroups)))
    inodes = min(len(files) + 1000, 8192 * ngroups)
    extents.append((itable, -(-inodes * 256 // BLOCK) * BLOCK))
    backups = {1} | {p ** k for p in (3, 5, 7) for k in range(1, 20)}
    for g in sorted(backups):
        if g < ngroups:
            extents.append((g * GROUP, 2 * BLOCK))
    first = itable + 2 * MIB * ngroups      # group 0's first data block
    fill = {}             # group -> next free offset
    budget = size // 4
    used = sum(e[1] for e in extents)
    tops = {}
    for top, fsize in files:
        if used >= budget:
            break
        if top not in tops:
            # Orlov: a new top-level directory goes to another group.
            tops[top] = (len(tops) * 7 + 1) % ngroups if ngroups > 1 else 0
        g = tops[top]
        blocks = (fsize + BLOCK - 1) // BLOCK * BLOCK
        for _ in range(ngroups):
            off = fill.get(g)
            if off is None:
                off = g * GROUP + (2 * BLOCK if g in backups else 0)
                off = max(off, first) if g == 0 else off
            if off + blocks <= min((g + 1) * GROUP, size) or blocks > GROUP:
                break
            g = (g + 1) % ngroups
            tops[top] = g
        if off + blocks > min((g + 1) * GROUP, size) and blocks <= GROUP:
            continue      # no group has room for it: leave it out
        if off + blocks > size:
            continue
        fill[g] = off + blocks
        used += blocks
        if rng.random() >= 0.25:
            extents.append((off, fsize))
    extents.sort()
    # Merge touching extents (ends are rounded to blocks, as on disk).
    merged = []
    for off, length in extents:
        end = off + (length + BLOCK - 1) // BLOCK * BLOCK
        if merged and off <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([off, end])
    return [(a, min(b, size) - a) for a, b in merged]


def fs(path, size, tree, seed):
    ext = fs_layout(size, tree_files(tree), seed)
    fd = open_new(path, size)
    w = Writer(fd, seed)
    for off, length in ext:
        w.write(off, length)
    os.close(fd)
    print(len(ext), sum(e[1] for e in ext))


def alternating(path, mapfile, size, seed):
    rng = random.Random(seed)
    fd = open_new(path, size)
    w = Writer(fd, seed)
    off, data, n = 0, True, 0
    with open(mapfile, "w") as m:
        while off < size:
            # 512 bytes to 64 KiB, log-uniform: as many short as long.
            length = int(512 * 2 ** rng.uniform(0, 7)) // 512 * 512
            length = min(length, size - off)
            if data:
                w.write(off, length)
                m.write("%d %d\n" % (off, length))
                n += 1
            off += length
            data = not data
    os.close(fd)
    print(n)


def main():
    a = sys.argv[1:]
    if a[:1] == ["frag"] and len(a) == 3:
        frag(a[1], parse_size(a[2]))
    elif a[:1] == ["fs"] and len(a) == 5:
        fs(a[1], parse_size(a[2]), a[3], int(a[4]))
    elif a[:1] == ["alternating"] and len(a) == 5:
        alternating(a[1], a[2], parse_size(a[3]), int(a[4]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
