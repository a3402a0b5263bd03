#!/bin/bash
# --bitmap with --retry: an incremental copy from a qcow2 dirty bitmap
# (qemu-nbd -B) onto the previous full copy, through a destination that
# breaks twice in the middle of its dirty writes and comes back
# (start_breaking_nbdkit), ends with exit 0 and the destination equal
# to the source (qemu-img compare); --stats=json counts every
# reconnection attempt as a retry (three at least: after the first
# break the server comes back only once an attempt has failed), and "redone_bytes" only the dirty
# bytes that were written again (more than none, at most the dirty
# bytes of the segments copied again, far less than the disk), not the
# clean ranges passed over.
. "${srcdir:-.}/tests/functions.sh"
requires "$QEMU_NBD"
requires "$QEMU_IMG"
requires qemu-io
requires_nbdkit_plugin sh
requires_nbdkit_plugin file
"$NBDCP" --retry=1 --bitmap=x --help >/dev/null

M=$((1024 * 1024))
seg=$((128 * M))
size=$((300 * M))

# The full copy, then the guest's writes: 4 MiB dirty in each segment,
# in pieces, so that a write lands after each break point.
src=$tmp/src.qcow2
"$QEMU_IMG" create -q -f qcow2 "$src" $size
qemu-io -f qcow2 -c 'write -P 0x11 0 20M' -c 'write -P 0x22 200M 10M' \
  "$src" >/dev/null
"$QEMU_IMG" bitmap --add --enable -g 64K "$src" b0
start_qemu_nbd full -r -f qcow2 "$src"
run_nbdcp "$(uri_of "$tmp/full.sock")" "$tmp/full.raw"
stop_servers
qemu-io -f qcow2 -c 'write -P 0x33 1M 1M' -c 'write -z 8M 1M' \
  -c 'write -P 0x44 16M 2M' \
  -c 'write -P 0x55 130M 1M' -c 'write -P 0x66 140M 1M' \
  -c 'write -P 0x77 150M 2M' \
  -c 'write -P 0x88 260M 1M' -c 'write -P 0x99 270M 1M' "$src" >/dev/null
dirty=$((4 * M + 4 * M + 2 * M))

start_qemu_nbd src -r -t -e 4 -f qcow2 -B b0 "$src"
srcuri=$(uri_of "$tmp/src.sock")
cp --sparse=always "$tmp/full.raw" "$tmp/dst.img"

# The destination breaks at the first write 12 MiB or more into any
# segment (in the first), comes back, breaks again at the first write
# 12 MiB or more into the second segment, and comes back for good.
start_breaking_nbdkit dst "$tmp/dst.img" 0 $((12 * M))
run_nbdcp -C 1 -T 1 --retry=6 --retry-delay=0.5 --stats=json \
  --bitmap=b0 "$srcuri" "$(uri_of "$tmp/dst.sock")" \
  >"$tmp/out" 2>"$tmp/err" &
pid=$!
# Wait for the first break, then serve the file again until the second.
wait_broken_nbdkit dst
mv "$tmp/dst.broken" "$tmp/dst.broken1"
# No server yet: let one attempt fail (it counts as a retry too).
for i in $(seq 1 600); do
  grep -q "cannot reconnect" "$tmp/err" && break
  sleep 0.1
done
grep -q "cannot reconnect" "$tmp/err" ||
  { cat "$tmp/err" >&2; fail "no failed reconnection attempt"; }
start_breaking_nbdkit dst "$tmp/dst.img" $seg $((12 * M))
restart_broken_nbdkit dst file "$tmp/dst.img"
r=0
wait $pid || r=$?
[ $r = 0 ] || { cat "$tmp/err" >&2; fail "nbdcp --bitmap --retry: exit $r"; }
"$QEMU_IMG" compare -f qcow2 -F raw "$src" "$tmp/dst.img" >"$tmp/cmp" 2>&1 ||
  { cat "$tmp/cmp" >&2; fail "the destination differs from the source"; }

json ()
{
  sed -n 's/.*"'"$1"'": \([0-9]*\).*/\1/p' "$tmp/err"
}
retries=$(json retries) redone=$(json redone_bytes)
dirty_json=$(json dirty_bytes)
[ -n "$retries" ] && [ -n "$redone" ] ||
  { cat "$tmp/err" >&2; fail "a count is missing from --stats=json"; }
# Each attempt is announced (a server that is not back yet makes more
# than the two breaks' worth).
attempts=$(grep -c "reconnecting in" "$tmp/err" || :)
[ "$attempts" -ge 3 ] || {
  cat "$tmp/err" >&2
  fail "expected 2 breaks and a failed attempt, nbdcp made $attempts"
}
[ "$retries" = "$attempts" ] || {
  cat "$tmp/err" >&2
  fail "\"retries\": $retries after $attempts reconnection attempts"
}
# Each announced wait is --retry-delay's back-off: 0.5 s doubled for
# each attempt before it since the last connection that worked.
python3 - "$tmp/err" <<'PY' || { cat "$tmp/err" >&2; fail "a wait is not the back-off (above)"; }
import re, sys
waits = re.findall(r"reconnecting in ([0-9.]+) s \(retry ([0-9]+) of 6\)", open(sys.argv[1]).read())
assert waits, "no 'reconnecting in ... (retry N of 6)' line"
for secs, n in waits:
    assert float(secs) == min(0.5 * 2 ** (int(n) - 1), 30), (secs, n)
PY
[ "$dirty_json" = $dirty ] ||
  { cat "$tmp/err" >&2; fail "dirty_bytes $dirty_json, not $dirty"; }
# Copied again: the first segment's dirty bytes at most twice (it was
# unflushed at both breaks), the second's once; at least what was
# written before the first break (the 1M at 1M, at least).
[ "$redone" -gt 0 ] ||
  { cat "$tmp/err" >&2; fail "redone_bytes is 0 after two reconnections"; }
[ "$redone" -le $((2 * 4 * M + 4 * M)) ] || {
  cat "$tmp/err" >&2
  fail "redone_bytes $redone: more than the dirty bytes copied again"
}
