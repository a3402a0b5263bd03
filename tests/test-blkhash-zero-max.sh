#!/bin/bash
# --blkhash onto a destination whose largest request (32K) is below the
# hash block (64K): the zero requests come in pieces of at most 32K
# (unaligned or oversized ones are refused by the server), the checksum
# is blkhash-ref.py's, and the copy matches the source (qemu-img).
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin memory
requires_nbdkit_filter log
requires_nbdkit_filter blocksize-policy
requires "$QEMU_IMG"
requires python3
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"

# 1 MiB of data, then 3 MiB of holes.
head -c $((1024 * 1024)) /dev/urandom >"$tmp/src.raw"
truncate -s $((4 * 1024 * 1024)) "$tmp/src.raw"
want=$(python3 "$ref" sha256 "$tmp/src.raw")
start_nbdkit dst --filter=log --filter=blocksize-policy memory size=4M \
  blocksize-maximum=32768 blocksize-error-policy=error logfile="$tmp/dst.log"

run_nbdcp --blkhash --no-destination-extents "$tmp/src.raw" \
  "$(uri_of "$tmp/dst.sock")" >"$tmp/sum" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "the copy failed"; }
[ "$(cat "$tmp/sum")" = "$want" ] || fail "checksum $(cat "$tmp/sum"), expected $want"
big=$(awk "$AWK_HEX"'$4 == "Zero" {
    for (i = 5; i <= NF; i++) if ($i ~ /^count=/) c = hex(substr($i, 7))
    if (c > 32768) print
  }' "$tmp/dst.log")
[ -z "$big" ] || fail "zero requests over 32K: $big"
grep -q ' Zero ' "$tmp/dst.log" || fail "no zero request: the holes were not zeroed"
check_same "$tmp/src.raw" "$(uri_of "$tmp/dst.sock")" "--blkhash, 32K maximum"
