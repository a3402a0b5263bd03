#!/bin/bash
# When libnbd gives a connection up because the server broke the
# protocol (a reply with a cookie no request used: bad-nbd-server.py's
# bad-cookie mode), the failure says why, in libnbd's words, not only
# "Transport endpoint is not connected" (all it said before).
. "${srcdir:-.}/tests/functions.sh"
requires "$PYTHON"

start_bad_server src bad-cookie --size=$((1 << 20))
uri=$(uri_of "$tmp/src.sock")

expect_fail "source read at offset [0-9]+ length [0-9]+ failed: .*cookie" \
  "$NBDCP" "$uri" null:
expect_fail "gave up after 1 retry" \
  "$NBDCP" --retry=1 --retry-delay=0.1 "$uri" null:
grep -q "cookie" "$tmp/err" || {
  cat "$tmp/err" >&2
  fail "--retry: the message does not give libnbd's reason"
}
