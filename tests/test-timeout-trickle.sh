#!/bin/bash
# --timeout fires against a server that keeps a connection busy without
# ever finishing a reply: it sends each reply one byte at a time, half a
# second apart (bad-nbd-server.py's trickle mode).  Every byte wakes the
# worker, and the check for stalled requests must still run: nbdcp
# fails, naming the timeout, long before the bound (it used to run
# until killed).
. "${srcdir:-.}/tests/functions.sh"
requires "$PYTHON"

start_bad_server src trickle --size=$((1 << 20)) --delay=0.5
uri=$(uri_of "$tmp/src.sock")

# Block status is the first request; with --no-extents, a read.
for what in "extents (block status)" read; do
  args=()
  [ "$what" = read ] && args=(--no-extents)
  r=0
  "$NBDCP" --timeout=3 "${args[@]}" "$uri" null: 2>"$tmp/err" &
  pid=$!
  ends_within $pid 30 ||
    fail "nbdcp --timeout=3 ${args[*]} still ran after 30 s"
  wait $pid || r=$?
  [ $r = 1 ] || { cat "$tmp/err" >&2; fail "${args[*]}: exit $r, not 1"; }
  grep -qF "source $what at offset 0 length " "$tmp/err" &&
    grep -qF "failed: no reply in 3.0 seconds (--timeout)" "$tmp/err" || {
    cat "$tmp/err" >&2
    fail "${args[*]}: the message does not name the $what and the timeout"
  }
done
