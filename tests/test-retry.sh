#!/bin/bash
# --retry: a copy survives NBD servers that die and come back (the
# destination, the source several times, a destination that loses its
# unflushed writes when it dies, a connection that stops answering), and
# gives up, saying so, on one that stays down.
. "${srcdir:-.}/tests/functions.sh"

requires "$QEMU_IMG"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin file
requires_nbdkit_filter rate
requires_nbdkit_filter cache
requires_nbdkit_filter delay
requires_nbdkit_filter log
requires_nbdkit_filter noparallel
"$NBDCP" --retry=1 --help >/dev/null

size=512M
# The sources are rate-limited to 20 MB/s, so that each copy (155 MB of
# data; the rate filter lets about a second's worth through at once)
# takes eight seconds or more and the kills below land in the middle
# even when the polls that time them are slow: at 50 MB/s, under
# twelve busy loops and a second test suite on the 2 cores, step 2's
# kill once came after the last read and step 3's check after the
# final flush.
# No kill follows a fixed sleep: each waits for the killed server's log
# to show the copy under way (or as far as the test needs), and a
# server comes back once nbdcp has logged that it is reconnecting, so
# the steps hold on a loaded machine where nbdcp may take seconds to
# connect.
# The oracle: the same sparse-random disk, served without a rate limit.
start_nbdkit plain sparse-random $size seed=7 percent=30
plain=$(uri_of "$tmp/plain.sock")

# serve NAME ARGS...: (re)start nbdkit on $tmp/NAME.sock; its pid is in
# pid_NAME.  A server killed with SIGKILL leaves its socket behind;
# start_nbdkit returns once the new one listens.
serve ()
{
  local name=$1
  shift
  rm -f "$tmp/$name.sock"
  start_nbdkit "$name" "$@"
  eval "pid_$name=${_pids[-1]}"
}

# copy_in_background ARGS...: nbdcp ARGS with its stderr in $tmp/err,
# its exit status in $tmp/rc once it ends; its pid in $copy.
copy_in_background ()
{
  # The last copy's log goes too: its lines are not this one's.
  rm -f "$tmp/rc" "$tmp/err"
  (
    r=0
    run_nbdcp "$@" 2>"$tmp/err" || r=$?
    echo $r >"$tmp/rc"
  ) &
  copy=$!
}

# running: the copy is still running (the kill lands in the middle).
running ()
{
  kill -0 $copy 2>/dev/null || { cat "$tmp/err" >&2; fail "$1: nbdcp ended too soon"; }
}

# wait_reconnecting: nbdcp has seen the break and logged its first retry.
wait_reconnecting ()
{
  wait_for_log_line "$tmp/err" "reconnecting in .* \(retry 1 of [0-9]+\)"
}

finished_ok ()
{
  ends_within $copy 120 || fail "$1: nbdcp did not end"
  wait $copy || :
  [ "$(cat "$tmp/rc")" = 0 ] || { cat "$tmp/err" >&2; fail "$1: exit $(cat "$tmp/rc")"; }
  grep -q "reconnecting in .* (retry 1 of [0-9]*)" "$tmp/err" ||
    { cat "$tmp/err" >&2; fail "$1: no retry was logged"; }
}

# 1. The destination is killed mid-copy, once it has had some writes,
# and restarted once nbdcp is reconnecting (a file, so what it had
# flushed persists).
serve src --filter=rate sparse-random $size seed=7 percent=30 rate=160M
src=$(uri_of "$tmp/src.sock")
truncate -s $size "$tmp/d1.img"
serve d1 --filter=log file "$tmp/d1.img" logfile="$tmp/d1.log"
copy_in_background --retry=5 --retry-delay=0.2 --stats=json "$src" \
  "$(uri_of "$tmp/d1.sock")"
wait_for_requests "$tmp/d1.log" 8 'Write|Zero'
running "destination restarted"
kill -9 $pid_d1
wait_reconnecting
serve d1 file "$tmp/d1.img"
finished_ok "destination restarted"
grep -q '"redone_bytes": [1-9]' "$tmp/err" ||
  fail "destination restarted: nothing was copied again"
check_same "$plain" "$tmp/d1.img" "destination restarted"

# 2. The source drops all its connections three times, each time once
# it has answered reads (after a restart: reads on the new connections).
# done_or_reads N: the copy has ended, or the source's log (afresh at
# each restart) shows N reads.
done_or_reads ()
{
  ! kill -0 $copy 2>/dev/null ||
    [ "$(logged_requests "$tmp/s2.log" Read)" -ge "$1" ]
}
"$QEMU_IMG" convert -f raw -O raw "$plain" "$tmp/src.img"
serve s2 --filter=log --filter=rate file "$tmp/src.img" rate=160M \
  logfile="$tmp/s2.log"
truncate -s $size "$tmp/d2.img"
copy_in_background --retry=10 --retry-delay=0.1 "$(uri_of "$tmp/s2.sock")" \
  "$tmp/d2.img"
for i in 1 2 3; do
  wait_until 60 done_or_reads 8 || fail "source restarted: no reads"
  kill -0 $copy 2>/dev/null || break
  kill -9 $pid_s2
  wait_for_exit $pid_s2
  serve s2 --filter=log --filter=rate file "$tmp/src.img" rate=160M \
    logfile="$tmp/s2.log"
done
[ $i -gt 1 ] || fail "source restarted: the copy ended before any kill"
finished_ok "source restarted"
check_same "$plain" "$tmp/d2.img" "source restarted"

# 3. A destination that loses what it has not flushed when it dies (the
# cache filter in writeback mode keeps writes in memory until a flush):
# segments finished before the kill were not flushed yet (the default
# --checkpoint is 1G), so they must be copied again, not just the
# requests that were in flight.  One connection works through the four
# segments in turn: it is killed once it writes in the third (its log,
# in front of the cache, shows a write at 256M or beyond), so two are
# finished and unflushed.
truncate -s $size "$tmp/d3.img"
serve d3 --filter=log --filter=cache file "$tmp/d3.img" cache=writeback \
  logfile="$tmp/d3.log"
copy_in_background -C 1 --retry=5 --retry-delay=0.2 "$src" \
  "$(uri_of "$tmp/d3.sock")"
wait_for_requests "$tmp/d3.log" 1 'Write|Zero' $((256 << 20))
running "writeback destination killed"
[ "$(logged_requests "$tmp/d3.log" Flush)" -eq 0 ] ||
  fail "writeback destination killed: flushed before the kill (proves nothing)"
kill -9 $pid_d3
serve d3 --filter=cache file "$tmp/d3.img" cache=writeback
finished_ok "writeback destination killed"
check_same "$plain" "$tmp/d3.img" "writeback destination killed"

# 4. A destination that stays down (killed once it has had writes):
# three attempts, waiting 0.1, 0.2 and 0.4 s, then exit 1 saying so.
truncate -s $size "$tmp/d4.img"
serve d4 --filter=log file "$tmp/d4.img" logfile="$tmp/d4.log"
copy_in_background --retry=3 --retry-delay=0.1 "$src" \
  "$(uri_of "$tmp/d4.sock")"
wait_for_requests "$tmp/d4.log" 1 'Write|Zero'
running "stays down"
kill -9 $pid_d4
start=$(date +%s%N)
ends_within $copy 20 || fail "stays down: nbdcp did not give up"
wait $copy || :
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
[ "$(cat "$tmp/rc")" = 1 ] || fail "stays down: exit $(cat "$tmp/rc")"
grep -q "^nbdcp: destination connection [0-9]: cannot reconnect: .*(gave up after 3 retries)$" \
  "$tmp/err" || { cat "$tmp/err" >&2; fail "stays down: no 'gave up'"; }
[ "$(grep -c "(retry 3 of 3)" "$tmp/err")" -ge 1 ] ||
  fail "stays down: the third retry was not logged"
# 0.7 s of delays, plus connecting attempts: a tight lower bound, and
# an upper one generous for a loaded machine (a hang ends at 20 s above).
[ $elapsed_ms -ge 700 ] || fail "stays down: gave up after $elapsed_ms ms, before its delays"
[ $elapsed_ms -lt 15000 ] || fail "stays down: gave up after $elapsed_ms ms"

# 5. A connection that stops answering (--timeout) is cut and made
# again; a server that stalls every time makes it give up.  --timeout
# also bounds each handshake: 2 s, so that a handshake slowed by a
# loaded machine is not what times out.
# The server answers one request at a time on each connection
# (noparallel): nbdkit 1.32 may abort when a client drops a connection
# with several requests under way (see restart_nbdkit in
# tests/functions.sh), and the reconnection would be refused.  It
# survives, so the connection is made again and the copy gives up only
# when the new one stalls too.
start_nbdkit slow --filter=noparallel --filter=delay memory $size \
  delay-write=30
expect_fail "destination connection [0-9]: (write|zero) at offset [0-9]+ \
length [0-9]+ failed: no reply in 2.0 seconds \(--timeout\) \(gave up after 1 retry\)$" \
  "$NBDCP" --retry=1 --retry-delay=0.1 --timeout=2 "$plain" \
  "$(uri_of "$tmp/slow.sock")"
grep -q "no reply in 2.0 seconds (--timeout); reconnecting in 0.1 s (retry 1 of 1)" \
  "$tmp/err" || { cat "$tmp/err" >&2; fail "timeout: no retry logged"; }

# 6. Server errors are not retried: a read error ends the copy at once.
start_nbdkit eio --filter=error sparse-random $size seed=7 percent=30 \
  error-pread-rate=1 error-pread=EIO
expect_fail "source read at offset [0-9]+ length [0-9]+ failed: \
Input/output error$" \
  "$NBDCP" --retry=5 "$(uri_of "$tmp/eio.sock")" null:
grep -q "reconnecting" "$tmp/err" && fail "a server error was retried"
exit 0
