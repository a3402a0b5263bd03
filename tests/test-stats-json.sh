#!/bin/bash
# --stats=json is one valid JSON object whose byte counts add up to the
# disk size (data + zeroed + skipped), with exactly the holes of the
# source, as nbdinfo --map sees them, counted as never read (not the
# zero blocks found in what was read).  --stats prints the text summary, each figure
# matching its byte count.
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires "$QEMU_IMG"
requires nbdinfo

# 512 MiB with two pages of data: everything else is hole.
start_nbdkit src -r data '@1048576 1 @268435456 2' size=512M
src=$(uri_of "$tmp/src.sock")
# The bytes the source says read as zero (type 2: zero, 3: hole,zero),
# as libnbd's nbdinfo reads its map.  The data plugin's pages are 32K,
# whole multiples of any block nbdcp fits extents to.
holes=$(nbdinfo --map "$src" |
  awk '$3 == 2 || $3 == 3 { n += $2 } END { printf "%.0f", n }')
[ "$holes" -gt 0 ] && [ "$holes" -lt $((512 * 1024 * 1024)) ] ||
  fail "nbdinfo --map: holes $holes"
# Each copy goes to a fresh memory disk (--destination-is-zero needs
# one), and is compared with the source.
for i in 1 2 3 4; do
  start_nbdkit dst$i memory size=512M
done

check ()
{
  python3 - "$1" "$2" "$holes" <<'PY'
import json, sys
with open(sys.argv[1]) as f:
    lines = [l for l in f if l.startswith("{")]
assert len(lines) == 1, "expected one JSON line, got %d" % len(lines)
s = json.loads(lines[0])
size = 512 * 1024 * 1024
assert s["ok"] is True, s
assert s["size"] == size, s
assert s["data_bytes"] + s["zero_bytes"] + s["skipped_bytes"] == size, s
assert s["data_bytes"] > 0 and s["data_bytes"] <= 2 * 65536, s
assert s["hole_bytes"] == int(sys.argv[3]), (sys.argv[3], s)
assert s["source_connections"] >= 1 and s["destination_connections"] >= 1, s
if sys.argv[2] == "skip":
    assert s["zero_bytes"] == 0 and s["skipped_bytes"] > 0, s
    assert s["already_zero_bytes"] == 0, s
elif sys.argv[2] == "already":
    # A fresh memory disk says it reads as zero: nothing zeroed.
    assert s["zero_bytes"] == 0, s
    assert s["skipped_bytes"] == s["already_zero_bytes"] > 0, s
else:
    assert s["skipped_bytes"] == 0 and s["zero_bytes"] > 0, s
PY
}

run_nbdcp --stats=json --no-destination-extents "$src" \
  "$(uri_of "$tmp/dst1.sock")" 2>"$tmp/s1"
check "$tmp/s1" zero || fail "stats do not add up: $(cat "$tmp/s1")"
check_same "$src" "$(uri_of "$tmp/dst1.sock")" "--stats=json"
run_nbdcp --stats=json "$src" "$(uri_of "$tmp/dst4.sock")" 2>"$tmp/s4"
check "$tmp/s4" already || fail "stats do not add up: $(cat "$tmp/s4")"
check_same "$src" "$(uri_of "$tmp/dst4.sock")" "--stats=json, already zero"
run_nbdcp --stats=json --destination-is-zero "$src" "$(uri_of "$tmp/dst2.sock")" \
  2>"$tmp/s2"
check "$tmp/s2" skip || fail "stats do not add up: $(cat "$tmp/s2")"
check_same "$src" "$(uri_of "$tmp/dst2.sock")" "--stats=json --destination-is-zero"

run_nbdcp --stats "$src" "$(uri_of "$tmp/dst3.sock")" 2>"$tmp/s3"
check_same "$src" "$(uri_of "$tmp/dst3.sock")" "--stats"
grep -q '^nbdcp: copied 512.0 MiB in' "$tmp/s3" || fail "no text summary"
grep -q 'data written' "$tmp/s3" || fail "no data line in the summary"
# Each figure of the text summary is its own byte count, in human form
# (the 2 pages of data make "never read" 128 KiB short of the size).
python3 - "$tmp/s3" <<'PY' || fail "text summary figures wrong: $(cat "$tmp/s3")"
import re, sys
units = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
seen = 0
for line in open(sys.argv[1]):
    m = re.match(r"  (data written|zeroed|skipped|never read) +([0-9.]+) (\w+) \((\d+) bytes", line)
    if not m:
        continue
    seen += 1
    shown, exact = float(m.group(2)) * units[m.group(3)], int(m.group(4))
    assert abs(shown - exact) <= 0.05 * units[m.group(3)], line
    if m.group(1) == "never read":
        assert exact < 512 * 1024 * 1024 and m.group(2, 3) == ("511.9", "MiB"), line
assert seen == 4, seen
PY

# A failed copy reports "ok": false.
start_nbdkit bad --filter=error memory size=512M error-pwrite=EIO \
  error-pwrite-rate=100%
expect_fail 'destination write' "$NBDCP" --stats=json "$src" \
  "$(uri_of "$tmp/bad.sock")"
grep -q '"ok": false' "$tmp/err" || fail "failed copy not reported as such"
