#!/bin/bash
# A guard on what makes small requests cheap: after a reply, the worker
# reads on from the socket instead of arming a poll and entering the
# ring, and it enters the ring only with work queued.  A copy of 16 MiB
# in 4K requests (4096 reads) to null:, traced by strace -f -c, must
# cost at most 6.5 system calls per request (5 on a quiet machine, 5.3
# with twelve busy loops on the 2 cores; 7 before reading on) and enter
# io_uring for at most one request in 5 (9 times in all on a quiet
# machine, 329 with twelve busy loops, when the server's replies come
# later and the worker more often finds none waiting; about once per
# request without reading on).  Counted, not timed; the bounds leave
# room for load and still catch the costs they guard against.
. "${srcdir:-.}/tests/functions.sh"
requires strace
requires_nbdkit_plugin pattern
[ "${SANITIZED:-no}" = no ] || skip "a sanitizer's own system calls would be counted"

requests=4096
start_nbdkit src -r pattern size=$((requests * 4096))
strace -f -c -o "$tmp/strace" \
  timeout --kill-after=10 120 "$NBDCP" --request-size=4096 -C 1 -T 1 \
  "$(uri_of "$tmp/src.sock")" null: || fail "the copy failed"
cat "$tmp/strace"

# strace -c's last line is "100.00 ... CALLS [ERRORS] total".
total=$(awk '$NF == "total" { print $4 }' "$tmp/strace")
enters=$(awk '$NF == "io_uring_enter" { print $4 }' "$tmp/strace")
: "${enters:=0}"
echo "$total system calls, $enters io_uring_enter, for $requests requests"
[ -n "$total" ] || fail "no total in strace's summary"
[ "$total" -le $((requests * 13 / 2)) ] ||
  fail "$total system calls for $requests requests: more than 6.5 per request"
[ "$enters" -le $((requests / 5)) ] ||
  fail "io_uring_enter $enters times for $requests requests: more than 1 in 5"
