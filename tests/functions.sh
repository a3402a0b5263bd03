# Shared helpers for nbdcp's shell tests.  Source it first:
#   . "${srcdir:-.}/tests/functions.sh"
# Each test gets a private temporary directory ($tmp) and every server
# it starts is killed when the test exits, however it exits.

set -e
set -o pipefail

: "${NBDCP:=$PWD/copy/nbdcp}"
: "${NBDKIT:=nbdkit}"
: "${QEMU_NBD:=qemu-nbd}"
: "${QEMU_IMG:=qemu-img}"
: "${PYTHON:=python3}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nbdcp-test.XXXXXX")
_pids=()
# The servers the helpers started: the name of each pid, the last pid
# of each name, and the names of those that died of SIGABRT.
declare -A _server_name=() _server_pid=() _server_aborted=()

_track_server ()
{
  _server_name[$1]=$2
  _server_pid[$2]=$1
}

# _reap PID: wait for server PID, a child that was sent SIGTERM, and
# note it if it had died of SIGABRT (exit status 134).
_reap ()
{
  local r=0
  wait "$1" 2>/dev/null || r=$?
  if [ "$r" -eq 134 ] && [ -n "${_server_name[$1]:-}" ]; then
    _server_aborted[${_server_name[$1]}]=1
  fi
}

# Stop every server started so far (qemu-nbd may already have exited
# when its last client left), so that image files are closed.
stop_servers ()
{
  local pid
  for pid in "${_pids[@]}"; do
    kill "$pid" 2>/dev/null || :
  done
  for pid in "${_pids[@]}"; do
    _reap "$pid"
  done
  _pids=()
}

# _report_aborted_servers: a note on stderr for each server that
# aborted (an assertion's message in its $tmp/NAME.err, or SIGABRT),
# so that the log of a test that failed because a step used such a
# server again ("Connection refused") says why; see restart_nbdkit.
# Only a note: a server that aborted when no later step needed it
# harmed nothing.
_report_aborted_servers ()
{
  local name line
  for name in "${!_server_pid[@]}"; do
    line=$(grep -m 1 "Assertion \`.*' failed" "$tmp/$name.err" 2>/dev/null) ||
      line=
    [ -n "$line" ] || [ -n "${_server_aborted[$name]:-}" ] || continue
    echo "note: server $name aborted (${line:-SIGABRT}); any later use" \
      "of it found nothing listening (see restart_nbdkit)" >&2
  done
}

_cleanup ()
{
  stop_servers
  _report_aborted_servers
  rm -rf "$tmp"
}
trap _cleanup EXIT

skip ()
{
  echo "SKIP: $*"
  exit 77
}

fail ()
{
  echo "FAIL: $*" >&2
  exit 1
}

requires ()
{
  command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed"
}

requires_nbdkit_plugin ()
{
  requires "$NBDKIT"
  "$NBDKIT" "$1" --dump-plugin >/dev/null 2>&1 ||
    skip "nbdkit plugin $1 is not installed"
}

requires_nbdkit_filter ()
{
  requires "$NBDKIT"
  "$NBDKIT" --filter="$1" null --dump-plugin >/dev/null 2>&1 ||
    skip "nbdkit filter $1 is not installed"
}

# requires_resume: what the --resume tests need: qemu-img, nbdkit's
# sparse-random and file plugins and its log filter, and an nbdcp that
# takes --resume (the test fails, rather than skips, if it does not).
requires_resume ()
{
  requires "$QEMU_IMG"
  requires_nbdkit_plugin sparse-random
  requires_nbdkit_plugin file
  requires_nbdkit_filter log
  "$NBDCP" --resume=x --help >/dev/null
}

uri_of ()
{
  echo "nbd+unix:///?socket=$1"
}

# wait_until SECONDS CMD ARGS...: run CMD every 50 ms until it succeeds;
# return 1 if it has not within SECONDS (a bound for a loaded machine,
# not a guess of how long the event takes).
wait_until ()
{
  local seconds=$1 end
  shift
  end=$(($(date +%s%N) + seconds * 1000000000))
  until "$@"; do
    [ "$(date +%s%N)" -lt "$end" ] || { "$@" && return 0; return 1; }
    sleep 0.05
  done
}

# direct_dir: set dir to a directory where O_DIRECT works: $tmp, else
# /var/tmp, else the build directory (a directory of its own there,
# removed at exit), or skip the test.  tmpfs is avoided: even where it
# takes O_DIRECT it is all page cache, so nothing could be told from it.
direct_dir ()
{
  local d
  dir=
  for d in "$tmp" /var/tmp "$PWD"; do
    [ -d "$d" ] && [ -w "$d" ] || continue
    [ "$(stat -f -c %T "$d")" != tmpfs ] || continue
    if dd if=/dev/zero of="$d/.nbdcp-direct-probe.$$" bs=4096 count=1 \
         oflag=direct status=none 2>/dev/null; then
      rm -f "$d/.nbdcp-direct-probe.$$"
      dir=$d
      break
    fi
    rm -f "$d/.nbdcp-direct-probe.$$"
  done
  [ -n "$dir" ] || skip "no directory here (tried $tmp, /var/tmp, $PWD) takes O_DIRECT"
  if [ "$dir" != "$tmp" ]; then
    dir=$(mktemp -d "$dir/nbdcp-direct.XXXXXX")
    trap 'rm -rf "$dir"; _cleanup' EXIT
  fi
}

# _in_poll_wait PID TIMEOUT_MS: PID has one thread left, in poll
# (x86_64's 7, or 219 when the kernel restarts it) of one descriptor
# for TIMEOUT_MS, as /proc shows it.
_in_poll_wait ()
{
  local nr nfds timeout
  [ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -eq 1 ] || return 1
  read -r nr _ nfds timeout _ <"/proc/$1/syscall" 2>/dev/null || return 1
  { [ "$nr" = 7 ] || [ "$nr" = 219 ]; } && [ "$nfds" = 0x1 ] &&
    [ "$timeout" = "$(printf 0x%x "$2")" ]
}

# signal_in_poll_wait TIMEOUT_MS TRIES CMD...: run CMD (stderr to
# $tmp/err) until it is caught in a wait of TIMEOUT_MS on one
# descriptor (_in_poll_wait) with nothing else left running, at most
# TRIES times, and send it SIGTERM there.  Sets caught (yes, or empty
# when every try missed the wait), and when caught: rc (CMD's exit
# status), took (seconds from the signal to the exit) and attempt.
# caught=unsupported where /proc cannot show the wait (not x86_64).
signal_in_poll_wait ()
{
  local timeout_ms=$1 tries=$2 pid start
  shift 2
  caught=unsupported
  [ "$(uname -m)" = x86_64 ] && [ -r /proc/self/syscall ] || return 0
  caught=
  for attempt in $(seq 1 "$tries"); do
    "$@" 2>"$tmp/err" &
    pid=$!
    until _in_poll_wait $pid "$timeout_ms" || ! kill -0 $pid 2>/dev/null; do :; done
    if _in_poll_wait $pid "$timeout_ms"; then
      start=$EPOCHREALTIME
      kill -TERM $pid
      rc=0
      wait $pid || rc=$?
      took=$(python3 -c 'import sys; print("%.3f" % (float(sys.argv[2]) - float(sys.argv[1])))' \
        "$start" "$EPOCHREALTIME")
      caught=yes
      return 0
    fi
    wait $pid || :
  done
}

# _umount_once DIR: DIR is no mount point any more, or one umount of
# it was tried (and refused) now.
_umount_once ()
{
  mountpoint -q "$1" || return 0
  umount "$1" 2>/dev/null
  ! mountpoint -q "$1"
}
# unmount DIR: every file system mounted at DIR is gone.  A process
# that has exited may still hold the file system busy for a moment:
# the kernel closes files an io_uring ring used after the process has
# gone (nbdcp lets its own requests finish first, but a server may
# not).  An umount refused then, and ignored, can leave a second file
# system mounted over the first.  So wait (10 s at most), then detach
# lazily.
unmount ()
{
  wait_until 10 _umount_once "$1" || umount -l "$1" || :
  while mountpoint -q "$1"; do
    umount -l "$1" || return 1
  done
}
# include_closure FILE: the headers FILE includes with quotes (copy/ or
# lib/ of the source tree), and theirs, each once, as the keys of
# included_by; each one's value is the file that includes it.  For the
# tests that check the layering of the source.
declare -A included_by
include_closure ()
{
  included_by=()
  _include_closure "$1"
}
_include_closure ()
{
  local h
  for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$1"); do
    [ -n "${included_by[$h]:-}" ] && continue
    included_by[$h]=$1
    if [ -f "$srcdir/copy/$h" ]; then
      _include_closure "$srcdir/copy/$h"
    elif [ -f "$srcdir/lib/$h" ]; then
      _include_closure "$srcdir/lib/$h"
    fi
  done
}

# includes_none WHY FILE HEADER...: FILE includes none of the HEADERs,
# not even through another header (include_closure); each one it does
# is said on stderr, with WHY, and then it returns 1.
includes_none ()
{
  local why=$1 f=$2 h r=0
  shift 2
  include_closure "$f"
  for h in "$@"; do
    [ -n "${included_by[$h]:-}" ] || continue
    echo "layering: ${f#$srcdir/} includes $h" \
         "(through ${included_by[$h]#$srcdir/}): $why" >&2
    r=1
  done
  return $r
}

# symbols_defined LABEL OBJECT: "SYMBOL LABEL" for each global symbol
# OBJECT defines.  symbols_used_from OBJECT DEFINED: the lines of
# DEFINED (symbols_defined's, sorted) whose symbol OBJECT uses.  For
# the tests that check the layering of the objects (nm).
symbols_defined ()
{
  nm --defined-only -g "$2" | awk -v f="$1" 'NF == 3 { print $3, f }'
}
symbols_used_from ()
{
  nm -u "$1" | awk '{ print $NF }' | sort | join - "$2"
}

# Wait (60 s at most) until Unix socket $1 exists.  start_nbdkit also
# waits for the server's pid file, which nbdkit writes once it listens.
wait_for_socket ()
{
  wait_until 60 test -S "$1" || fail "server socket $1 did not appear"
}

# wait_for_log_line FILE PATTERN [SECONDS]: wait (60 s by default) until
# a line of FILE matches PATTERN (grep -E): a server's log, nbdcp's -v
# output or its progress lines.  Fails the test, naming FILE, if none
# does in time.
wait_for_log_line ()
{
  wait_until "${3:-60}" grep -Eq -- "$2" "$1" 2>/dev/null ||
    fail "no line matching '$2' in $1 after ${3:-60} s"
}

# logged_requests LOG [KINDS [FROM]]: how many requests of KINDS (an
# ERE of names, by default any: Read|Write|Zero|Trim|Flush|Extents|Cache)
# at offset FROM (decimal) or beyond nbdkit's log filter wrote to LOG as
# they arrived (so those still in flight count; their replies do not).
logged_requests ()
{
  [ -f "$1" ] || { echo 0; return; }
  awk "$AWK_HEX"'
    $4 ~ "^(" kinds ")$" {
      off = 0
      for (i = 5; i <= NF; i++)
        if ($i ~ /^offset=/) off = hex(substr($i, 8))
      if (off >= from) n++
    }
    END { print n + 0 }' kinds="${2:-$_REQUEST_KINDS}" from="${3:-0}" "$1"
}

_REQUEST_KINDS='Read|Write|Zero|Trim|Flush|Extents|Cache'

# wait_for_requests LOG N [KINDS [FROM [SECONDS]]]: wait (60 s by
# default) until logged_requests LOG KINDS FROM is N or more: a server
# has been sent N requests, so a copy is under way (or has got as far
# as FROM) whatever the machine's load.  Fails the test if not in time.
wait_for_requests ()
{
  local log=$1 n=$2 kinds=${3:-$_REQUEST_KINDS} from=${4:-0} seconds=${5:-60}
  wait_until "$seconds" _requests_at_least "$log" "$n" "$kinds" "$from" ||
    fail "$log: fewer than $n $kinds requests from offset $from after $seconds s"
}

_requests_at_least ()
{
  [ "$(logged_requests "$1" "$3" "$4")" -ge "$2" ]
}

# wait_for_exit PID [SECONDS]: wait (60 s by default) until process PID,
# a child of this shell or not (a server killed with SIGKILL), is gone.
wait_for_exit ()
{
  wait_until "${2:-60}" _gone "$1" || fail "process $1 did not end"
}

_gone ()
{
  ! kill -0 "$1" 2>/dev/null
}

# start_nbdkit NAME ARGS...: start nbdkit on socket $tmp/NAME.sock in the
# foreground (killed at exit).  Sets $uri_NAME... use: uri_of $tmp/NAME.sock
start_nbdkit ()
{
  local name=$1
  shift
  rm -f "$tmp/$name.pid"
  "$NBDKIT" -f --exit-with-parent -U "$tmp/$name.sock" \
    -P "$tmp/$name.pid" "$@" 2>>"$tmp/$name.err" &
  _pids+=($!)
  _track_server $! "$name"
  # nbdkit writes its pid file after listen(2): the socket file alone
  # appears at bind(2), when a connection would still be refused.
  wait_until 60 _server_listening $! "$tmp/$name" ||
    fail "nbdkit $name is not listening on $tmp/$name.sock after 60 s"
}

# _server_listening PID BASE: server PID (nbdkit or qemu-nbd) listens
# on BASE.sock (its pid file BASE.pid is written); fails the test at
# once if it has died.
_server_listening ()
{
  [ -S "$2.sock" ] && [ -s "$2.pid" ] && return 0
  kill -0 "$1" 2>/dev/null || {
    cat "$2.err" >&2
    fail "server ${2##*/} died before it listened on $2.sock"
  }
  return 1
}

# restart_nbdkit NAME ARGS...: end the server started as NAME (if it
# still runs) and start nbdkit ARGS afresh on the same socket
# $tmp/NAME.sock, so that its URI (which a --resume journal names)
# stays.  nbdkit 1.32 aborts (SIGABRT: "raw_send_socket: Assertion
# `sock >= 0' failed") when a client goes away while it answers several
# of its requests on one connection, which nbdcp does when it is
# interrupted, killed, times out or fails with requests in flight: a
# case after such a copy must not use its nbdkit servers again.  Start
# them afresh with this, or serve the disk with qemu-nbd (-t, and -e N
# for N connections), which outlives such clients; within one copy
# (--retry reconnecting to a server it cut off), nbdkit's noparallel
# filter makes it answer one request at a time, and it survives too.
restart_nbdkit ()
{
  local name=$1 pid=${_server_pid[$1]:-}
  shift
  if [ -n "$pid" ]; then
    kill "$pid" 2>/dev/null || :
    _reap "$pid"
    wait_for_exit "$pid"
  fi
  rm -f "$tmp/$name.sock"
  start_nbdkit "$name" "$@"
}

# nbdkit_on_port NAME PORT ARGS...: nbdkit on 127.0.0.1:PORT, killed
# when the test ends, its stderr in $tmp/NAME.err.  Returns once it
# listens (it writes its pidfile then), or 1 if it exited (the port is
# taken).
nbdkit_on_port ()
{
  local name=$1 port=$2 j
  shift 2
  rm -f "$tmp/$name.pid"
  "$NBDKIT" -f --exit-with-parent -i 127.0.0.1 -p "$port" \
    -P "$tmp/$name.pid" "$@" 2>>"$tmp/$name.err" &
  _pids+=($!)
  _track_server $! "$name"
  for j in $(seq 1 600); do
    [ -s "$tmp/$name.pid" ] && return 0
    kill -0 "${_pids[-1]}" 2>/dev/null || return 1
    sleep 0.05
  done
  fail "nbdkit $name did not start on port $port"
}

# start_nbdkit_tcp NAME ARGS...: nbdkit on a free TCP port of
# 127.0.0.1 (ports are tried at random until one is free); the port is
# in port_NAME.
start_nbdkit_tcp ()
{
  local name=$1 port i
  shift
  for i in $(seq 1 20); do
    port=$((20000 + RANDOM % 20000))
    if nbdkit_on_port "$name" $port "$@"; then
      eval "port_$name=$port"
      return 0
    fi
  done
  tail -5 "$tmp/$name.err" >&2
  fail "cannot start nbdkit $name on a TCP port"
}

# start_fault_proxy NAME UPSTREAM [--fault N:DIR:ACTION:BYTES]...:
# tests/fault-proxy.py on $tmp/NAME.sock, forwarding to UPSTREAM
# (unix:PATH or tcp:HOST:PORT) and breaking the connections the faults
# name; killed when the test ends, its log in $tmp/NAME.log.  Returns
# once it listens.
start_fault_proxy ()
{
  local name=$1 upstream=$2
  shift 2
  requires python3
  python3 "${srcdir:-.}/tests/fault-proxy.py" --listen "unix:$tmp/$name.sock" \
    --upstream "$upstream" --log "$tmp/$name.log" "$@" \
    2>>"$tmp/$name.err" &
  _pids+=($!)
  _track_server $! "$name"
  wait_for_line "$tmp/$name.log" '^listening on ' 30 ||
    { cat "$tmp/$name.err" >&2; fail "fault proxy $name did not start"; }
}

# wait_for_line FILE PATTERN SECONDS: wait until a line of FILE matches
# the extended regular expression PATTERN; 1 if none did in time.
wait_for_line ()
{
  local i
  for i in $(seq 1 $(($3 * 20))); do
    grep -Eq -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  return 1
}

# start_qemu_nbd NAME ARGS...: the same for qemu-nbd.
start_qemu_nbd ()
{
  local name=$1
  shift
  rm -f "$tmp/$name.pid"
  "$QEMU_NBD" -k "$tmp/$name.sock" --pid-file "$tmp/$name.pid" "$@" \
    2>>"$tmp/$name.err" &
  _pids+=($!)
  _track_server $! "$name"
  # Like nbdkit, qemu-nbd writes its pid file after listen(2).
  wait_until 60 _server_listening $! "$tmp/$name" ||
    fail "qemu-nbd $name is not listening on $tmp/$name.sock after 60 s"
}

# start_bad_server NAME MODE [ARGS...]: tests/bad-nbd-server.py, an NBD
# server that breaks the protocol in the way MODE says (see
# tests/README.md), on $tmp/NAME.sock, killed at exit (it also dies
# with this shell); its stderr goes to $tmp/NAME.err.  ARGS: --size=N,
# --file=PATH, --delay=SECONDS.  Needs python3 (requires "$PYTHON").
start_bad_server ()
{
  local name=$1 mode=$2
  shift 2
  "$PYTHON" "${srcdir:-.}/tests/bad-nbd-server.py" --mode="$mode" "$@" \
    "$tmp/$name.sock" 2>>"$tmp/$name.err" &
  _pids+=($!)
  _track_server $! "$name"
  wait_for_socket "$tmp/$name.sock"
}

# run_nbdcp ARGS...: nbdcp with a time limit, so no test can hang.
run_nbdcp ()
{
  timeout --kill-after=10 120 "$NBDCP" "$@"
}

# check_same [-F FORMAT] SRC DST [WHAT]: SRC and DST (files, block
# devices or NBD URIs; DST in FORMAT, raw by default) hold the same
# bytes, as qemu-img reads them: a reader independent of nbdcp, so a
# copy that lost a range, the last request or a zero run fails here.
# If DST is larger, its extra bytes must read as zero.  Tests that call
# it must `requires "$QEMU_IMG"`.
check_same ()
{
  local fmt=raw src dst what
  if [ "$1" = -F ]; then
    fmt=$2
    shift 2
  fi
  src=$1 dst=$2 what=${3:-"$1 -> $2"}
  command -v "$QEMU_IMG" >/dev/null 2>&1 ||
    fail "check_same needs $QEMU_IMG (the test must 'requires \"\$QEMU_IMG\"')"
  if ! timeout --kill-after=10 120 "$QEMU_IMG" compare -f raw -F "$fmt" \
         "$src" "$dst" >"$tmp/check_same.out" 2>&1; then
    cat "$tmp/check_same.out" >&2
    fail "$what: the destination differs from the source (qemu-img compare)"
  fi
}

# copy_checked WHAT SRC DST NBDCP-ARGS...: copy SRC to DST with nbdcp
# NBDCP-ARGS (which must succeed), then check_same SRC DST: the usual
# copy of a data test, its oracle included.
copy_checked ()
{
  local what=$1 src=$2 dst=$3
  shift 3
  run_nbdcp "$@" "$src" "$dst" || fail "$what: nbdcp $* failed"
  check_same "$src" "$dst" "$what"
}

# copy_logged NAME SOURCE-ARGS... -- DESTINATION-ARGS... -- NBDCP-ARGS...:
# serve a source with nbdkit SOURCE-ARGS on $tmp/NAME-src.sock and a
# destination with nbdkit --filter=log DESTINATION-ARGS on
# $tmp/NAME.sock, logging to $tmp/NAME.log; copy_checked between them.
# The copy's log is kept as $tmp/NAME.copy.log, before qemu-img's
# requests join it, for the test to read what nbdcp sent.
copy_logged ()
{
  local name=$1 source=() destination=()
  shift
  while [ "$1" != -- ]; do source+=("$1"); shift; done
  shift
  while [ "$1" != -- ]; do destination+=("$1"); shift; done
  shift
  start_nbdkit "$name-src" "${source[@]}"
  start_nbdkit "$name" --filter=log "${destination[@]}" \
    logfile="$tmp/$name.log"
  run_nbdcp "$@" "$(uri_of "$tmp/$name-src.sock")" \
    "$(uri_of "$tmp/$name.sock")" || fail "$name: nbdcp $* failed"
  cp "$tmp/$name.log" "$tmp/$name.copy.log"
  check_same "$(uri_of "$tmp/$name-src.sock")" "$(uri_of "$tmp/$name.sock")" \
    "$name"
}

# start_slow_twin NAME TWIN RDELAY PLUGIN-ARGS...: a read-only source
# NAME, nbdkit PLUGIN-ARGS slowed by the delay filter (rdelay=RDELAY),
# and its twin TWIN serving the same bytes at full speed, for
# check_same to compare with quickly.  PLUGIN-ARGS must serve the same
# bytes every time (sparse-random with a seed, pattern, data...).
start_slow_twin ()
{
  local name=$1 twin=$2 rdelay=$3
  shift 3
  start_nbdkit "$name" -r --filter=delay "$@" rdelay="$rdelay"
  start_nbdkit "$twin" -r "$@"
}

# start_progress_sources: the sources of the progress tests
# (test-progress-bar.sh, test-progress-lines.sh).  src, 64 MiB, and
# ssrc, 16 MiB (for a stream), are slowed down with start_slow_twin so
# that a copy takes a second or two and progress is looked at several
# times; their twins ref and sref serve the same bytes at full speed for
# check_same.  small, 4 MiB of nbdkit's pattern plugin, is copied at full
# speed.  $src and $ref are the URIs of src and ref.  The test is
# skipped if nbdkit lacks what they need.
start_progress_sources ()
{
  requires_nbdkit_filter delay
  requires_nbdkit_plugin sparse-random
  requires_nbdkit_plugin pattern
  start_slow_twin src ref 20ms sparse-random size=64M percent=100 seed=3
  src=$(uri_of "$tmp/src.sock") ref=$(uri_of "$tmp/ref.sock")
  start_slow_twin ssrc sref 20ms sparse-random size=16M percent=100 seed=5
  start_nbdkit small -r pattern size=4M
}

# copy_across_break NAME SIZE FROM AT SRC NBDCP-ARGS...: nbdcp
# NBDCP-ARGS (with --retry) copies SRC onto a new SIZE-byte file
# $tmp/NAME.img, served by start_breaking_nbdkit NAME FILE FROM AT
# until it breaks and then by nbdkit's file plugin on the same socket
# (restart_broken_nbdkit).  nbdcp must exit 0; its standard output is
# left in $tmp/NAME.out and its standard error in $tmp/err.  The test
# checks the file.
copy_across_break ()
{
  local name=$1 size=$2 from=$3 at=$4 src=$5 pid r=0
  shift 5
  truncate -s "$size" "$tmp/$name.img"
  start_breaking_nbdkit "$name" "$tmp/$name.img" "$from" "$at"
  run_nbdcp "$@" "$src" "$(uri_of "$tmp/$name.sock")" \
    >"$tmp/$name.out" 2>"$tmp/err" &
  pid=$!
  restart_broken_nbdkit "$name" file "$tmp/$name.img"
  wait $pid || r=$?
  [ $r = 0 ] || { cat "$tmp/err" >&2; fail "$name: exit $r"; }
}

# An awk function for programs that read nbdkit's log filter output:
# hex(S) is the value of the hexadecimal string S ("0x1f" or "1f").
# Portable (mawk has no strtonum).  Use it as  awk "$AWK_HEX"' ... '
# and print large numbers with printf "%.0f" (mawk prints 1e+09).
AWK_HEX='
function hex(s,  i, n) {
  n = 0; s = tolower(s); sub(/^0x/, "", s)
  for (i = 1; i <= length(s); i++)
    n = n * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
  return n
}
'

# written_bytes LOG: the bytes that the Write requests in the nbdkit log
# filter file LOG carried, in all.
written_bytes ()
{
  awk "$AWK_HEX"'
    $4 == "Write" {
      for (i = 5; i <= NF; i++)
        if ($i ~ /^count=/) total += hex(substr($i, 7))
    }
    END { printf "%.0f\n", total }' "$1"
}

# The source of the tests of how holes and zero blocks are written
# (test-allocated.sh, test-destination-is-zero.sh), for nbdkit's data
# plugin: ZERO_BLOCKS_SIZE bytes with big holes, and data extents with
# zero blocks inside them.  Each byte of ZERO_BLOCKS_DATA sits alone in
# its 4K block, in a data extent of 32K or more (the data plugin
# allocates in 32K pages).  With -S 4096 the non-zero 4K blocks are
# 0x100000, 0x7fff000, 0x8000000 and 0x10000000: 16K in all.
ZERO_BLOCKS_DATA='@1048576 1 @134215000 3*5000 @268435456 2'
ZERO_BLOCKS_SIZE=512M

# copy_zero_blocks NAME DESTINATION-ARGS... -- NBDCP-ARGS...: copy_logged
# from nbdkit's data plugin serving ZERO_BLOCKS_DATA.
copy_zero_blocks ()
{
  local name=$1
  shift
  copy_logged "$name" data "$ZERO_BLOCKS_DATA" size=$ZERO_BLOCKS_SIZE -- "$@"
}

# logged_writes LOG: the Write, Zero and Trim requests that nbdkit's log
# filter wrote to LOG, one "OFFSET COUNT" line each (decimal).
logged_writes ()
{
  awk "$AWK_HEX"'
    $4 == "Write" || $4 == "Zero" || $4 == "Trim" {
      off = -1; cnt = -1
      for (i = 5; i <= NF; i++) {
        if ($i ~ /^offset=/) off = hex(substr($i, 8))
        if ($i ~ /^count=/) cnt = hex(substr($i, 7))
      }
      if (off < 0 || cnt < 0) { print "cannot parse: " $0; exit 2 }
      printf "%.0f %.0f\n", off, cnt
    }' "$1"
}

# check_covered LOG SIZE: the Write, Zero and Trim requests that nbdkit's
# log filter wrote to LOG cover 0..SIZE exactly once: no gap, no
# overlap, nothing past SIZE.  A destination that checks the data of
# every write (the checkwrite filter, or sparse-random) only sees the
# requests that were sent; this proves that none was left out.
check_covered ()
{
  logged_writes "$1" | sort -k1,1n | awk -v size="$2" '
    $1 < end { printf "%.0f..%.0f written twice\n", $1, end; bad = 1 }
    $1 > end { printf "%.0f..%.0f never written\n", end, $1; bad = 1 }
    { if ($1 + $2 > end) end = $1 + $2 }
    END {
      if (end != size) {
        printf "writes end at %.0f, not at the size %.0f\n", end, size
        bad = 1
      }
      exit bad
    }' >"$tmp/check_covered.out" || {
    cat "$tmp/check_covered.out" >&2
    fail "$1: the destination was not written exactly once over 0..$2"
  }
}

# expect_fail PATTERN CMD ARGS...: CMD must exit 1 (not 0, not a signal,
# not a timeout) and print a message matching PATTERN (grep -E) on stderr.
expect_fail ()
{
  local pattern=$1 r=0
  shift
  timeout --kill-after=10 120 "$@" >"$tmp/out" 2>"$tmp/err" || r=$?
  if [ "$r" -ne 1 ]; then
    cat "$tmp/err" >&2
    fail "expected exit 1, got $r: $*"
  fi
  if ! grep -Eq -- "$pattern" "$tmp/err"; then
    cat "$tmp/err" >&2
    fail "message does not match '$pattern': $*"
  fi
}

# expect_equal WHAT EXPECTED ACTUAL: fail, saying WHAT, unless ACTUAL
# is the string EXPECTED.
expect_equal ()
{
  [ "$2" = "$3" ] || fail "$1: expected $2, got $3"
}

# ends_within PID SECONDS: wait up to SECONDS for background process PID
# (a child of this shell) to end.  If it has not, kill it (its stderr is
# in $tmp/err, shown) and return 1; the caller says what it expected.
ends_within ()
{
  local pid=$1 i
  for i in $(seq 1 $(($2 * 10))); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -0 "$pid" 2>/dev/null || return 0
  kill -9 "$pid" 2>/dev/null || :
  wait "$pid" 2>/dev/null || :
  cat "$tmp/err" >&2
  return 1
}

# start_breaking_nbdkit NAME FILE FROM AT: serve FILE (writable, at its
# size) on $tmp/NAME.sock through nbdkit's sh plugin, which kills the
# server with SIGKILL (every connection breaks at once, nothing is
# flushed) on the first write or zero request at offset FROM or later
# that lies AT bytes or more into its 128 MiB segment: a break at a
# known place, in the middle of a segment, however fast the copy runs.
# Until then it stores what it is sent in FILE.  $tmp/NAME.broken
# appears when it has broken.  Slow (a process per request): for the
# part of a copy before the break; restart_broken_nbdkit serves the rest.
start_breaking_nbdkit ()
{
  local name=$1 file=$2 from=$3 at=$4
  cat >"$tmp/$name.sh" <<EOF
#!/usr/bin/env bash
f='$file'
case "\$1" in
get_size) stat -L -c %s "\$f" ;;
can_write | can_zero | can_trim | can_flush | can_multi_conn) exit 0 ;;
thread_model) echo parallel ;;
flush) exit 0 ;;
pwrite | zero | trim)
  if [ "\$4" -ge $from ] && [ \$((\$4 % (128 << 20))) -ge $at ] &&
    mkdir "$tmp/$name.broken" 2>/dev/null; then
    kill -9 \$PPID
    exit 1
  fi
  case "\$1" in
  pwrite)
    dd of="\$f" bs=64K iflag=fullblock oflag=seek_bytes seek="\$4" \\
      conv=notrunc status=none
    ;;
  *)
    fallocate -p -o "\$4" -l "\$3" "\$f" 2>/dev/null ||
      head -c "\$3" /dev/zero | dd of="\$f" bs=64K iflag=fullblock \\
        oflag=seek_bytes seek="\$4" conv=notrunc status=none
    ;;
  esac
  ;;
*) exit 2 ;;
esac
EOF
  chmod +x "$tmp/$name.sh"
  rm -rf "$tmp/$name.broken"
  start_nbdkit "$name" sh "$tmp/$name.sh"
  eval "_breaking_pid_$name=${_pids[-1]}"
  # It is killed on purpose: no "Killed" report from bash.
  disown "${_pids[-1]}"
}

# restart_broken_nbdkit NAME ARGS...: wait (60 s at most) for the server
# of start_breaking_nbdkit NAME to break and end, then start nbdkit ARGS
# on the same socket.
restart_broken_nbdkit ()
{
  local name=$1
  shift
  wait_broken_nbdkit "$name"
  start_nbdkit "$name" "$@"
}

# wait_broken_nbdkit NAME: wait for start_breaking_nbdkit NAME to break
# and end, and remove its socket (nothing listens there then).
wait_broken_nbdkit ()
{
  local name=$1 i pid
  eval "pid=\$_breaking_pid_$name"
  for i in $(seq 1 600); do
    [ -d "$tmp/$name.broken" ] && break
    sleep 0.1
  done
  [ -d "$tmp/$name.broken" ] || fail "$name: the server never broke"
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  rm -f "$tmp/$name.sock"
}
