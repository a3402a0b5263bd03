#!/bin/bash
# TCP keep-alive: every TCP connection nbdcp opens, to the source and to
# the destination, has the kernel's keep-alive timer running (ss -o
# shows timer:(keepalive,...)), due within nbdcp's idle time of a
# minute, not the kernel's two hours, so that a peer that vanishes
# without a FIN or a reset is noticed; and the copy made through them
# is right.
. "${srcdir:-.}/tests/functions.sh"
requires ss
requires "$QEMU_IMG"
requires_nbdkit_plugin pattern
requires_nbdkit_plugin memory
requires_nbdkit_filter delay

# A source slowed down so that the copy lasts a few seconds: 8 reads of
# 1 MiB, one at a time, half a second each.
size=$((8 * 1024 * 1024))
start_nbdkit_tcp src -r --filter=delay pattern size=$size rdelay=500ms
start_nbdkit_tcp dst memory size=$size
start_nbdkit ref -r pattern size=$size

run_nbdcp -R 1 --request-size=1M "nbd://127.0.0.1:$port_src" \
  "nbd://127.0.0.1:$port_dst" 2>"$tmp/copy.err" &
copy=$!

# timers PORT: nbdcp's connections to PORT (ss names them by their
# destination port) with their timers, one a line.
timers ()
{
  ss -tnoH state established "( dport = :$1 )" 2>/dev/null || :
}

# all_keepalive PORT: there is a connection to PORT, and every one has
# the keep-alive timer, due within nbdcp's idle time of 60 s (the
# kernel's default is 2 hours: ss shows "119min").
all_keepalive ()
{
  local t
  t=$(timers "$1")
  [ -n "$t" ] && ! grep -Evq 'timer:\(keepalive,([0-9.]+(ms|sec)|1min),' <<<"$t"
}

# Poll while the copy runs, until both sides show the timer: a
# connection is seen between its connect and its handshake, before
# nbdcp has set its options.
seen_src= seen_dst= last=
for i in $(seq 1 600); do
  t=$(timers "$port_src"; timers "$port_dst")
  [ -z "$t" ] || last=$t
  all_keepalive "$port_src" && seen_src=yes
  all_keepalive "$port_dst" && seen_dst=yes
  [ -n "$seen_src" ] && [ -n "$seen_dst" ] && break
  kill -0 $copy 2>/dev/null || break
  sleep 0.05
done
if [ -z "$seen_src" ] || [ -z "$seen_dst" ]; then
  echo "nbdcp's connections to ports $port_src and $port_dst, last seen:" >&2
  echo "$last" >&2
  kill $copy 2>/dev/null || :
  fail "no keep-alive timer on nbdcp's TCP connections" \
    "(source: ${seen_src:-no}, destination: ${seen_dst:-no})"
fi
wait $copy || { cat "$tmp/copy.err" >&2; fail "the copy failed"; }
check_same "$(uri_of "$tmp/ref.sock")" "nbd://127.0.0.1:$port_dst" \
  "copy over TCP with keep-alive"
exit 0
