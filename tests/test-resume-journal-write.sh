#!/bin/bash
# --resume's journal is written by the main thread, off the copy's hot
# path, and a failure to write it fails the copy, naming the journal
# and the step that failed.  A preload library
# (tests/stuck-fdatasync.so) holds the journal's fdatasync until a
# reader opens a FIFO, so that writing the journal blocks for as long
# as the test likes: the copy must still copy and flush every segment
# meanwhile (a worker writing the journal would stop its lane at its
# first checkpoint).  Then a reader opens the FIFO: the fdatasync fails
# (EIO), and the copy must fail with that, leaving the journal as it
# was and no temporary file beside it.
. "${srcdir:-.}/tests/functions.sh"

requires_resume
requires mkfifo
requires_nbdkit_filter error
preload=${STUCK_FDATASYNC:-$PWD/tests/stuck-fdatasync.so}
[ -f "$preload" ] || skip "$preload is not built"
# An AddressSanitizer build wants its runtime loaded first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

size=$((1024 * 1024 * 1024))
start_nbdkit src sparse-random size=$size seed=21 percent=10 runlength=1048576
src=$(uri_of "$tmp/src.sock")
truncate -s $size "$tmp/dst.img"
# Every request fails while $tmp/fail exists.
start_nbdkit dst --filter=log --filter=error file "$tmp/dst.img" \
  logfile="$tmp/dst.log" error-rate=1 error-file="$tmp/fail"
dst=$(uri_of "$tmp/dst.sock")
j=$tmp/copy.journal

# 1. A journal for this copy, listing nothing: a first run whose
# destination fails its first write.
touch "$tmp/fail"
expect_fail "destination .* failed" \
  "$NBDCP" -C 2 --resume="$j" --checkpoint=128M "$src" "$dst"
rm "$tmp/fail"
[ -f "$j" ] || fail "the failed first run left no journal"
cp "$j" "$tmp/saved.journal"
# The failed run left requests in flight on both servers, and nbdkit
# 1.32 may abort then (see restart_nbdkit in tests/functions.sh): both
# start afresh, on the same sockets (the journal names them).
restart_nbdkit src sparse-random size=$size seed=21 percent=10 \
  runlength=1048576
restart_nbdkit dst --filter=log --filter=error file "$tmp/dst.img" \
  logfile="$tmp/dst.log" error-rate=1 error-file="$tmp/fail"

# 2. The same copy again, with the journal's fdatasync held.
: >"$tmp/dst.log"
mkfifo "$tmp/stuck"
LD_PRELOAD=$preload STUCK_FDATASYNC_FIFO=$tmp/stuck \
  timeout 120 "$NBDCP" -C 2 --resume="$j" --checkpoint=128M "$src" "$dst" \
  2>"$tmp/err" &
copy=$!
# stuck_fail MESSAGE: fail, first letting the stuck journal write go on
# (a reader opens the FIFO) so that nbdcp ends now.
stuck_fail ()
{
  timeout 5 cat "$tmp/stuck" >/dev/null 2>&1 || :
  ends_within $copy 20 || :
  fail "$1"
}
# Each lane flushes after each of its segments (8 in all), and once
# more at the end: 10 flushes.
# (60 s at most: a loaded machine only makes the copy slower, and a copy
# stalled by its journal stays stalled.)
flushed_or_ended ()
{
  flushes=$(grep -c '\.\.\.Flush id=[0-9]* return=0' "$tmp/dst.log" || :)
  [ "$flushes" -ge 10 ] || ! kill -0 $copy 2>/dev/null
}
flushes=0
wait_until 60 flushed_or_ended || :
if [ "$flushes" -lt 10 ]; then
  kill -0 $copy 2>/dev/null || { cat "$tmp/err" >&2; fail "nbdcp ended early"; }
  stuck_fail "the copy stalled after $flushes flushes while its journal was being written"
fi
kill -0 $copy 2>/dev/null ||
  fail "nbdcp ended although its journal could not be written"

# 3. A reader lets the journal's write go on; its fdatasync fails.
cat "$tmp/stuck" >"$tmp/fifo.out" &
reader=$!
r=0
wait $copy || r=$?
wait $reader || :
[ $r -eq 1 ] || { cat "$tmp/err" >&2; fail "exit $r, not 1"; }
grep -Eq "^nbdcp: --resume: journal $j: fdatasync of $j\.[A-Za-z0-9]{6} failed: Input/output error$" \
  "$tmp/err" || { cat "$tmp/err" >&2; fail "the failure's message"; }
# What the main thread tried to write: the journal, listing segments.
head -1 "$tmp/fifo.out" | grep -qx "nbdcp journal 2" ||
  fail "the journal's write did not reach the FIFO"
grep -Eq '^done [0-9]' "$tmp/fifo.out" ||
  fail "the journal written lists no segment"
cmp -s "$j" "$tmp/saved.journal" || fail "the journal was replaced"
left=$(cd "$tmp" && ls -d copy.journal?* 2>/dev/null || :)
[ -z "$left" ] || fail "the failed journal write left $left"
# All the data arrived (and every lane flushed it) while the journal
# write was stuck.
check_same "$src" "$tmp/dst.img" "copy with a stuck journal"
exit 0
