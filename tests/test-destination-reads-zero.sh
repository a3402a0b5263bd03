#!/bin/bash
# Where the destination says it already reads as zero, nbdcp sends no
# zero request; where it holds data, the source's holes and zero blocks
# are still zeroed.  Each copy is compared with the source by qemu-img,
# and the requests the destination got are read from nbdkit's log:
# - a fresh nbdkit memory disk and a fresh qcow2 (through nbdkit's nbd
#   plugin, logged, in front of qemu-nbd): no zero request at all, and
#   only the source's non-zero blocks written;
# - a destination full of old data: every hole of the source zeroed;
# - a destination half data, half holes: zero requests only where it
#   held data, none inside its holes;
# - --allocated onto a new file and onto a fresh memory disk: holes
#   still zeroed, the file fully allocated afterwards;
# - --no-destination-extents: every hole zeroed, as nbdcopy does.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires_nbdkit_plugin file
requires_nbdkit_plugin nbd
requires_nbdkit_filter log
requires "$QEMU_IMG"
requires "$QEMU_NBD"
requires python3

size=$((512 * 1024 * 1024)) # ZERO_BLOCKS_SIZE
start_nbdkit src -r data "$ZERO_BLOCKS_DATA" size=$size
src=$(uri_of "$tmp/src.sock")

# zero_requests LOG: the Zero requests in an nbdkit log, "OFFSET COUNT".
zero_requests ()
{
  awk "$AWK_HEX"'$4 == "Zero" {
      for (i = 5; i <= NF; i++) {
        if ($i ~ /^offset=/) off = hex(substr($i, 8))
        if ($i ~ /^count=/) cnt = hex(substr($i, 7))
      }
      printf "%.0f %.0f\n", off, cnt
    }' "$1"
}

# json FILE FIELD: a number of the --stats=json line in FILE.
json ()
{
  python3 -c 'import json, sys
print([json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][0][sys.argv[2]])' "$1" "$2"
}

# A fresh memory disk: nothing zeroed, only the 16K of non-zero blocks
# written (ZERO_BLOCKS_DATA in functions.sh).
copy_zero_blocks fresh memory size=$size -- -S 4096 --stats=json
zero_requests "$tmp/fresh.copy.log" >"$tmp/fresh.zeroes"
[ ! -s "$tmp/fresh.zeroes" ] ||
  fail "fresh memory disk: zero requests sent: $(head -3 "$tmp/fresh.zeroes")"
[ "$(written_bytes "$tmp/fresh.copy.log")" -eq 16384 ] ||
  fail "fresh memory disk: wrote $(written_bytes "$tmp/fresh.copy.log") bytes, not 16384"

# The same copy with --no-destination-extents: the holes are zeroed (so
# that the check above can fail).
copy_zero_blocks nbdcopy memory size=$size -- -S 4096 --no-destination-extents
[ -n "$(zero_requests "$tmp/nbdcopy.copy.log")" ] ||
  fail "--no-destination-extents: no zero request sent"

# A fresh qcow2 on qemu-nbd, its requests logged by nbdkit's nbd plugin
# in front of it.
"$QEMU_IMG" create -q -f qcow2 "$tmp/new.qcow2" $size
start_qemu_nbd qemu -t -f qcow2 "$tmp/new.qcow2"
start_nbdkit qlog --filter=log nbd socket="$tmp/qemu.sock" \
  logfile="$tmp/qlog.log"
run_nbdcp -S 4096 --stats=json "$src" "$(uri_of "$tmp/qlog.sock")" \
  2>"$tmp/qcow2.stats" || fail "fresh qcow2: the copy failed"
[ -z "$(zero_requests "$tmp/qlog.log")" ] ||
  fail "fresh qcow2: zero requests sent: $(zero_requests "$tmp/qlog.log" | head -3)"
[ "$(json "$tmp/qcow2.stats" zero_bytes)" = 0 ] ||
  fail "fresh qcow2: stats say zeroed: $(cat "$tmp/qcow2.stats")"
[ "$(json "$tmp/qcow2.stats" already_zero_bytes)" -gt $((size - 65536)) ] ||
  fail "fresh qcow2: already_zero_bytes is not the holes: $(cat "$tmp/qcow2.stats")"
stop_servers
start_nbdkit src2 -r data "$ZERO_BLOCKS_DATA" size=$size
src=$(uri_of "$tmp/src2.sock")
check_same -F qcow2 "$src" "$tmp/new.qcow2" "fresh qcow2"

# A destination full of old data: every hole and zero block of the
# source is zeroed (the data plugin's 0xff bytes everywhere).
start_nbdkit old --filter=log memory size=$size logfile="$tmp/old.log"
start_nbdkit ff -r data "0xff*$size" size=$size
run_nbdcp --no-destination-extents "$(uri_of "$tmp/ff.sock")" \
  "$(uri_of "$tmp/old.sock")"
: >"$tmp/old.log"
run_nbdcp -S 4096 "$src" "$(uri_of "$tmp/old.sock")" ||
  fail "old data: the copy failed"
cp "$tmp/old.log" "$tmp/old.copy.log"
check_same "$src" "$(uri_of "$tmp/old.sock")" "old data"
[ -n "$(zero_requests "$tmp/old.copy.log")" ] ||
  fail "old data: no zero request sent"

# Half data, half holes: the first 256 MiB of a file hold 0xff, the rest
# is a hole.  Zero requests only in the first half; the second half,
# reading as zero, gets none.
half=$((size / 2))
python3 -c 'import sys
with open(sys.argv[1], "wb") as f:
    f.truncate(int(sys.argv[3]))
    f.write(b"\xff" * int(sys.argv[2]))' "$tmp/half.img" $half $size
start_nbdkit half --filter=log file "$tmp/half.img" logfile="$tmp/half.log"
run_nbdcp -S 4096 "$src" "$(uri_of "$tmp/half.sock")" ||
  fail "half: the copy failed"
cp "$tmp/half.log" "$tmp/half.copy.log"
check_same "$src" "$tmp/half.img" "half data, half holes"
zero_requests "$tmp/half.copy.log" >"$tmp/half.zeroes"
[ -s "$tmp/half.zeroes" ] || fail "half: no zero request in the data half"
awk -v half=$half '$1 + $2 > half { print; bad = 1 } END { exit bad }' \
  "$tmp/half.zeroes" ||
  fail "half: zero requests inside the destination's holes (above)"

# --allocated onto a new file: every hole zeroed and allocated.
run_nbdcp --allocated "$src" "$tmp/alloc.img"
check_same "$src" "$tmp/alloc.img" "--allocated, new file"
# (Blocks, not SEEK_HOLE: zeroes allocated by fallocate are unwritten
# extents, which SEEK_HOLE may report as a hole.)
[ $(($(stat -c '%b * %B' "$tmp/alloc.img"))) -ge $size ] ||
  fail "--allocated: the new file is not fully allocated: $(stat -c '%b blocks' "$tmp/alloc.img")"
# and onto a fresh memory disk: zero requests still sent.
copy_zero_blocks allocmem memory size=$size -- --allocated
[ -n "$(zero_requests "$tmp/allocmem.copy.log")" ] ||
  fail "--allocated: no zero request onto a fresh memory disk"
