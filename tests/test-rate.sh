#!/bin/bash
# --rate=SIZE holds the reads to SIZE bytes per second over all
# connections: 64 MiB of data at 16M takes at least 3.5 s (4 s, less the
# credit of 50 ms a lane may take), with one connection and with
# two, and at 32M at least 1.75 s.  From above: no second of a copy
# reads more than the limit and 10% (reads timed by nbdkit's log
# filter as the server got them), and 1 MiB at 256K takes 4 s, not
# one read less.  Holes cost nothing: a 4 GiB disk with 64 MiB of data
# copies at 64M in less than the 64 s its size would take, and
# --stats says the rate of what was read (the bytes nbdkit logged), not
# of the disk's size.  --verify's read-back is held to the rate too,
# and a lane waiting for credit longer than --timeout is not timed
# out.  Each copy is compared with the source,
# --stats=json names the limit, and bad values are refused.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"
requires python3

start_nbdkit src -r sparse-random size=64M percent=100 seed=7
src=$(uri_of "$tmp/src.sock")

# timed NAME MIN-SECONDS NBDCP-ARGS...: copy src into a fresh memory disk
# NAME with NBDCP-ARGS, at least MIN-SECONDS long, and compare.
timed ()
{
  local name=$1 min=$2 start end
  shift 2
  start_nbdkit "$name" memory size=64M
  start=$EPOCHREALTIME
  run_nbdcp --stats=json "$@" "$src" "$(uri_of "$tmp/$name.sock")" \
    2>"$tmp/$name.stats" || { cat "$tmp/$name.stats" >&2; fail "$name: copy failed"; }
  end=$EPOCHREALTIME
  check_same "$src" "$(uri_of "$tmp/$name.sock")" "$name"
  python3 -c 'import sys; d = float(sys.argv[2]) - float(sys.argv[1])
print("%.2f s" % d); sys.exit(0 if d >= float(sys.argv[3]) else 1)' \
    "$start" "$end" "$min" || fail "$name: $* took less than $min s"
}

timed one 3.5 -C 1 --rate=16M
grep -q '"rate_limit": 16777216' "$tmp/one.stats" ||
  fail "--stats=json does not name the limit: $(cat "$tmp/one.stats")"
timed two 3.5 -C 2 -T 2 --rate=16M
timed fast 1.75 -C 2 -T 2 --rate=32M --request-size=64K

# read_windows LOG RATE: from nbdkit's log filter's LOG, the bytes read
# and the most read in any one second (from each read's arrival on);
# exits 1 if that is over RATE and 10%.
read_windows ()
{
  python3 - "$1" "$2" <<'PY'
import re, sys
from datetime import datetime
reads = []
for line in open(sys.argv[1]):
    m = re.match(r'(\S+ \S+) connection=\d+ Read .*count=(0x[0-9a-f]+)', line)
    if m:
        t = datetime.strptime(m.group(1), '%Y-%m-%d %H:%M:%S.%f').timestamp()
        reads.append((t, int(m.group(2), 16)))
reads.sort()
rate = int(sys.argv[2])
most, j, inside = 0, 0, 0
for i, (t, n) in enumerate(reads):
    while j < len(reads) and reads[j][0] < t + 1.0:
        inside += reads[j][1]
        j += 1
    most = max(most, inside)
    inside -= n
total = sum(n for _, n in reads)
print("%d bytes read in %d reads; at most %d in one second (%.2f of the limit)"
      % (total, len(reads), most, most / rate))
open(sys.argv[1] + '.total', 'w').write('%d\n' % total)
sys.exit(0 if most <= 1.1 * rate else 1)
PY
}

head -c $((1024 * 1024)) /dev/urandom >"$tmp/r.raw"
for conns in 1 2; do
  rm -f "$tmp/reads$conns.log"
  start_nbdkit logged$conns --filter=log file "$tmp/r.raw" \
    logfile="$tmp/reads$conns.log"
  start=$EPOCHREALTIME
  run_nbdcp -C $conns -T $conns --stats=json --rate=256K \
    "$(uri_of "$tmp/logged$conns.sock")" "$tmp/r$conns.out" 2>"$tmp/r$conns.stats"
  end=$EPOCHREALTIME
  cmp "$tmp/r.raw" "$tmp/r$conns.out" || fail "-C $conns --rate=256K: copy differs"
  read_windows "$tmp/reads$conns.log" $((256 * 1024)) ||
    fail "-C $conns: a second of the copy read more than --rate=256K and 10%"
  python3 -c 'import sys; d = float(sys.argv[2]) - float(sys.argv[1])
print("1 MiB at 256K: %.2f s" % d); sys.exit(0 if d >= 3.95 else 1)' \
    "$start" "$end" || fail "-C $conns: 1 MiB at 256K took less than 4 s"
done

# Holes are not read, so they are not held back, nor counted as read.
start_nbdkit sparse -r --filter=log sparse-random size=4G percent=1.5 seed=3 \
  logfile="$tmp/sparse.log"
start_nbdkit sdst memory size=4G
start=$SECONDS
run_nbdcp --stats=json --rate=64M "$(uri_of "$tmp/sparse.sock")" \
  "$(uri_of "$tmp/sdst.sock")" 2>"$tmp/sparse.stats"
[ $((SECONDS - start)) -lt 60 ] || fail "holes were held to the rate"
# Before check_same, whose reads the log would count too.
read_windows "$tmp/sparse.log" $((64 * 1024 * 1024)) ||
  fail "a second of the sparse copy read more than --rate=64M and 10%"
check_same "$(uri_of "$tmp/sparse.sock")" "$(uri_of "$tmp/sdst.sock")" "sparse"
python3 - "$tmp/sparse.stats" "$(cat "$tmp/sparse.log.total")" <<'PY' ||
import json, sys
s = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
logged = int(sys.argv[2])
print("read_bytes %d (nbdkit logged %d), %.0f bytes/s read, limit %d"
      % (s["read_bytes"], logged, s["read_bytes_per_second"], s["rate_limit"]))
assert s["read_bytes"] == logged, "read_bytes is not what the server was asked"
assert s["read_bytes_per_second"] <= 1.1 * s["rate_limit"], "rate over the limit"
assert abs(s["read_bytes_per_second"] * s["elapsed_seconds"] - logged) < 1024 * 1024
PY
  fail "--stats=json: the read rate is not that of the bytes read: $(cat "$tmp/sparse.stats")"

# --verify's read-back is held to the rate too (the man page says so):
# 512 KiB at 256K copied and read back take 2 s each, and no second of
# the read-back reads more than the limit and 10% (the destination's
# log, which only the read-back reads), in reads of 8 KiB although
# --verify hashes 64 KiB blocks.
head -c $((512 * 1024)) /dev/urandom >"$tmp/v.raw"
start_nbdkit vsrc -r file "$tmp/v.raw"
start_nbdkit vdst --filter=log memory size=512K logfile="$tmp/vdst.log"
start=$EPOCHREALTIME
run_nbdcp --rate=256K --verify "$(uri_of "$tmp/vsrc.sock")" \
  "$(uri_of "$tmp/vdst.sock")"
end=$EPOCHREALTIME
grep ' Read ' "$tmp/vdst.log" >"$tmp/vdst.reads" ||
  fail "--verify did not read the destination back"
read_windows "$tmp/vdst.reads" $((256 * 1024)) ||
  fail "--verify: a second of the read-back read more than --rate=256K and 10%"
# Reads of a 32nd of the rate, as in the copy, not whole 64 KiB hash
# blocks: four of those a second, one early would be 25% over.
biggest=$(sed -n 's/.* count=\(0x[0-9a-f]*\).*/\1/p' "$tmp/vdst.reads" |
  sort -u | while read -r n; do echo $((n)); done | sort -n | tail -1)
[ "$biggest" -le 8192 ] ||
  fail "--verify --rate=256K read back $biggest bytes at once, not 8 KiB"
[ "$(cat "$tmp/vdst.reads.total")" -eq $((512 * 1024)) ] ||
  fail "--verify read back $(cat "$tmp/vdst.reads.total") bytes, not 512 KiB"
python3 -c 'import sys; d = float(sys.argv[2]) - float(sys.argv[1])
print("512 KiB at 256K, verified: %.2f s" % d); sys.exit(0 if d >= 3.9 else 1)' \
  "$start" "$end" || fail "--verify: the read-back was not held to the rate"
check_same "$tmp/v.raw" "$(uri_of "$tmp/vdst.sock")" "--rate --verify"

# A lane waiting for credit has no request in flight: --timeout must not
# count the wait.  The source's minimum block is 8K, so at 2K per second
# the one read waits 4 s for its credit, twice the --timeout.
requires_nbdkit_filter blocksize-policy
head -c 8192 /dev/urandom >"$tmp/t.raw"
start_nbdkit tsrc -r --filter=blocksize-policy file "$tmp/t.raw" \
  blocksize-minimum=8192 blocksize-preferred=8192 blocksize-error-policy=error
start=$EPOCHREALTIME
run_nbdcp --rate=2K --timeout=2 --stats=json "$(uri_of "$tmp/tsrc.sock")" \
  "$tmp/t.out" 2>"$tmp/t.stats" || {
  cat "$tmp/t.stats" >&2
  fail "--rate=2K --timeout=2: the wait for credit timed out"
}
end=$EPOCHREALTIME
cmp "$tmp/t.raw" "$tmp/t.out" || fail "--rate=2K --timeout=2: copy differs"
grep -q '"ok": true, .*"read_bytes": 8192,' "$tmp/t.stats" ||
  fail "--rate --timeout: --stats=json: $(cat "$tmp/t.stats")"
python3 -c 'import sys; d = float(sys.argv[2]) - float(sys.argv[1])
print("8K in one read at 2K with --timeout=2: %.2f s" % d)
sys.exit(0 if d >= 3.9 else 1)' "$start" "$end" ||
  fail "--rate=2K: the 8K read did not wait 4 s for its credit"

for bad in 0 512 abc -1; do
  expect_fail "^nbdcp: --rate" "$NBDCP" --rate=$bad "$src" null:
done
