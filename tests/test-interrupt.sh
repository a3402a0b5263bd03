#!/bin/bash
# SIGINT, SIGTERM, SIGHUP and SIGQUIT during a copy, and before it while
# a subprocess server starts or handshakes, end nbdcp promptly with exit
# 128+signal and "interrupted by signal", leave no subprocess server nor
# socket directory behind, leave an NBD destination (qemu-nbd) serving
# and the destinations half written, for a full copy to complete;
# interrupting a copy stuck on a server that does not answer says which
# request was waiting; a closed output pipe ends nbdcp quietly with exit 1.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter delay
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires_nbdkit_plugin pattern
requires_nbdkit_plugin file
requires "$QEMU_IMG"
requires "$QEMU_NBD"
requires pgrep

# caught PID SIGNAL: PID has a handler for SIGNAL (/proc's SigCgt mask).
caught ()
{
  local mask num
  num=$(kill -l "$2")
  mask=$(awk '/^SigCgt:/ { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$mask" ] && (( (0x$mask >> (num - 1)) & 1 ))
}

# interrupt SIGNAL STATUS NBDCP_ARGS...: start nbdcp in the background,
# send SIGNAL $after seconds after nbdcp is ready for it (it catches
# signals from its start, but on a loaded machine starting can take
# longer than $after) or, if $ready_log is set, $after seconds after
# that nbdkit log shows a request (the request is then known to have
# waited that long), and expect exit STATUS within $end_limit s.  The
# status is what shows that the signal ended the copy (a copy that ran
# to its end exits 0); the bound only catches a hang.  Unloaded nbdcp
# ends within a second.  Twenty seconds were once too few for an ASan
# build interrupted in a [ CMD ] server's handshake, with twelve busy
# loops and a second test suite on the 2 cores (LeakSanitizer scans
# the heap at exit).
end_limit=60
after=0.5
ready_log= ready_file=
caught_or_ended ()
{
  caught "$1" "$2" || ! kill -0 "$1" 2>/dev/null
}
interrupt ()
{
  local sig=$1 status=$2 pid r=0
  shift 2
  "$NBDCP" "$@" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  wait_until 60 caught_or_ended "$pid" "$sig" || :
  if [ -n "$ready_log" ]; then
    wait_for_requests "$ready_log" 1
  fi
  if [ -n "$ready_file" ]; then
    wait_until 60 test -s "$ready_file" || fail "$ready_file never written"
  fi
  sleep "$after"
  kill -0 "$pid" 2>/dev/null || {
    cat "$tmp/err" >&2
    fail "nbdcp ended before SIG$sig was sent: $*"
  }
  kill -"$sig" "$pid"
  ends_within "$pid" $end_limit ||
    fail "nbdcp still running $end_limit s after SIG$sig: $*"
  wait "$pid" || r=$?
  [ "$r" -eq "$status" ] || {
    cat "$tmp/err" >&2
    fail "SIG$sig: expected exit $status, got $r: $*"
  }
  grep -q 'interrupted by signal' "$tmp/err" || {
    cat "$tmp/err" >&2
    fail "SIG$sig: no 'interrupted by signal' message: $*"
  }
  echo "SIG$sig: exit $r: $(grep '^nbdcp:' "$tmp/err")"
}

size=512M

# nbdkit 1.32 may abort when a client goes away while it answers its
# requests, which is what an interrupted nbdcp does (see restart_nbdkit
# in tests/functions.sh): that is nbdkit's bug, so every nbdkit server
# that an interrupted copy used is started afresh for the next step.
# The destination that takes the interrupted copies one after another
# is qemu-nbd, which outlives them (-t: one client after another, -e 8:
# several at once).

# NBD to NBD.  One connection, one request at a time, on a source whose
# reads take 0.1 s: about 50 s for the whole disk.  Its twin without the
# delay serves the same bytes, for qemu-img to compare with.
start_slow_twin src ref 100ms sparse-random size=$size seed=5 percent=100
fresh_src ()
{
  restart_nbdkit src -r --filter=delay sparse-random size=$size seed=5 \
    percent=100 rdelay=100ms
}
truncate -s $size "$tmp/dst.img"
start_qemu_nbd dst -f raw -t -e 8 "$tmp/dst.img"
src=$(uri_of "$tmp/src.sock")
dst=$(uri_of "$tmp/dst.sock")
interrupt INT 130 -C 1 -R 1 "$src" "$dst"
fresh_src
interrupt TERM 143 -C 4 -T 4 -R 1 "$src" "$dst"
fresh_src
interrupt HUP 129 -C 1 -R 1 "$src" "$dst"
# --synchronous itself (the settings it makes, and its own loop).
fresh_src
interrupt INT 130 --synchronous "$src" "$dst"

# fresh_psrc: a new pattern source in $psrc.
psrc=$(uri_of "$tmp/psrc.sock")
fresh_psrc ()
{
  restart_nbdkit psrc -r pattern size=$size
}

# A slow destination (writes take 0.1 s) over a file, which keeps what
# the interrupted copies wrote when the server is started afresh.
truncate -s $size "$tmp/slowdst.img"
fresh_slowdst ()
{
  restart_nbdkit slowdst --filter=delay file "$tmp/slowdst.img" wdelay=100ms
}
slowdst=$(uri_of "$tmp/slowdst.sock")
fresh_slowdst
fresh_psrc
interrupt TERM 143 -C 1 -R 1 "$psrc" "$slowdst"
fresh_slowdst
fresh_psrc
interrupt INT 130 -C 2 -T 2 -R 2 "$psrc" "$slowdst"

# qemu-nbd still serves, and full copies (at full parallelism the delays
# cost under a few seconds) complete the destinations that the
# interrupted copies left half written.
fresh_src
run_nbdcp "$src" "$dst"
check_same "$(uri_of "$tmp/ref.sock")" "$dst" "after the interruptions"
fresh_slowdst
fresh_psrc
run_nbdcp "$psrc" "$slowdst"
check_same "$psrc" "$tmp/slowdst.img" "to the slow destination"

# A destination that has stopped answering (writes take five minutes): the
# message names the request that had waited, and for how long.  The
# signal comes 6 s after the first write reached the server (its log
# is in front of the delay), so the oldest request has waited at least
# that (5 s or more is accepted), however slowly nbdcp started.
requires_nbdkit_filter log
start_nbdkit stuck --filter=log --filter=delay memory size=$size wdelay=300 \
  logfile="$tmp/stuck.log"
after=6 ready_log=$tmp/stuck.log
fresh_psrc
interrupt TERM 143 -C 1 "$psrc" "$(uri_of "$tmp/stuck.sock")"
grep -Eq 'the oldest request, destination write at offset [0-9]+ length [0-9]+, had waited ([5-9]|[1-9][0-9])\.[0-9] s for a reply$' "$tmp/err" ||
  fail "the stuck request is not named: $(cat "$tmp/err")"
after=0.5 ready_log=

# A subprocess source, marked by its pid file path.  nbdcp must end it.
for sig in INT TERM; do
  marker="$tmp/subprocess-$sig.pid"
  case $sig in INT) status=130 ;; TERM) status=143 ;; esac
  interrupt $sig $status -C 1 -R 1 -- \
    [ "$NBDKIT" --pidfile="$marker" -r --filter=delay sparse-random \
      size=$size seed=5 percent=100 rdelay=100ms ] "$dst"
  if pgrep -f -- "$marker" >"$tmp/left"; then
    sleep 1
    if pgrep -af -- "$marker"; then
      fail "SIG$sig: subprocess server still running after nbdcp exited"
    fi
    fail "SIG$sig: subprocess server still running when nbdcp exited (gone 1 s later)"
  fi
done

# A subprocess destination too.
marker="$tmp/subprocess-dst.pid"
fresh_psrc
interrupt TERM 143 -C 1 -R 1 -- "$psrc" \
  [ "$NBDKIT" --pidfile="$marker" --filter=delay memory size=$size \
    wdelay=100ms ]
if pgrep -af -- "$marker"; then
  fail "subprocess destination still running after nbdcp exited"
fi

# SIGQUIT is treated as SIGTERM (no core dump, nothing left behind).
marker="$tmp/subprocess-quit.pid"
interrupt QUIT 131 -C 1 -R 1 -- \
  [ "$NBDKIT" --pidfile="$marker" -r --filter=delay sparse-random \
    size=$size seed=5 percent=100 rdelay=100ms ] "$dst"
if pgrep -af -- "$marker"; then
  fail "SIGQUIT: subprocess server still running after nbdcp exited"
fi

# Signals before the copy starts, while a subprocess server is still
# starting or answering its handshake: nbdcp ends the server and removes
# the directory of its socket (the server writes the socket's path, from
# /proc/net/unix, to sockpath before it starts).  The signal waits for
# sockpath (the server is starting) or for nbdkit's pid file (it
# listens, and delays the handshake), not only for a fixed time: on a
# loaded machine the server may not have run at all after 0.5 s.
sockpath='i=$(stat -L -c %i /proc/self/fd/3);
  awk -v i="$i" "\$7 == i { print \$8 }" /proc/net/unix >"$0"'
check_left ()
{
  local what=$1 dir
  dir=$(dirname "$(cat "$tmp/sockpath")")
  case $dir in /*) ;; *) fail "$what: no socket path recorded" ;; esac
  if pgrep -af -- "$marker"; then
    fail "$what: subprocess server still running after nbdcp exited"
  fi
  [ ! -e "$dir" ] || fail "$what: socket directory $dir left behind"
}
for sig in TERM INT QUIT HUP; do
  case $sig in
    HUP) status=129 ;; INT) status=130 ;; QUIT) status=131 ;; TERM) status=143 ;;
  esac
  # A server slow to start (the shell is the server until it execs) ...
  marker="$tmp/starting-$sig.marker"
  rm -f "$tmp/sockpath"
  ready_file=$tmp/sockpath
  interrupt $sig $status -- \
    [ sh -c "$sockpath; sleep 10; exec nbdkit memory 1G" "$tmp/sockpath" \
      "$marker" ] null:
  check_left "SIG$sig while the server starts"
  # ... and one that is slow to answer the handshake, on the destination
  # side (the source is connected already).
  marker="$tmp/handshake-$sig.pid"
  rm -f "$tmp/sockpath"
  fresh_psrc
  ready_file=$marker
  interrupt $sig $status -- "$psrc" \
    [ sh -c "$sockpath; exec $NBDKIT --pidfile=$marker --filter=delay \
      memory $size delay-open=10" "$tmp/sockpath" ]
  ready_file=
  check_left "SIG$sig during the handshake"
done

# The reader of the output pipe goes away: nbdcp exits 1, no message, no
# signal (SIGPIPE must not kill it).
start_nbdkit big -r pattern size=$size
set +e
timeout --kill-after=10 60 "$NBDCP" "$(uri_of "$tmp/big.sock")" - \
  2>"$tmp/pipe.err" | head -c 1 >"$tmp/pipe.out"
r=${PIPESTATUS[0]}
set -e
[ "$r" -eq 1 ] || { cat "$tmp/pipe.err" >&2; fail "closed pipe: expected exit 1, got $r"; }
[ ! -s "$tmp/pipe.err" ] || { cat "$tmp/pipe.err" >&2; fail "closed pipe: nbdcp printed a message"; }
[ "$(wc -c <"$tmp/pipe.out")" -eq 1 ] || fail "head did not get its byte"

# The same with a subprocess source, which must not be left running.
marker="$tmp/subprocess-pipe.pid"
set +e
timeout --kill-after=10 60 "$NBDCP" -- \
  [ "$NBDKIT" --pidfile="$marker" -r pattern size=$size ] - \
  2>"$tmp/pipe2.err" | head -c 1 >/dev/null
r=${PIPESTATUS[0]}
set -e
[ "$r" -eq 1 ] || { cat "$tmp/pipe2.err" >&2; fail "closed pipe (subprocess): expected exit 1, got $r"; }
[ ! -s "$tmp/pipe2.err" ] || { cat "$tmp/pipe2.err" >&2; fail "closed pipe (subprocess): nbdcp printed a message"; }
if pgrep -af -- "$marker"; then
  fail "closed pipe: subprocess server still running after nbdcp exited"
fi
