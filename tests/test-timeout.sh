#!/bin/bash
# --timeout=SECONDS fails a copy promptly (exit 1, one line naming the
# operation, its offset and "(--timeout)") when a write, zero, read,
# block status or flush gets no reply in time; and is not spurious:
# slow-but-answering servers and healthy copies still succeed.
#
# --timeout also bounds each handshake, so the stuck cases use 2 s (1.5
# for decimals) rather than 1: on a loaded machine a handshake can take
# over a second, and the copy would fail with "cannot connect" instead
# of timing the stuck request.  Their times are bounded tightly below
# (not before the timeout) and generously above (the timeout and 30 s:
# under load an ASan nbdcp took up to 12 s to start, connect, time out
# and end after a 2 s timeout); the stuck requests take 60 s, and
# would end in success.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter delay
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"
requires bc

# stuck SECONDS PATTERN NBDCP_ARGS...: nbdcp (given --timeout=SECONDS
# in NBDCP_ARGS) must exit 1 after SECONDS or more but in under SECONDS
# + 30 s (the stuck request would take 60 s; it is killed after 55 s)
# with one line matching PATTERN.
stuck ()
{
  local seconds=$1 pattern=$2 t0 t1 r=0
  shift 2
  t0=$(date +%s.%N)
  timeout --kill-after=5 55 "$NBDCP" "$@" >"$tmp/out" 2>"$tmp/err" || r=$?
  t1=$(date +%s.%N)
  [ "$r" -eq 1 ] || {
    cat "$tmp/err" >&2
    fail "expected exit 1, got $r after $(echo "$t1 - $t0" | bc) s: $*"
  }
  grep -Eq -- "$pattern" "$tmp/err" || {
    cat "$tmp/err" >&2
    fail "message does not match '$pattern': $*"
  }
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || {
    cat "$tmp/err" >&2
    fail "expected one line on stderr: $*"
  }
  grep -q '(--timeout)$' "$tmp/err" || fail "no '(--timeout)' in: $(cat "$tmp/err")"
  grep -q 'no reply in' "$tmp/err" || fail "no 'no reply in' in: $(cat "$tmp/err")"
  echo "$(cat "$tmp/err") [$(echo "$t1 - $t0" | bc) s]"
  [ "$(echo "$t1 - $t0 < $seconds + 30" | bc)" -eq 1 ] ||
    fail "took $(echo "$t1 - $t0" | bc) s to time out: $*"
  [ "$(echo "$t1 - $t0 >= $seconds" | bc)" -eq 1 ] ||
    fail "timed out after $(echo "$t1 - $t0" | bc) s, before --timeout=$seconds: $*"
}

# fresh_src: a new source in $src (the same bytes each time).  nbdkit
# 1.32 may abort when a client goes away while it answers requests,
# which is what a timed-out nbdcp does while its destination is stuck;
# on a loaded machine it often does, and the next case found its
# source gone ("Connection refused").  So each case gets its own, and
# fresh_dst gives each stuck source a destination of its own.
nsrc=0
fresh_src ()
{
  nsrc=$((nsrc + 1))
  start_nbdkit src$nsrc -r sparse-random size=256M seed=3 percent=50
  src=$(uri_of "$tmp/src$nsrc.sock")
}
ndst=0
fresh_dst ()
{
  ndst=$((ndst + 1))
  start_nbdkit dst$ndst memory size=256M
  dst=$(uri_of "$tmp/dst$ndst.sock")
}
off='at offset [0-9]+ length [0-9]+ failed: no reply in 2(\.0+)? seconds? \(--timeout\)$'

# Stuck writes (and zeroes: wdelay covers both).  Each case gets a fresh
# server, since the connections are cut off under its feet.
fresh_src
start_nbdkit w1 --filter=delay memory size=256M wdelay=60
stuck 2 "^nbdcp: destination (write|zero) $off" \
  --timeout=2 "$src" "$(uri_of "$tmp/w1.sock")"
fresh_src
start_nbdkit w2 --filter=delay memory size=256M delay-write=60
stuck 2 "^nbdcp: destination write $off" \
  --timeout=2 -C 1 -R 1 "$src" "$(uri_of "$tmp/w2.sock")"

# Stuck zeroes only: a source with two data pages and holes elsewhere
# (zeroed even where the fresh disk reads as zero already).
start_nbdkit holes -r data '@1048576 1 @268435456 2' size=512M
start_nbdkit z --filter=delay memory size=512M delay-zero=60
stuck 2 "^nbdcp: destination zero $off" --no-destination-extents \
  --timeout=2 "$(uri_of "$tmp/holes.sock")" "$(uri_of "$tmp/z.sock")"

# Stuck source reads.
start_nbdkit r -r --filter=delay sparse-random size=256M seed=3 percent=50 \
  rdelay=60
fresh_dst
stuck 2 "^nbdcp: source read $off" --timeout=2 "$(uri_of "$tmp/r.sock")" "$dst"

# Stuck block status.
start_nbdkit e -r --filter=delay sparse-random size=256M seed=3 percent=50 \
  delay-extents=60
fresh_dst
stuck 2 "^nbdcp: source extents \(block status\) $off" \
  --timeout=2 "$(uri_of "$tmp/e.sock")" "$dst"

# Stuck read to a stuck write: the first to time out is reported.
start_nbdkit r2 -r --filter=delay pattern size=64M rdelay=60
start_nbdkit w3 --filter=delay memory size=64M wdelay=60
stuck 2 "^nbdcp: (source read|destination (write|zero)) $off" \
  --timeout=2 "$(uri_of "$tmp/r2.sock")" "$(uri_of "$tmp/w3.sock")"

# Decimals: 1.5 s.
fresh_src
start_nbdkit w4 --filter=delay memory size=256M wdelay=60
stuck 1.5 '^nbdcp: destination (write|zero) at offset [0-9]+ length [0-9]+ failed: no reply in 1\.50* seconds? \(--timeout\)$' \
  --timeout=1.5 "$src" "$(uri_of "$tmp/w4.sock")"

# Stuck flush (the delay filter cannot delay flushes; eval can).  One
# connection, since eval serializes all requests, and a write queued
# behind another connection's flush would time out first.  The server
# is killed afterwards so its sleeping flush does not hold up the
# end of the test.  eval runs a shell for each of the handshake's
# questions, which on a loaded machine took over 2 s: --timeout=10;
# and it runs one for each write, so the disk is a single request.
requires_nbdkit_plugin eval
start_nbdkit small -r pattern size=256K
start_nbdkit f eval get_size='echo 262144' can_write='exit 0' \
  pread='dd if=/dev/zero count=$3 iflag=count_bytes status=none' \
  pwrite='cat >/dev/null' can_flush='exit 0' flush='sleep 30'
stuck 10 '^nbdcp: destination flush failed: no reply in 10(\.0+)? seconds? \(--timeout\)$' \
  --timeout=10 -C 1 "$(uri_of "$tmp/small.sock")" "$(uri_of "$tmp/f.sock")"
kill -9 "${_pids[-1]}"

# Not spurious.  Small delays, no --timeout: succeeds, and the copy is
# right.
start_nbdkit slow --filter=delay memory size=16M wdelay=10ms
start_nbdkit psrc -r pattern size=16M
psrc=$(uri_of "$tmp/psrc.sock")
run_nbdcp "$psrc" "$(uri_of "$tmp/slow.sock")"
check_same "$psrc" "$(uri_of "$tmp/slow.sock")" "small delays"

# Every request answers in 0.3 s but the copy (5 s or more) takes
# longer than the timeout: the timeout is per request, not for the whole
# copy.
start_nbdkit slowr -r --filter=delay pattern size=16M rdelay=300ms
start_nbdkit slow2 --filter=delay memory size=16M wdelay=300ms
t0=$(date +%s.%N)
run_nbdcp --timeout=2 -C 1 -R 4 "$(uri_of "$tmp/slowr.sock")" \
  "$(uri_of "$tmp/slow2.sock")"
[ "$(echo "$(date +%s.%N) - $t0 > 3" | bc)" -eq 1 ] ||
  fail "the slow copy was too fast to show anything"
check_same "$psrc" "$(uri_of "$tmp/slow2.sock")" "0.3 s per request"

# A healthy copy with --timeout=5.
fresh_src
fresh_dst
run_nbdcp --timeout=5 "$src" "$dst"
check_same "$src" "$dst" "--timeout=5"

# --timeout also bounds the handshake of a server that never finishes it
# (not before the timeout; well before the 30 s the server would take).
requires_nbdkit_filter delay
start_nbdkit slowopen --filter=delay memory size=1M delay-open=30
start=$(date +%s%N)
expect_fail 'cannot connect: timed out during handshake' \
  "$NBDCP" --timeout=1 "$(uri_of "$tmp/slowopen.sock")" null:
ms=$((($(date +%s%N) - start) / 1000000))
[ $ms -ge 1000 ] || fail "the handshake timed out after $ms ms, before --timeout=1"
[ $ms -lt 20000 ] || fail "--timeout did not bound the handshake ($ms ms)"

# Only NBD connections time out (the man page says so): a stream whose
# writer pauses three times as long as --timeout is waited for, and a
# local file destination too; the copy is exact.
head -c $((1024 * 1024)) /dev/urandom >"$tmp/part"
cat "$tmp/part" "$tmp/part" >"$tmp/whole"
{ cat "$tmp/part"; sleep 3; cat "$tmp/part"; } |
  run_nbdcp --timeout=1 - "$tmp/from-pipe"
cmp "$tmp/whole" "$tmp/from-pipe" || fail "a pausing stream under --timeout: copy differs"
