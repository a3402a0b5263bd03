#!/bin/bash
# A signal ends a copy at once even while every lane sleeps until a
# time and no connection can be cut to wake it: --rate between local
# files and from a pipe.  With --blkhash (64K blocks) at --rate=1K each
# read waits about a minute for its credit; SIGTERM and SIGINT must end
# nbdcp within seconds (bounded at 10 s here for a loaded machine), with
# 128+signal and "interrupted by signal".  Before the job's stop woke
# every worker, nbdcp slept out the whole wait.  The same for a worker
# that waits on a stream: standard output into a pipe nobody reads,
# standard input from a pipe that sends nothing (a stream's requests
# finish inside the call, in the worker, which once blocked there and
# let no signal end the copy).
. "${srcdir:-.}/tests/functions.sh"

size=$((4 * 1024 * 1024))
head -c $size /dev/urandom >"$tmp/src.raw"

# stop_sleeping SIGNAL STATUS SOURCE: start the copy, wait until it has
# begun (its -v line), signal it, and time its exit.
stop_sleeping ()
{
  local sig=$1 status=$2 src=$3 pid rc=0 t0 ms
  rm -f "$tmp/dst.raw" "$tmp/err"
  if [ "$src" = - ]; then
    "$NBDCP" -v --rate=1K --blkhash - "$tmp/dst.raw" <"$tmp/src.raw" \
      >/dev/null 2>"$tmp/err" &
  else
    "$NBDCP" -v --rate=1K --blkhash "$src" "$tmp/dst.raw" \
      >/dev/null 2>"$tmp/err" &
  fi
  pid=$!
  wait_for_log_line "$tmp/err" '^nbdcp: copying'
  t0=$(date +%s%N)
  kill -"$sig" $pid
  wait_until 10 _gone $pid || {
    kill -KILL $pid
    fail "SIG$sig ($src): nbdcp still running 10 s after the signal"
  }
  wait $pid || rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  echo "SIG$sig, source $src: exit $rc after $ms ms"
  [ $rc -eq "$status" ] || { cat "$tmp/err"; fail "SIG$sig: exit $rc, not $status"; }
  grep -q "interrupted by signal" "$tmp/err" ||
    { cat "$tmp/err"; fail "SIG$sig: no 'interrupted by signal' message"; }
}

stop_sleeping TERM 143 "$tmp/src.raw"
stop_sleeping INT 130 "$tmp/src.raw"
stop_sleeping TERM 143 -

# stop_stream SIGNAL STATUS WHAT: the same, for a copy started by the
# caller into $pid (with -v to $tmp/err) that waits on a stream.
stop_stream ()
{
  local sig=$1 status=$2 what=$3 rc=0
  wait_for_log_line "$tmp/err" '^nbdcp: copying'
  kill -"$sig" $pid
  wait_until 10 _gone $pid || {
    kill -KILL $pid
    fail "SIG$sig ($what): nbdcp still running 10 s after the signal"
  }
  wait $pid || rc=$?
  echo "SIG$sig, $what: exit $rc"
  [ $rc -eq "$status" ] || { cat "$tmp/err"; fail "SIG$sig ($what): exit $rc"; }
  # The signal is what it reports, not a failure of the stream.
  tail -n 1 "$tmp/err" | grep -q '^nbdcp: interrupted by signal' &&
    ! grep -q 'failed' "$tmp/err" ||
    { cat "$tmp/err"; fail "SIG$sig ($what): not only interrupted"; }
}

mkfifo "$tmp/full"
exec 7<>"$tmp/full" # held open, never read: the pipe fills and stays full
rm -f "$tmp/err" # the last run's 'copying' line is not this one's
"$NBDCP" -v "$tmp/src.raw" - >"$tmp/full" 2>"$tmp/err" &
pid=$!
stop_stream INT 130 "stdout to a pipe nobody reads"
exec 7>&-

mkfifo "$tmp/silent"
exec 8<>"$tmp/silent" # a writer that never writes
rm -f "$tmp/err"
"$NBDCP" -v - "$tmp/dst.raw" <"$tmp/silent" 2>"$tmp/err" &
pid=$!
stop_stream TERM 143 "stdin from a pipe that sends nothing"
exec 8>&-
