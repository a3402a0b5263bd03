#!/bin/bash
# --retry covers the first connection too: a handshake cut or reset on
# its way (tests/fault-proxy.py breaks connection 1 after a few bytes of
# the server's greeting), on the source or the destination, and a server
# that is not listening yet (refused, then started) and a handshake that
# times out are connected to again with --retry-delay's back-off, and the copy is exact.  Without
# --retry the copy fails at once, saying it was not retried; a signal
# ends the wait between attempts at once, and so it does the wait
# before a reconnection in mid-copy.
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires_nbdkit_plugin file

size=$((4 * 1024 * 1024 + 512))
head -c $size /dev/urandom >"$tmp/data"
start_nbdkit src -r file "$tmp/data"

# The source's first connection is cut after 10 bytes of the greeting.
start_fault_proxy cut "unix:$tmp/src.sock" --fault 1:down:cut:10
run_nbdcp --retry=3 --retry-delay=1 "$(uri_of "$tmp/cut.sock")" \
  "$tmp/out1" 2>"$tmp/err1" ||
  { cat "$tmp/err1" >&2; fail "a cut first handshake was not retried"; }
cmp "$tmp/data" "$tmp/out1" || fail "copy after a cut handshake differs"
grep -q 'connection 1: down: cut after 10 bytes' "$tmp/cut.log" ||
  { cat "$tmp/cut.log" >&2; fail "the proxy did not cut connection 1"; }
grep -q 'retry 1 of 3' "$tmp/err1" ||
  { cat "$tmp/err1" >&2; fail "the retry was not reported"; }

# Without --retry: exit 1 at once, saying so, nothing created.
start_fault_proxy cut2 "unix:$tmp/src.sock" --fault 1:down:cut:10
expect_fail '^nbdcp: .*\(not retried; see --retry\)' \
  "$NBDCP" "$(uri_of "$tmp/cut2.sock")" "$tmp/out2"
[ ! -e "$tmp/out2" ] || fail "a failed source left out2 behind"

# The destination's first connection is reset (an RST) during its
# handshake.
truncate -s $size "$tmp/dst3"
start_nbdkit dst3 file "$tmp/dst3"
start_fault_proxy reset "unix:$tmp/dst3.sock" --fault 1:down:reset:10
run_nbdcp --retry=2 --retry-delay=0.5 "$tmp/data" \
  "$(uri_of "$tmp/reset.sock")" 2>"$tmp/err3" ||
  { cat "$tmp/err3" >&2; fail "a reset first handshake was not retried"; }
cmp "$tmp/data" "$tmp/dst3" || fail "copy after a reset handshake differs"
grep -q 'connection 1: down: reset after 10 bytes' "$tmp/reset.log" ||
  { cat "$tmp/reset.log" >&2; fail "the proxy did not reset connection 1"; }

# free_port: a TCP port of 127.0.0.1 that nobody listens on now.
free_port ()
{
  python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# A server that is not listening yet: nbdcp is refused, and once it has
# said it will try again, the server starts.
port=$(free_port)
truncate -s $size "$tmp/dst4"
run_nbdcp --retry=5 --retry-delay=1 "$tmp/data" "nbd://127.0.0.1:$port" \
  2>"$tmp/err4" &
copy=$!
wait_for_line "$tmp/err4" 'Connection refused; connecting again in' 60 ||
  { cat "$tmp/err4" >&2; fail "nbdcp did not wait to connect again"; }
nbdkit_on_port late $port file "$tmp/dst4" ||
  skip "port $port was taken meanwhile"
wait $copy || { cat "$tmp/err4" >&2; fail "copy to a late server failed"; }
cmp "$tmp/data" "$tmp/dst4" || fail "copy to a late server differs"

# A signal ends the wait between attempts at once (exit 128 + SIGINT),
# not after the 30 s --retry-delay.
port=$(free_port)
"$NBDCP" --retry=5 --retry-delay=30 "$tmp/data" "nbd://127.0.0.1:$port" \
  2>"$tmp/err" &
copy=$!
wait_for_line "$tmp/err" 'connecting again in 30.0 s' 60 ||
  { cat "$tmp/err" >&2; fail "nbdcp did not wait to connect again"; }
kill -INT $copy
ends_within $copy 10 || fail "SIGINT did not end the wait to connect again"
r=0
wait $copy || r=$?
[ $r -eq 130 ] || { cat "$tmp/err" >&2; fail "SIGINT: exit $r, not 130"; }

# A handshake that times out (--timeout) is retried too: a server that
# delays every new connection by 30 s is tried again after the first
# timeout and then given up on, each attempt saying so; 2 s or more
# (two timeouts), far less than the 30 s.
requires_nbdkit_filter delay
requires_nbdkit_plugin memory
start_nbdkit slowopen --filter=delay memory size=1M delay-open=30
start=$(date +%s%N)
expect_fail 'cannot connect: timed out during handshake \(gave up after 1 retry\)$' \
  "$NBDCP" --timeout=1 --retry=1 --retry-delay=0.2 \
  "$(uri_of "$tmp/slowopen.sock")" null:
ms=$((($(date +%s%N) - start) / 1000000))
grep -q 'cannot connect: timed out during handshake; connecting again in 0\.2 s (retry 1 of 1)$' \
  "$tmp/err" || { cat "$tmp/err" >&2; fail "the handshake's timeout was not retried"; }
[ $ms -ge 2000 ] && [ $ms -lt 25000 ] ||
  fail "two handshake timeouts of 1 s took $ms ms"

# So does a signal in the wait before a reconnection in mid-copy: the
# source's connection is cut after 1 MB of replies, and once nbdcp has
# said it is reconnecting in 30 s, SIGINT ends it at once: exit 130,
# "interrupted by signal 2" last, --stats=json "ok": false with the
# retry counted, --progress-json's end "interrupted".
# (A server of its own: nbdkit may abort when the cut leaves it
# answering nobody.)
start_nbdkit src5 -r file "$tmp/data"
start_fault_proxy midcut "unix:$tmp/src5.sock" --fault 1:down:cut:1000000
"$NBDCP" --retry=3 --retry-delay=30 --stats=json --progress-json=3 \
  "$(uri_of "$tmp/midcut.sock")" "$tmp/out5" 2>"$tmp/err" 3>"$tmp/pj5" &
copy=$!
wait_for_line "$tmp/err" '^nbdcp: source connection 1: .*; reconnecting in 30\.0 s \(retry 1 of 3\)$' 60 ||
  { cat "$tmp/err" >&2; fail "nbdcp did not wait to reconnect"; }
kill -INT $copy
ends_within $copy 10 || fail "SIGINT did not end the wait to reconnect"
r=0
wait $copy || r=$?
[ $r -eq 130 ] || { cat "$tmp/err" >&2; fail "SIGINT mid-copy: exit $r, not 130"; }
[ "$(tail -1 "$tmp/err")" = "nbdcp: interrupted by signal 2 (Interrupt)" ] ||
  { cat "$tmp/err" >&2; fail "SIGINT mid-copy: the last line is not the signal"; }
grep -q '^{"ok": false, .*"retries": 1,' "$tmp/err" ||
  { cat "$tmp/err" >&2; fail "SIGINT mid-copy: --stats=json"; }
tail -1 "$tmp/pj5" | grep -q '^{"phase": "end", "status": "interrupted"' ||
  { cat "$tmp/pj5" >&2; fail "SIGINT mid-copy: --progress-json's end"; }
exit 0
