#!/bin/bash
# -p on a terminal redraws one line that reaches 100%; without a
# terminal it prints plain lines, with no control sequences.  With a
# stream source (size unknown) it shows bytes and rate only: no percent,
# no total, no ETA.
. "${srcdir:-.}/tests/functions.sh"
requires script
requires "$QEMU_IMG"
requires_nbdkit_filter delay

start_nbdkit src -r --filter=delay sparse-random size=256M percent=100 \
  rdelay=10ms seed=3
src=$(uri_of "$tmp/src.sock")

# Under a pseudo-terminal (script gives the command one).
script -qfec "$NBDCP -p -C 2 -T 2 -R 2 '$src' null:" "$tmp/typescript" \
  </dev/null >/dev/null
grep -q $'\r' "$tmp/typescript" || fail "no redraw (carriage return) on a terminal"
grep -q '100% 256.0 MiB of 256.0 MiB' "$tmp/typescript" ||
  fail "the bar did not reach 100%"

# Not a terminal: plain lines only.
run_nbdcp -p -C 2 -T 2 -R 2 "$src" null: 2>"$tmp/plain"
grep -q '^100% 256.0 MiB of 256.0 MiB' "$tmp/plain" ||
  fail "no final 100% line without a terminal"
if grep -q $'\r\|\033' "$tmp/plain"; then
  fail "control sequences written when stderr is not a terminal"
fi

# A stream source (slowed down by the delayed source, read through a
# pipe), on a terminal and without one; the copies are checked.
script -qfec "$NBDCP '$src' - | $NBDCP -p - '$tmp/tty.raw'" \
  "$tmp/stream.typescript" </dev/null >/dev/null
tr '\r' '\n' <"$tmp/stream.typescript" | grep -a . >"$tmp/stream.lines" || :
grep -aq '%\|ETA\| of ' "$tmp/stream.lines" &&
  { cat -A "$tmp/stream.lines" >&2; fail "stream on a terminal: percent, total or ETA shown"; }
[ "$(grep -ac $'\033\\[K$' "$tmp/stream.lines")" -ge 2 ] ||
  { cat -A "$tmp/stream.lines" >&2; fail "stream on a terminal: no redrawn line"; }
grep -aEq '^256.0 MiB, [0-9.]+ ([KMGT]iB|bytes)/s in [0-9.]+s' "$tmp/stream.lines" ||
  { cat -A "$tmp/stream.lines" >&2; fail "stream on a terminal: no final line"; }
"$QEMU_IMG" compare -q -f raw -F raw "$src" "$tmp/tty.raw" ||
  fail "stream on a terminal: the copy differs"
run_nbdcp "$src" - | run_nbdcp -p - "$tmp/plain.raw" 2>"$tmp/stream.plain"
# (a line every 10 s, none here unless the machine is very slow, then
# the final one)
unit='[0-9.]+ ([KMGT]iB|bytes)'
grep -Evq "^$unit, $unit/s\$" <(sed '$d' "$tmp/stream.plain") &&
  { cat -A "$tmp/stream.plain" >&2; fail "stream without a terminal: a line is not 'BYTES, RATE'"; }
tail -n 1 "$tmp/stream.plain" | grep -Eq "^256.0 MiB, $unit/s in [0-9.]+s\$" ||
  { cat -A "$tmp/stream.plain" >&2; fail "stream without a terminal: no final line"; }
"$QEMU_IMG" compare -q -f raw -F raw "$src" "$tmp/plain.raw" ||
  fail "stream without a terminal: the copy differs"
