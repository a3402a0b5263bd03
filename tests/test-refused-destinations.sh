#!/bin/bash
# Destinations that cannot take the copy are refused before anything is
# written: read-only, or smaller than the source.  A larger destination
# is fine (only the source's size is written).
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter log
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

start_nbdkit src -r pattern size=64M
src=$(uri_of "$tmp/src.sock")

start_nbdkit ro -r --filter=log memory size=64M logfile="$tmp/ro.log"
expect_fail '^nbdcp: destination .* is read-only$' \
  "$NBDCP" "$src" "$(uri_of "$tmp/ro.sock")"

start_nbdkit small --filter=log memory size=$((64 * 1024 * 1024 - 512)) \
  logfile="$tmp/small.log"
expect_fail '^nbdcp: destination .*\(67108352 bytes\) is smaller than source .*\(67108864 bytes\)$' \
  "$NBDCP" "$src" "$(uri_of "$tmp/small.sock")"

# Neither got a single write, zero or trim.
if grep -E ' (Write|Zero|Trim) ' "$tmp/ro.log" "$tmp/small.log"; then
  fail "a refused destination was written to"
fi

# Larger: allowed; the source's bytes land at the start (qemu-img
# compares, and finds the rest of the larger disk still zero), and the
# log shows no request beyond the source's size.
start_nbdkit big --filter=log memory size=100M logfile="$tmp/big.log"
run_nbdcp "$src" "$(uri_of "$tmp/big.sock")"
cp "$tmp/big.log" "$tmp/big.copy.log"
check_same "$src" "$(uri_of "$tmp/big.sock")" "64M -> 100M"
grep -Eq ' (Write|Zero) ' "$tmp/big.copy.log" ||
  fail "the larger destination's log shows no write at all"
awk "$AWK_HEX"'
  / (Write|Zero|Trim) / {
    for (i = 1; i <= NF; i++) {
      if ($i ~ /^offset=/) o = hex(substr($i, 8))
      if ($i ~ /^count=/) c = hex(substr($i, 7))
    }
    if (o + c > 64 * 1024 * 1024) { print; bad = 1 }
  }
  END { exit bad }' "$tmp/big.copy.log" ||
  fail "nbdcp wrote beyond the source's size"
