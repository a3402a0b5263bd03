# file-extents.py FILE OFFSET LENGTH: the extents of FILE in [OFFSET,
# OFFSET+LENGTH), as SEEK_DATA and SEEK_HOLE find them, one
# "OFFSET LENGTH TYPE" line each in the form nbdkit's eval and sh
# plugins take from their extents method ("data", or "hole,zero").
# For tests whose nbdkit eval server tells the truth about a file's
# holes.
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
off, end = int(sys.argv[2]), int(sys.argv[2]) + int(sys.argv[3])
while off < end:
    try:
        data = min(os.lseek(fd, off, os.SEEK_DATA), end)
    except OSError:
        data = end
    if data > off:
        print(off, data - off, "hole,zero")
        off = data
        continue
    hole = min(os.lseek(fd, off, os.SEEK_HOLE), end)
    print(off, hole - off, "data")
    off = hole
