#!/bin/bash
# -p on a terminal draws nbdcopy's bar: a spinner, the percent in three
# columns and 40 columns of '*' and '-' in brackets, redrawn in place
# with a carriage return (no escape sequences), followed by the rate and
# the time left; it ends with a full block, "100% [****...]", the rate
# and the time taken, and a newline.  The bar's length is the percent
# shown; once every byte is written it says "flushing", and --verify's
# pass has a bar of its own ("verifying", "verified").  On a terminal too narrow for the
# rate, the bar alone.  With a stream source (size unknown) it shows
# bytes and rate only: no percent, no total, no ETA.  The copies are
# checked.  (test-progress-lines.sh checks -p without a terminal.)
. "${srcdir:-.}/tests/functions.sh"
requires script
requires stty
requires "$QEMU_IMG"

export LC_ALL=C

# Copies that take a second or two (functions.sh): the bar is redrawn
# every 200 ms.
start_progress_sources

# run_on_terminal FILE COMMAND: run COMMAND under a pseudo-terminal
# (script gives it one) that passes newlines through as they are
# (stty -onlcr), and leave in FILE what it wrote, exactly.
run_on_terminal ()
{
  local file=$1 command=$2
  script -qfec "stty -onlcr; echo BEGIN; $command; echo \"END \$?\"" \
    "$tmp/typescript" </dev/null >/dev/null
  grep -aq '^END 0$' "$tmp/typescript" || {
    cat -A "$tmp/typescript" >&2
    fail "on a terminal: '$command' failed"
  }
  sed -n '/^BEGIN$/,/^END /{/^BEGIN$/d;/^END /d;p}' "$tmp/typescript" >"$file"
}

# The spinner's characters (UTF-8), and the full block at the end.
spin="($(printf '\xe2\x96\x9d|\xe2\x96\x90|\xe2\x96\x97|\xe2\x96\x83|\xe2\x96\x96|\xe2\x96\x8d|\xe2\x96\x98|\xe2\x96\x80'))"
full=$(printf '\xe2\x96\x88')
rate='[0-9.]+ ([KMGT]iB|bytes)/s'
running="^$spin (  [0-9]| [1-9][0-9])% \[[*-]{40}\]( $rate, ETA [0-9]+:[0-9]{2}| flushing)? *\$"
final="^$full 100% \[\*{40}\] $rate in [0-9.]+s *\$"

run_on_terminal "$tmp/bar" "$NBDCP -p -C 2 -T 2 -R 2 '$src' '$tmp/tty.raw'"
show () { cat -A "$tmp/bar" >&2; }
[ "$(wc -l <"$tmp/bar")" -eq 1 ] && [ "$(tail -c 1 "$tmp/bar" | od -An -c)" = '  \n' ] ||
  { show; fail "the bar is not one line redrawn in place, ended by a newline"; }
if grep -q $'\033' "$tmp/bar"; then
  show
  fail "escape sequences in the bar (nbdcopy's has none)"
fi
tr '\r' '\n' <"$tmp/bar" >"$tmp/draws"
sed '$d' "$tmp/draws" >"$tmp/running"
[ "$(wc -l <"$tmp/running")" -ge 3 ] || { show; fail "the bar was drawn fewer than 3 times"; }
grep -Evq "$running" "$tmp/running" &&
  { show; fail "a redraw is not 'SPINNER NNN% [****----] RATE, ETA M:SS'"; }
tail -n 1 "$tmp/draws" | grep -Eq "$final" ||
  { show; fail "the bar did not end with '$full 100% [****...] RATE in TIME'"; }
[ "$(grep -c '100%' "$tmp/draws")" -eq 1 ] || { show; fail "100% before the end"; }
# The bar is the percent shown, in 40 columns, rounded (22% is 9 stars,
# never a quarter of the bar), short of full until the end; it only
# goes up, and the spinner turns as work completes.
sed -E 's/^[^ ]+ +([0-9]+)% \[(\**)-*\].*/\1 \2/' "$tmp/running" |
  awk '{ stars = length ($2); want = int (($1 * 40 + 50) / 100) }
       want > 39 { want = 39 }
       $1 < last || stars != want { print; bad = 1 }
       { last = $1 } END { exit bad }' ||
  { show; fail "the bar does not match the percent, or went backwards"; }
[ "$(cut -d' ' -f1 "$tmp/running" | sort -u | wc -l)" -ge 2 ] ||
  { show; fail "the spinner did not turn"; }
grep -Ev ' 0 bytes/s' "$tmp/running" | grep -Eq ", ETA " ||
  { show; fail "no rate and ETA after the bar"; }
check_same "$ref" "$tmp/tty.raw" "on a terminal"

# Flushing: a destination whose flush takes 2 s.  Once every byte is
# written the bar says so instead of sitting at 99% with an ETA.
start_nbdkit slowflush eval get_size='echo 4194304' \
  pwrite='cat >/dev/null' can_zero='exit 0' zero='exit 0' \
  can_flush='exit 0' flush='sleep 2'
run_on_terminal "$tmp/flush" \
  "$NBDCP -p -C 1 '$(uri_of "$tmp/small.sock")' '$(uri_of "$tmp/slowflush.sock")'"
tr '\r' '\n' <"$tmp/flush" >"$tmp/flush.draws"
grep -aEq "^$spin +99% \[\*{39}-\] flushing *\$" "$tmp/flush.draws" ||
  { cat -A "$tmp/flush" >&2; fail "a slow flush: the bar never said 'flushing'"; }

# --verify: a second bar, "verifying", then "verified".
run_on_terminal "$tmp/verify" \
  "$NBDCP -p --verify -C 2 '$src' '$tmp/verify.raw'"
tr '\r' '\n' <"$tmp/verify" >"$tmp/verify.draws"
grep -aEq "^$full 100% \[\*{40}\] verified, $rate in [0-9.]+s *\$" \
  "$tmp/verify.draws" ||
  { cat -A "$tmp/verify" >&2; fail "--verify: no 'verified' bar"; }
check_same "$ref" "$tmp/verify.raw" "--verify on a terminal"

# A terminal too narrow for the rate: the bar alone, still one line.
run_on_terminal "$tmp/narrow" \
  "stty cols 60; $NBDCP -p '$(uri_of "$tmp/small.sock")' '$tmp/small.raw'"
tr '\r' '\n' <"$tmp/narrow" | tail -n 1 |
  grep -Eq "^$full 100% \[\*{40}\]\$" ||
  { cat -A "$tmp/narrow" >&2; fail "60 columns: not the bar alone"; }
check_same "$(uri_of "$tmp/small.sock")" "$tmp/small.raw" "60 columns"

# A stream source (slowed down by the delayed source, read through a
# pipe): bytes and rate, redrawn, and a final line.
run_on_terminal "$tmp/stream" \
  "$NBDCP '$(uri_of "$tmp/ssrc.sock")' - | $NBDCP -p - '$tmp/stream.raw'"
tr '\r' '\n' <"$tmp/stream" | grep -a . >"$tmp/stream.lines" || :
grep -aq '%\|ETA\| of ' "$tmp/stream.lines" &&
  { cat -A "$tmp/stream.lines" >&2; fail "stream on a terminal: percent, total or ETA shown"; }
[ "$(grep -ac $'\033\\[K$' "$tmp/stream.lines")" -ge 2 ] ||
  { cat -A "$tmp/stream.lines" >&2; fail "stream on a terminal: no redrawn line"; }
grep -aEq "^16.0 MiB, $rate in [0-9.]+s" "$tmp/stream.lines" ||
  { cat -A "$tmp/stream.lines" >&2; fail "stream on a terminal: no final line"; }
check_same "$(uri_of "$tmp/sref.sock")" "$tmp/stream.raw" "stream on a terminal"
