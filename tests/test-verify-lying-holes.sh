#!/bin/bash
# --verify does not take a destination's word for its holes where the
# source had data.  The destination here is an nbdkit eval server over a
# file that holds the right data, whose block status tells the truth
# about the file's holes, but whose reads in some ranges turn zero bytes
# into 'x': it says hole,zero and returns other data.  The source has
# 1 MiB of zeroes written as data in segment 2 (so its block status says
# data there, and the copy makes it a hole of the destination): --verify
# reads the destination there whatever it claims, and fails naming
# segment 2.  A lie where the source too was a hole (segment 1) is what
# --verify trusts and --verify=full (every byte read, no block status)
# catches.  An honest destination passes both, and --verify still skips
# the holes of both sides.  A lie over one 64 KiB granule, the first or
# the last of a read, is caught too.
. "${srcdir:-.}/tests/functions.sh"

requires python3
requires fallocate
requires "$QEMU_IMG"
requires_nbdkit_plugin eval
"$NBDCP" --verify=full --help >/dev/null

seg=$((128 * 1024 * 1024))
M=$((1024 * 1024))
size=$((seg + 12 * M))

# The source, a file: data in segments 1 and 2, 1 MiB of zero bytes
# written as data in segment 2, holes elsewhere.
truncate -s $size "$tmp/src.img"
printf hello | dd of="$tmp/src.img" conv=notrunc status=none
dd if=/dev/zero of="$tmp/src.img" bs=1M seek=$(((seg + M) / M)) count=1 \
  conv=notrunc status=none
printf third | dd of="$tmp/src.img" bs=1 seek=$((seg + 8 * M + 144)) \
  conv=notrunc status=none
# The premise, as qemu-img (not nbdcp) sees it: the zeroes are data.
"$QEMU_IMG" map -f raw --output=json "$tmp/src.img" >"$tmp/map.json"
python3 - "$tmp/map.json" $((seg + M)) <<'PY' ||
import json, sys
at = int(sys.argv[2])
for e in json.load(open(sys.argv[1])):
    if e["start"] <= at < e["start"] + e["length"]:
        sys.exit(0 if e["data"] else 1)
sys.exit(1)
PY
  skip "the file system does not keep written zeroes allocated"

extents_py=$(cd "${srcdir:-.}" && pwd)/tests/file-extents.py
# liar NAME LO HI: the destination over $tmp/NAME.img; reads of
# [LO, HI) return 'x' for every zero byte.  LO = HI: an honest server.
liar ()
{
  local name=$1 lo=$2 hi=$3 disk=$tmp/$1.img
  truncate -s $size "$disk"
  start_nbdkit "$name" eval \
    get_size="echo $size" \
    can_write='exit 0' can_zero='exit 0' can_flush='exit 0' \
    can_extents='exit 0' \
    pread="dd if='$disk' bs=64K skip=\$4 count=\$3 \
           iflag=skip_bytes,count_bytes status=none |
           if [ \$4 -lt $hi ] && [ \$((\$4 + \$3)) -gt $lo ]; then
             tr '\\0' x; else cat; fi" \
    pwrite="dd of='$disk' bs=64K seek=\$4 oflag=seek_bytes conv=notrunc \
            status=none" \
    zero="fallocate -p -o \$4 -l \$3 '$disk'" \
    extents="python3 '$extents_py' '$disk' \$4 \$3" \
    flush='exit 0'
}

# 1. Honest: both modes pass, and --verify reads only where either side
# has data (the 1 MiB of zeroes is read back: the source had data).
liar honest 0 0
run_nbdcp -v --verify "$tmp/src.img" "$(uri_of "$tmp/honest.sock")" \
  2>"$tmp/v.err" || { cat "$tmp/v.err" >&2; fail "honest: --verify failed"; }
check_same "$tmp/src.img" "$tmp/honest.img" "honest destination"
read_back=$(sed -n 's/.*blkhash is the source.s (\([0-9]*\) bytes read back.*/\1/p' \
  "$tmp/v.err")
# Unless this (slow, shell and python) server took so long to answer
# the destination's block status that nbdcp gave up asking it (-v says
# so): --verify then reads all of it back, by design.
if grep -q 'left block status unanswered' "$tmp/v.err"; then
  echo "honest: block status unanswered in time (a loaded machine): all read back"
else
  [ "${read_back:-0}" -ge $M ] && [ "$read_back" -le $((2 * M)) ] ||
    fail "honest: --verify read back ${read_back:-?} bytes, not the data only"
fi
# --verify=full reads every byte and finds no hole.
run_nbdcp -v --verify=full --request-size=4M "$tmp/src.img" \
  "$(uri_of "$tmp/honest.sock")" 2>"$tmp/f.err" ||
  { cat "$tmp/f.err" >&2; fail "honest: --verify=full failed"; }
grep -q "($size bytes read back, 0 in holes not read)" "$tmp/f.err" ||
  fail "--verify=full did not read every byte: $(grep -- --verify "$tmp/f.err")"

# 2. Zero claimed, 'x' read, where the source had (zero) data: caught,
# also with a hash block smaller than the granule the record keeps.
liar seg2 $((seg + M)) $((seg + 2 * M))
expect_fail "^nbdcp: --verify: the destination differs from the source in \
bytes $seg to $size \(segment 2 of 2\): blkhash sha256/65536 " \
  "$NBDCP" --verify "$tmp/src.img" "$(uri_of "$tmp/seg2.sock")"
check_same "$tmp/src.img" "$tmp/seg2.img" "the lying server's disk"
expect_fail "differs from the source in bytes $seg to $size \
\(segment 2 of 2\): blkhash md5/4096 " \
  "$NBDCP" --verify --blkhash=md5/4K "$tmp/src.img" \
  "$(uri_of "$tmp/seg2.sock")"

# 2b. The same lie over one 64 KiB granule only, at the end and at the
# start of a read (1 MiB requests: the zero data is one read): the
# record of where the source was read must hold a read's every granule,
# its first and last included.
g64=$((64 * 1024))
liar last $((seg + 2 * M - g64)) $((seg + 2 * M))
expect_fail "differs from the source in bytes $seg to $size" \
  "$NBDCP" --verify --request-size=1M "$tmp/src.img" "$(uri_of "$tmp/last.sock")"
liar first $((seg + M)) $((seg + M + g64))
expect_fail "differs from the source in bytes $seg to $size" \
  "$NBDCP" --verify --request-size=1M "$tmp/src.img" "$(uri_of "$tmp/first.sock")"

# 3. The same lie where the source was a hole (64 MiB in segment 1):
# --verify believes it (documented), --verify=full does not.
liar seg1 $((64 * M)) $((65 * M))
run_nbdcp --verify "$tmp/src.img" "$(uri_of "$tmp/seg1.sock")"
check_same "$tmp/src.img" "$tmp/seg1.img" "segment 1 liar's disk"
expect_fail "^nbdcp: --verify: the destination differs from the source in \
bytes 0 to $seg \(segment 1 of 2\)" \
  "$NBDCP" --verify=full --request-size=4M "$tmp/src.img" \
  "$(uri_of "$tmp/seg1.sock")"

expect_fail "^nbdcp: --verify: 'most' is not 'data' or 'full'" \
  "$NBDCP" --verify=most "$tmp/src.img" "$tmp/never.img"
[ ! -e "$tmp/never.img" ] || fail "a refused copy created its destination"
exit 0
