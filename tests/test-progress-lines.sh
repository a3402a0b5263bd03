#!/bin/bash
# -p when stderr is not a terminal prints exactly one plain line for
# each 10% step, in order: "10% of SIZE, RATE, ETA M:SS" up to "90% ...",
# then "100% of SIZE, RATE in TIME" once the copy is flushed.  The rate
# is over the whole copy so far, never zero once bytes have moved.  A
# copy that passes several steps between two looks (here: one that ends
# before the first) prints each of them.  No control sequences.  With
# a stream source (size unknown), a "BYTES, RATE" line every 10 seconds
# and a final one.  The copies are checked.  (test-progress-bar.sh
# checks -p on a terminal.)
. "${srcdir:-.}/tests/functions.sh"
requires "$QEMU_IMG"

export LC_ALL=C

# Copies that take a second or two (functions.sh), so that progress is
# looked at several times.
start_progress_sources

unit='[0-9.]+ ([KMGT]iB|bytes)'
# A rate that is not zero: not "0 bytes/s" (nor "0.0 ...").
rate='([1-9][0-9]* bytes|[0-9.]*[1-9][0-9.]* [KMGT]iB)/s'

# check_lines FILE SIZE WHAT: exactly the ten lines, in order.
check_lines ()
{
  local file=$1 size=$2 what=$3 i=0 line
  if grep -q $'\r\|\033' "$file"; then
    cat -A "$file" >&2
    fail "$what: control sequences written when stderr is not a terminal"
  fi
  [ "$(wc -l <"$file")" -eq 10 ] ||
    { cat "$file" >&2; fail "$what: not exactly 10 lines"; }
  while IFS= read -r line; do
    i=$((i + 1))
    if [ $i -lt 10 ]; then
      [[ $line =~ ^$((i * 10))%\ of\ $size,\ $rate,\ ETA\ [0-9]+:[0-9]{2}$ ]] ||
        { cat "$file" >&2; fail "$what: line $i is not '$((i * 10))% of $size, RATE, ETA M:SS'"; }
    else
      [[ $line =~ ^100%\ of\ $size,\ $rate\ in\ [0-9.]+s$ ]] ||
        { cat "$file" >&2; fail "$what: line 10 is not '100% of $size, RATE in TIME'"; }
    fi
  done <"$file"
}

# Each line stamped with the time it was read, so that lines held back
# until the end (a progress stuck at 0%) fail: the slowed copy needs at
# least 0.5 s between 10% and 90% (100 reads delayed 20 ms, 4 at a
# time), and progress is looked at every 200 ms.
stamp ()
{
  local line
  while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done
}
{ run_nbdcp -p -C 2 -T 2 -R 2 "$src" "$tmp/plain.raw" 2>&1 >/dev/null; } |
  stamp >"$tmp/stamped"
cut -d' ' -f2- "$tmp/stamped" >"$tmp/plain"
cat "$tmp/stamped"
check_lines "$tmp/plain" "64.0 MiB" "slowed copy"
awk '/ 10% of / { t10 = $1 } / 90% of / { t90 = $1 }
     END { exit !(t90 - t10 >= 0.1) }' "$tmp/stamped" ||
  fail "slowed copy: the 10% and 90% lines came together, not as the copy went"
check_same "$ref" "$tmp/plain.raw" "slowed copy"

# Over before progress is first looked at (200 ms): every step at the
# end.
small=$(uri_of "$tmp/small.sock")
run_nbdcp -p "$small" "$tmp/small.raw" 2>"$tmp/fast"
check_lines "$tmp/fast" "4.0 MiB" "quick copy"
check_same "$small" "$tmp/small.raw" "quick copy"

# A stream source (slowed down by the delayed source, read through a
# pipe): a line every 10 s (none here unless the machine is very slow),
# then the final one.
run_nbdcp "$(uri_of "$tmp/ssrc.sock")" - |
  run_nbdcp -p - "$tmp/stream.raw" 2>"$tmp/stream"
grep -Evq "^$unit, $unit/s\$" <(sed '$d' "$tmp/stream") &&
  { cat -A "$tmp/stream" >&2; fail "stream: a line is not 'BYTES, RATE'"; }
tail -n 1 "$tmp/stream" | grep -Eq "^16.0 MiB, $unit/s in [0-9.]+s\$" ||
  { cat -A "$tmp/stream" >&2; fail "stream: no final line"; }
check_same "$(uri_of "$tmp/sref.sock")" "$tmp/stream.raw" "stream"
