#!/bin/bash
# null: as the destination takes everything and throws it away; the
# source is still read in full (its data extents, that is).
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter log

start_nbdkit src -r --filter=log pattern size=100M logfile="$tmp/src.log"
run_nbdcp "$(uri_of "$tmp/src.sock")" null:
read_bytes=$(awk "$AWK_HEX"'
  $4 == "Read" { for (i = 5; i <= NF; i++)
                   if ($i ~ /^count=/) s += hex(substr($i, 7)) }
  END { printf "%.0f\n", s }' "$tmp/src.log")
[ "$read_bytes" -eq $((100 * 1024 * 1024)) ] ||
  fail "read $read_bytes bytes of a 100M source"

# null: cannot be a source.
expect_fail 'null: can only be a destination' "$NBDCP" null: null:
