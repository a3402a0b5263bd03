#!/bin/bash
# A stream source that trickles in is written as it comes: fed 1 MiB at
# a time through a FIFO, the destination file holds each MiB (less at
# most one request, which may still be on its way) and
# --progress-json's bytes_done says so, long before the stream has
# filled the lane's queue (16 MiB: before, nothing was written until it
# had).  cmp of the destination's first bytes with the source is the
# oracle; the whole copy is compared at the end.
. "${srcdir:-.}/tests/functions.sh"
requires python3

request=$((256 * 1024))
mib=$((1024 * 1024))
head -c $((4 * mib)) /dev/urandom >"$tmp/src.raw"
mkfifo "$tmp/in"
"$NBDCP" --request-size=$request --progress-json=3 - "$tmp/out.raw" \
  <"$tmp/in" 3>"$tmp/json" 2>"$tmp/err" &
copy=$!
exec 5>"$tmp/in"

# bytes_done_at_least N: the last --progress-json line says N or more.
bytes_done_at_least ()
{
  python3 - "$tmp/json" "$1" <<'PY'
import json, sys
done = 0
for line in open(sys.argv[1]):
    try:
        done = max(done, json.loads(line).get("bytes_done") or 0)
    except ValueError:
        pass  # a line being written
sys.exit(0 if done >= int(sys.argv[2]) else 1)
PY
}

# written_prefix N: the destination's first N bytes are the source's.
written_prefix ()
{
  cmp -n "$1" "$tmp/src.raw" "$tmp/out.raw" >/dev/null 2>&1
}

for k in 1 2 3 4; do
  dd if="$tmp/src.raw" bs=$mib skip=$((k - 1)) count=1 status=none >&5
  want=$((k * mib - request))
  wait_until 30 bytes_done_at_least $want ||
    { tail -3 "$tmp/json" >&2; fail "after $k MiB of the stream, bytes_done is below $want"; }
  written_prefix $want ||
    fail "after $k MiB of the stream, the destination does not hold its first $want bytes"
done
exec 5>&-
wait $copy || { cat "$tmp/err" >&2; fail "the stream copy failed"; }
cmp "$tmp/src.raw" "$tmp/out.raw" || fail "the stream copy differs"
tail -1 "$tmp/json" | grep -q '"status": "ok"' || fail "the last line is not ok: $(tail -1 "$tmp/json")"
exit 0
