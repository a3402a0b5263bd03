#!/bin/bash
# Destinations that cannot take the copy are refused before anything is
# written: read-only, or smaller than the source.  A larger destination
# is fine (only the source's size is written).
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter log
requires_nbdkit_filter checkwrite

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

# Larger: allowed; the tail beyond the source is left alone.
start_nbdkit big --filter=checkwrite --filter=log pattern size=100M \
  logfile="$tmp/big.log"
run_nbdcp "$src" "$(uri_of "$tmp/big.sock")"
awk '/ (Write|Zero) / {
       for (i = 1; i <= NF; i++) {
         if ($i ~ /^offset=/) o = strtonum (substr ($i, 8))
         if ($i ~ /^count=/) c = strtonum (substr ($i, 7))
       }
       if (o + c > 64 * 1024 * 1024) { print; bad = 1 }
     }
     END { exit bad }' "$tmp/big.log" ||
  fail "nbdcp wrote beyond the source's size"
