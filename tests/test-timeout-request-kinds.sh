#!/bin/bash
# --timeout against the requests that options add besides the copy's
# own (test-timeout.sh has those): --verify's read-back reads, a
# --checkpoint flush in mid-copy, and --bitmap's look at the whole
# dirty bitmap before the copy, which nbdcp makes outside the engine.
# Each fails after the timeout with one line naming the request, its
# offset and length, and "(--timeout)", exit 1; the stuck requests
# would take 30 s or more.  --bitmap's look is also ended by a signal
# (exit 128+15, "interrupted by signal") when no --timeout is given:
# it used to wait in libnbd, deaf to both, for as long as the server
# kept silent.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter delay
requires_nbdkit_plugin pattern
requires_nbdkit_plugin memory
requires_nbdkit_plugin eval
requires "$PYTHON"
requires "$QEMU_IMG"

# stuck SECONDS PATTERN NBDCP-ARGS...: nbdcp must exit 1, not before
# SECONDS but well before its stuck request would have been answered,
# with one line on stderr matching PATTERN, besides --stats=json's
# (left in $tmp/stats).
stuck ()
{
  local seconds=$1 pattern=$2 start ms r=0
  shift 2
  start=$(date +%s%N)
  timeout --kill-after=5 55 "$NBDCP" "$@" >"$tmp/out" 2>"$tmp/err" || r=$?
  ms=$((($(date +%s%N) - start) / 1000000))
  echo "$(cat "$tmp/err") [exit $r, $ms ms]"
  grep '^{' "$tmp/err" >"$tmp/stats" || :
  grep -v '^{' "$tmp/err" >"$tmp/msg" || :
  [ "$r" -eq 1 ] || fail "expected exit 1, got $r: $*"
  grep -Eq -- "$pattern" "$tmp/msg" || fail "message does not match '$pattern'"
  [ "$(wc -l <"$tmp/msg")" -eq 1 ] || fail "expected one line on stderr"
  [ $ms -ge $((seconds * 1000)) ] ||
    fail "timed out after $ms ms, before --timeout=$seconds"
  [ $ms -lt $(((seconds + 25) * 1000)) ] ||
    fail "took $ms ms to time out after --timeout=$seconds"
}
nsrc=0
fresh_src ()
{
  nsrc=$((nsrc + 1))
  start_nbdkit src$nsrc -r pattern size="$1"
  src=$(uri_of "$tmp/src$nsrc.sock")
}
timed_out='failed: no reply in 2\.0 seconds \(--timeout\)$'

# --verify: the copy succeeds (its --stats says so), then the read-back's
# first read of the destination gets no reply.
fresh_src 16M
start_nbdkit verify --filter=delay memory size=16M delay-read=40
stuck 2 "^nbdcp: --verify: reading the destination back: destination read at offset 0 length [0-9]+ $timed_out" \
  --timeout=2 --verify --stats=json "$src" "$(uri_of "$tmp/verify.sock")"
grep -q '"ok": true' "$tmp/stats" ||
  fail "--verify: --stats does not say the copy itself succeeded"


# --checkpoint: the flush that ends the first 128 MiB segment gets no
# reply.  eval serves one request at a time and logs the writes and
# flushes in order: four writes of 32M (the whole first segment), then
# the flush.  eval runs a shell per request, and on a loaded machine
# the handshake alone has taken over 2 s: --timeout=10.
fresh_src 256M
start_nbdkit ckpt eval get_size='echo 268435456' can_write='exit 0' \
  pwrite="cat >/dev/null; echo write \$4 >>$tmp/ckpt.log" \
  can_flush='exit 0' flush="echo flush >>$tmp/ckpt.log; sleep 40"
ckpt_pid=${_pids[-1]}
disown "$ckpt_pid" # killed on purpose below: no "Killed" from bash
stuck 10 '^nbdcp: destination flush failed: no reply in 10(\.0)? seconds \(--timeout\)$' \
  --timeout=10 -C 1 --request-size=32M --checkpoint=128M \
  --resume="$tmp/ckpt.journal" --stats=json "$src" "$(uri_of "$tmp/ckpt.sock")"
kill -9 "$ckpt_pid" # its flush would sleep on
printf 'write %s\n' 0 33554432 67108864 100663296 >"$tmp/ckpt.expected"
echo flush >>"$tmp/ckpt.expected"
head -5 "$tmp/ckpt.log" | diff "$tmp/ckpt.expected" - ||
  fail "--checkpoint: the stuck flush was not the one after the first segment"
grep -q '"ok": false' "$tmp/stats" || fail "--checkpoint: --stats does not say failed"

# --bitmap: a server that agrees to the bitmap's context but never
# answers block status.  The look at the bitmap comes before anything is
# written: the destination keeps its bytes.
start_bad_server bitmap silent-block-status --size=$((16 << 20))
bitmap=$(uri_of "$tmp/bitmap.sock")
at='nbd\+unix:.*/bitmap\.sock: block status at offset 0 length 16777216 failed'
head -c 16M /dev/urandom >"$tmp/old.img"
cp "$tmp/old.img" "$tmp/bitmap.img"
stuck 2 "^nbdcp: $at: ${timed_out#failed: }" \
  --timeout=2 --bitmap=b0 "$bitmap" "$tmp/bitmap.img"
cmp "$tmp/old.img" "$tmp/bitmap.img" || fail "--bitmap: the destination was written"

# And without --timeout a signal ends that wait, once -v has said the
# destination is open (the look comes next, or has begun).
rm -f "$tmp/err" # (an earlier run's log)
"$NBDCP" -v --bitmap=b0 "$bitmap" "$tmp/bitmap.img" 2>"$tmp/err" &
pid=$!
wait_for_log_line "$tmp/err" '^nbdcp: destination .*bitmap\.img \(file\)'
kill -TERM $pid
ends_within $pid 20 || fail "--bitmap: SIGTERM did not end the look at the bitmap"
r=0
wait $pid || r=$?
grep -v '^libnbd:' "$tmp/err" | tail -1
[ $r -eq 143 ] || fail "--bitmap: exit $r after SIGTERM, not 143"
grep -Eq "^nbdcp: ($at: )?interrupted by signal 15 \(Terminated\)$" \
  "$tmp/err" || fail "--bitmap: no 'interrupted by signal 15' line"
cmp "$tmp/old.img" "$tmp/bitmap.img" || fail "--bitmap: the destination was written"

# The same server answering block status (one extent, all dirty): the
# whole disk is copied, within a --timeout.
start_bad_server good good --size=$((16 << 20))
run_nbdcp --timeout=10 --bitmap=b0 "$(uri_of "$tmp/good.sock")" "$tmp/bitmap.img"
fresh_src 16M
check_same "$src" "$tmp/bitmap.img" "--bitmap from a server that answers"
