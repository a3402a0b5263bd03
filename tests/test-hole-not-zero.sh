#!/bin/bash
# A source extent that is a hole but is not said to read as zero
# (NBD_STATE_HOLE without NBD_STATE_ZERO: a qcow2 hole over a backing
# file, say) is data: it is read and copied.  Only NBD_STATE_ZERO lets
# nbdcp skip reading.  The extents come from nbdkit's extentlist filter
# over a data disk whose bytes are known.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires_nbdkit_filter extentlist
requires_nbdkit_filter log
requires "$QEMU_IMG"

M=$((1024 * 1024))
size=$((8 * M))
# Data in the first MiB, in the "hole" at 1M..3M, and in the last MiB;
# zeroes elsewhere, which the list may truly call zero.
disk="@0 \"first\" @$((1 * M)) ( 0xa5 ) * $((2 * M)) @$((7 * M)) \"last\""
cat >"$tmp/extents" <<EOF
0 1M
1M 2M hole
3M 4M hole,zero
7M 1M
EOF

start_nbdkit src -r --filter=log --filter=extentlist data "$disk" size=$size \
  extentlist="$tmp/extents" logfile="$tmp/src.log"
start_nbdkit dst memory size=$size
# The same bytes with the data plugin's own extents, to compare with:
# qemu takes an NBD hole for zeroes, so it cannot read the source above.
start_nbdkit truth -r data "$disk" size=$size
src=$(uri_of "$tmp/src.sock")
dst=$(uri_of "$tmp/dst.sock")

run_nbdcp "$src" "$dst" || fail "nbdcp failed"
cp "$tmp/src.log" "$tmp/copy.log"
"$QEMU_IMG" compare -f raw -F raw "$(uri_of "$tmp/truth.sock")" "$dst" ||
  fail "a hole that does not read as zero was not copied"
grep -Eq 'extents=\(.*0x100000 0x200000 "hole"' "$tmp/copy.log" ||
  fail "test setup: the source did not report 1M..3M as a hole only: $(grep -m 1 '\.\.\.Extents' "$tmp/copy.log")"
# ... and the copy read it.
awk "$AWK_HEX"'
  $4 == "Read" {
    for (i = 5; i <= NF; i++) {
      if ($i ~ /^offset=/) off = hex(substr($i, 8))
      if ($i ~ /^count=/) cnt = hex(substr($i, 7))
    }
    if (off < 3 * 1048576 && off + cnt > 1048576) got += cnt
  }
  END { exit got < 2 * 1048576 }' "$tmp/copy.log" ||
  fail "the hole at 1M..3M, not known to be zero, was not read in full"
