#!/bin/bash
# A disk that is mostly hole is not asked about one segment at a time:
# a lane whose segment ends in a hole asks how far the hole goes, and
# the other lanes skip their block status requests inside it.  The
# skipped segments must still be zeroed on the destination (its old
# data there must go) and the data after a long hole must be found.
# The source's log counts the requests; qemu-img compare checks the
# copy against the source.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin data
requires_nbdkit_filter log
requires "$QEMU_IMG"
requires "$QEMU_NBD"

size=16G
segments=128
# Data at the start, after a 6 GiB hole (not on a segment boundary), and
# in the last bytes; the rest is hole.
src_data='1 2 3 @0x180000100 4 5 6 @0x3fffffff0 7 8 9'
# The destination's old data, in segments the source has as holes.
dst_junk='@0x0c0000000 9 9 9 @0x2800f0000 9 9 @0x3c0000000 9'

# copy NAME SRC: copy SRC onto a destination holding old data in the
# source's holes; the result must read as the source.
copy ()
{
  local name=$1 src=$2
  start_nbdkit "$name-dst" data "$dst_junk" size=$size
  copy_checked "$name" "$src" "$(uri_of "$tmp/$name-dst.sock")"
}

# nbdkit's data plugin, whose log counts the block status requests.
start_nbdkit nbdkit-src -r --filter=log data "$src_data" size=$size \
  logfile="$tmp/src.log"
copy nbdkit "$(uri_of "$tmp/nbdkit-src.sock")"
asked=$(grep -c ' Extents id=' "$tmp/src.log" || :)
echo "nbdkit: $asked block status requests for $segments segments"
# Before the look-ahead every segment was asked about once (139 requests:
# the segments with data twice); with it, about 40, more when lanes race.
[ "$asked" -lt $((segments * 3 / 4)) ] ||
  fail "nbdkit: $asked block status requests for $segments segments"

# qemu-nbd, and a file with holes read directly (SEEK_HOLE).
truncate -s $size "$tmp/src.raw"
printf 'abc' | dd of="$tmp/src.raw" bs=1 seek=$((0x180000100)) conv=notrunc status=none
printf 'xyz' | dd of="$tmp/src.raw" bs=1 seek=$((0x3fffffff0)) conv=notrunc status=none
printf 'def' | dd of="$tmp/src.raw" conv=notrunc status=none
start_qemu_nbd qemu-src -t -r -f raw "$tmp/src.raw"
copy qemu-nbd "$(uri_of "$tmp/qemu-src.sock")"
copy file "$tmp/src.raw"
