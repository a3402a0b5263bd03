#!/bin/bash
# --resume: a copy interrupted half way is finished by running the same
# command again, which copies only what the first run had not finished
# and flushed; the journal is then removed.  A journal of another copy
# is refused before anything is written, and so is the journal named as
# the destination.
. "${srcdir:-.}/tests/functions.sh"

requires_resume
requires_nbdkit_filter rate

size=$((1024 * 1024 * 1024))
seg=$((128 * 1024 * 1024))
start_nbdkit plain sparse-random $size seed=11 percent=40
plain=$(uri_of "$tmp/plain.sock")
# The source the copies read: the same disk, slowly (about 100 MB/s);
# writing a rate into $tmp/rate slows it down further.
start_nbdkit src --filter=rate sparse-random $size seed=11 percent=40 \
  rate=800M rate-file="$tmp/rate"
src=$(uri_of "$tmp/src.sock")
truncate -s $size "$tmp/dst.img"
start_nbdkit dst --filter=log file "$tmp/dst.img" logfile="$tmp/dst.log"
dst=$(uri_of "$tmp/dst.sock")
j=$tmp/copy.journal

# segments_done: how many segments the journal lists as done.
segments_done ()
{
  sed -n 's/^done //p' "$j" 2>/dev/null | tr ',' '\n' |
    awk -F- 'NF == 1 && $1 != "" { n++ } NF == 2 { n += $2 - $1 + 1 }
             END { print n + 0 }'
}

# 1. Interrupted once more than half the segments are done (each lane
# flushes after every segment with --checkpoint=128M).  The source is
# then slowed to a trickle before the signal, so that on a loaded
# machine, where the signal may come late, the copy does not finish
# meanwhile (it could, at 0.5 s a segment).
r=0
timeout 120 "$NBDCP" -C 2 -T 2 --resume="$j" --checkpoint=128M "$src" "$dst" \
  2>"$tmp/err1" &
copy=$!
five_done ()
{
  [ "$(segments_done)" -ge 5 ] || ! kill -0 $copy 2>/dev/null
}
wait_until 60 five_done || :
echo 8K >"$tmp/rate.new"
mv "$tmp/rate.new" "$tmp/rate"
kill -INT $copy 2>/dev/null || :
wait $copy || r=$?
[ $r -eq 130 ] || { cat "$tmp/err1" >&2; fail "interrupted run: exit $r"; }
[ -f "$j" ] || fail "no journal after the interrupted run"
done1=$(segments_done)
echo "interrupted with $done1 segments done"
[ "$done1" -ge 5 ] && [ "$done1" -lt 8 ] ||
  fail "interrupted run: $done1 segments done (expected 5 to 7)"
head -1 "$j" | grep -qx "nbdcp journal 2" || fail "journal: bad first line"
cp "$j" "$tmp/saved.journal"
# nbdkit 1.32 may abort when a client drops while it answers requests
# (see restart_nbdkit in tests/functions.sh): serve the source and the
# destination afresh, on the same sockets (the journal names them).
rm -f "$tmp/rate"
restart_nbdkit src --filter=rate sparse-random $size seed=11 percent=40 \
  rate=800M
restart_nbdkit dst --filter=log file "$tmp/dst.img" logfile="$tmp/dst.log"

# 2. The same command again finishes the copy, reading and writing only
# the segments that were not done.
: >"$tmp/dst.log"
run_nbdcp -C 2 -T 2 --resume="$j" --checkpoint=128M --stats=json "$src" "$dst" \
  2>"$tmp/err2" || { cat "$tmp/err2" >&2; fail "resumed run failed"; }
[ ! -e "$j" ] || fail "the journal was not removed after success"
check_same "$plain" "$tmp/dst.img" "resumed copy"
resumed=$(sed -n 's/.*"resumed_bytes": \([0-9]*\).*/\1/p' "$tmp/err2")
[ "$resumed" -eq $((done1 * seg)) ] ||
  fail "resumed $resumed bytes, expected $((done1 * seg)) ($done1 segments)"
[ "$resumed" -gt $((size / 2)) ] || fail "the second run did half or more"
# The destination saw no request in the done segments.
"$QEMU_IMG" info "$tmp/dst.img" >/dev/null
awk "$AWK_HEX"'$4 == "Write" || $4 == "Zero" || $4 == "Trim" {
    for (i = 5; i <= NF; i++) if ($i ~ /^offset=/) print hex(substr($i, 8))
  }' "$tmp/dst.log" | awk -v seg=$seg '{ print int($1 / seg) }' | sort -un \
  >"$tmp/written-segments"
sed -n 's/^done //p' "$tmp/saved.journal" | tr ',' '\n' |
  awk -F- 'NF == 1 { print $1 } NF == 2 { for (i = $1; i <= $2; i++) print i }' \
  >"$tmp/done-segments"
if [ -n "$(comm -12 "$tmp/written-segments" "$tmp/done-segments")" ]; then
  fail "the resumed run wrote to segments the first run had done"
fi

# 3. A journal of another copy is refused before anything is written:
# the source (on the same socket) now has another size; another source.
restart_nbdkit src sparse-random $((size / 2)) seed=11 percent=40
cp "$tmp/saved.journal" "$j"
: >"$tmp/dst.log"
expect_fail "^nbdcp: --resume: .* is the journal of another copy: it says \
'size $size' where this copy has 'size $((size / 2))'" \
  "$NBDCP" --resume="$j" "$src" "$dst"
expect_fail "is the journal of another copy: it says 'source nbd\+unix" \
  "$NBDCP" --resume="$j" "$plain" "$dst"
if grep -Eq ' (Write|Zero|Trim) ' "$tmp/dst.log"; then
  fail "a refused journal still let the copy write"
fi
cmp -s "$j" "$tmp/saved.journal" || fail "a refused journal was changed"

# A damaged journal is refused too, saying what it holds: another
# line, an empty one, or nothing where a line was due.
printf 'nbdcp journal 2\nsomething else\n' >"$tmp/bad.journal"
expect_fail "is the journal of another copy: it says 'something else' where this copy has 'source " \
  "$NBDCP" --resume="$tmp/bad.journal" "$src" "$dst"
printf 'nbdcp journal 2\n\nsomething else\n' >"$tmp/bad.journal"
expect_fail "is the journal of another copy: it says '' where this copy has 'source " \
  "$NBDCP" --resume="$tmp/bad.journal" "$src" "$dst"
printf 'nbdcp journal 2\n' >"$tmp/bad.journal"
expect_fail "is the journal of another copy: it says '\(nothing\)' where this copy has 'source " \
  "$NBDCP" --resume="$tmp/bad.journal" "$src" "$dst"

# 4. Combinations that cannot be resumed are refused up front.
expect_fail "^nbdcp: --resume cannot be combined with --blkhash" \
  "$NBDCP" --resume="$tmp/x" --blkhash "$src" null:
expect_fail "^nbdcp: --resume: a copy from or to a stream cannot be resumed" \
  "$NBDCP" --resume="$tmp/x" - "$tmp/out.img" </dev/null
[ ! -e "$tmp/x" ] || fail "a refused --resume left a journal"

# The journal named as the destination is refused, exit 1, nothing
# written: an existing destination is not a journal, and a new one
# exists once the journal is made (which is then removed).
head -c 1M /dev/urandom >"$tmp/jd.src"
cp "$tmp/jd.src" "$tmp/jd.dst"
truncate -s 2M "$tmp/jd.dst"
cp "$tmp/jd.dst" "$tmp/jd.before"
expect_fail "^nbdcp: --resume: $tmp/jd\.dst is not an nbdcp journal$" \
  "$NBDCP" --resume="$tmp/jd.dst" "$tmp/jd.src" "$tmp/jd.dst"
cmp "$tmp/jd.before" "$tmp/jd.dst" || fail "the journal-destination was changed"
expect_fail "^nbdcp: $tmp/jd\.new: File exists$" \
  "$NBDCP" --resume="$tmp/jd.new" "$tmp/jd.src" "$tmp/jd.new"
[ ! -e "$tmp/jd.new" ] || fail "a new journal-destination was left behind"
exit 0
