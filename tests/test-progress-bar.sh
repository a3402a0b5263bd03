#!/bin/bash
# -p on a terminal redraws one line that reaches 100%; without a
# terminal it prints plain lines, with no control sequences.
. "${srcdir:-.}/tests/functions.sh"
requires script
requires_nbdkit_filter delay

start_nbdkit src -r --filter=delay sparse-random size=256M percent=100 \
  rdelay=10ms seed=3
src=$(uri_of "$tmp/src.sock")

# Under a pseudo-terminal (script gives the command one).
script -qfec "$NBDCP -p -C 2 -R 2 '$src' null:" "$tmp/typescript" \
  </dev/null >/dev/null
grep -q $'\r' "$tmp/typescript" || fail "no redraw (carriage return) on a terminal"
grep -q '100% 256.0 MiB of 256.0 MiB' "$tmp/typescript" ||
  fail "the bar did not reach 100%"

# Not a terminal: plain lines only.
run_nbdcp -p -C 2 -R 2 "$src" null: 2>"$tmp/plain"
grep -q '^100% 256.0 MiB of 256.0 MiB' "$tmp/plain" ||
  fail "no final 100% line without a terminal"
if grep -q $'\r\|\033' "$tmp/plain"; then
  fail "control sequences written when stderr is not a terminal"
fi
