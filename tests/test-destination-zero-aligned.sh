#!/bin/bash
# What the destination says reads as zero is shrunk to its minimum
# block before nbdcp relies on it: a destination (4K minimum block,
# unaligned requests refused) that lists its zero extent from byte 5000
# gets the source's zero block at 4K..8K zeroed whole, one aligned
# request, and nothing past 8K; the copy matches the source (qemu-img).
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin memory
requires_nbdkit_filter log
requires_nbdkit_filter blocksize-policy
requires_nbdkit_filter extentlist
requires "$QEMU_IMG"

size=$((1024 * 1024))
# The source: 4K of data, then zeros.
head -c 4096 /dev/urandom >"$tmp/src.raw"
truncate -s $size "$tmp/src.raw"
printf '0 5000\n5000 %d hole,zero\n' $((size - 5000)) >"$tmp/extents"
start_nbdkit dst --filter=log --filter=blocksize-policy --filter=extentlist \
  memory size=$size extentlist="$tmp/extents" \
  blocksize-minimum=4096 blocksize-error-policy=error logfile="$tmp/dst.log"

run_nbdcp -S 4096 "$tmp/src.raw" "$(uri_of "$tmp/dst.sock")" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "the copy failed"; }
zeroes=$(awk "$AWK_HEX"'$4 == "Zero" {
    for (i = 5; i <= NF; i++) {
      if ($i ~ /^offset=/) off = hex(substr($i, 8))
      if ($i ~ /^count=/) cnt = hex(substr($i, 7))
    }
    printf "%.0f %.0f\n", off, cnt
  }' "$tmp/dst.log")
[ "$zeroes" = "4096 4096" ] || fail "zero requests: '$zeroes', not '4096 4096'"
check_same "$tmp/src.raw" "$(uri_of "$tmp/dst.sock")" "aligned destination zero"
