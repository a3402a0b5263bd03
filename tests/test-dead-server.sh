#!/bin/bash
# A server killed with SIGKILL in the middle of a copy (source or
# destination) ends the copy promptly with exit 1 (never 0, never a
# signal, never a hang) and one line naming the operation on that side.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter delay
requires_nbdkit_filter log
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"
requires "$QEMU_NBD"

size=512M

# kill_mid_copy SIDE WHEN NBDCP_ARGS...: nbdcp runs in the background;
# the server started last (the SIDE that is slow, logging to
# $tmp/$name.log) gets SIGKILL once its log shows the copy under way:
# WHEN is "sent" (requests have arrived, none answered yet) or "answered"
# (some were answered, more are in flight).  Not after a fixed sleep: on
# a loaded machine nbdcp may not even have connected by then, and the
# test would see "cannot connect" instead.  nbdcp must then exit 1; the
# bound of 30 s is generous for a loaded machine and still far below
# the copy's length (8 s or more unkilled, forever when hung).
kill_mid_copy ()
{
  local side=$1 when=$2 server=${_pids[-1]} log=$tmp/$name.log pid r=0 t0 t1
  shift 2
  "$NBDCP" "$@" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  case $when in
    sent) wait_for_requests "$log" 2 "$kinds" ;;
    answered) wait_for_log_line "$log" "\.\.\.($kinds) id=[0-9]+ return=0" ;;
  esac
  kill -0 "$pid" 2>/dev/null ||
    fail "nbdcp ended before the $side server was killed (too fast a server?)"
  kill -9 "$server"
  t0=$(date +%s.%N)
  ends_within "$pid" 30 ||
    fail "nbdcp still running 30 s after the $side server was killed: $*"
  wait "$pid" || r=$?
  t1=$(date +%s.%N)
  wait "$server" 2>/dev/null || :
  cat "$tmp/err" >&2
  [ "$r" -ne 0 ] || fail "exit 0 although the $side server died: $*"
  [ "$r" -lt 128 ] || fail "nbdcp killed by signal $((r - 128)): $*"
  [ "$r" -eq 1 ] || fail "expected exit 1, got $r: $*"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "expected one line on stderr: $*"
  case $side in
    source)
      grep -Eq '^nbdcp: source (read|extents \(block status\)) at offset [0-9]+ length [0-9]+ failed: .+$' "$tmp/err" ||
        fail "message does not name a source operation: $*" ;;
    destination)
      grep -Eq '^nbdcp: destination ((write|zero) at offset [0-9]+ length [0-9]+|flush) failed: .+$' "$tmp/err" ||
        fail "message does not name a destination operation: $*" ;;
  esac
  echo "$side killed with requests $when: exit $r after $(echo "$t1 - $t0" | bc) s"
}

# The healthy side of each copy is qemu-nbd (-t: one client after
# another, -e 8: several at once), which outlives the copies that end
# with its requests in flight; nbdkit 1.32 may not (see restart_nbdkit
# in tests/functions.sh), and the copy of the survivors below would
# find it gone.
# A healthy destination over a file, and a source whose reads take 1 s
# each (at most 4 connections x 32 requests x 512 KiB per second: 8 s or
# more for the disk), logged in front of the delay (requests as they
# arrive).
truncate -s $size "$tmp/dst.img"
start_qemu_nbd dst -f raw -t -e 8 "$tmp/dst.img"
dst=$(uri_of "$tmp/dst.sock")
n=0
kinds='Read'
for when in sent answered; do
  for opts in "" "-C 1 -R 4"; do
    n=$((n + 1))
    name=src$n
    start_nbdkit $name -r --filter=log --filter=delay \
      sparse-random size=$size seed=$n percent=100 rdelay=1 \
      logfile="$tmp/$name.log"
    kill_mid_copy source $when $opts "$(uri_of "$tmp/$name.sock")" "$dst"
  done
done

# A healthy source (a file of sparse-random's data), and a destination
# whose writes and zeroes take 1 s.
start_nbdkit random -r sparse-random size=$size seed=1 percent=100
"$QEMU_IMG" convert -f raw -O raw "$(uri_of "$tmp/random.sock")" "$tmp/src.img"
start_qemu_nbd src -r -f raw -t -e 8 "$tmp/src.img"
src=$(uri_of "$tmp/src.sock")
kinds='Write|Zero'
for when in sent answered; do
  for opts in "" "-C 1 -R 4"; do
    n=$((n + 1))
    name=dst$n
    start_nbdkit $name --filter=log --filter=delay memory size=$size \
      wdelay=1 logfile="$tmp/$name.log"
    kill_mid_copy destination $when $opts "$src" "$(uri_of "$tmp/$name.sock")"
  done
done

# The surviving servers were not disturbed: a copy between them works,
# and turns the destination (partly written by the killed copies, with
# other seeds) into the source.
run_nbdcp "$src" "$dst"
check_same "$src" "$dst" "the survivors"
