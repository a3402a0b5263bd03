#!/bin/bash
# A server killed with SIGKILL in the middle of a copy (source or
# destination) ends the copy promptly with exit 1 (never 0, never a
# signal, never a hang) and one line naming the operation on that side.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter delay
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

size=512M

# kill_mid_copy SIDE DELAY_SECONDS NBDCP_ARGS...: nbdcp runs in the
# background; after DELAY_SECONDS the server started last (the SIDE
# that is slow) gets SIGKILL; nbdcp must then exit 1 within 10 s.
kill_mid_copy ()
{
  local side=$1 delay=$2 server=${_pids[-1]} pid r=0 i t0 t1
  shift 2
  "$NBDCP" "$@" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  sleep "$delay"
  kill -0 "$pid" 2>/dev/null ||
    fail "nbdcp ended before the $side server was killed (too fast a server?)"
  kill -9 "$server"
  t0=$(date +%s.%N)
  ends_within "$pid" 10 ||
    fail "nbdcp still running 10 s after the $side server was killed: $*"
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
  echo "$side killed after ${delay}s: exit $r after $(echo "$t1 - $t0" | bc) s"
}

# A healthy memory destination, and a source whose reads take 1 s each
# (at most 4 connections x 32 requests x 512 KiB per second: 8 s or more
# for the disk).
start_nbdkit dst memory size=$size
dst=$(uri_of "$tmp/dst.sock")
n=0
for delay in 0.3 1; do
  for opts in "" "-C 1 -R 4"; do
    n=$((n + 1))
    start_nbdkit src$n -r --filter=delay \
      sparse-random size=$size seed=$n percent=100 rdelay=1
    kill_mid_copy source $delay $opts "$(uri_of "$tmp/src$n.sock")" "$dst"
  done
done

# A healthy source, and a destination whose writes and zeroes take 1 s.
start_nbdkit src -r sparse-random size=$size seed=1 percent=100
src=$(uri_of "$tmp/src.sock")
for delay in 0.3 1; do
  for opts in "" "-C 1 -R 4"; do
    n=$((n + 1))
    start_nbdkit dst$n --filter=delay memory size=$size wdelay=1
    kill_mid_copy destination $delay $opts "$src" "$(uri_of "$tmp/dst$n.sock")"
  done
done

# The surviving servers were not disturbed: a copy between them works,
# and turns the destination (partly written by the killed copies, with
# other seeds) into the source.
run_nbdcp "$src" "$dst"
check_same "$src" "$dst" "the survivors"
