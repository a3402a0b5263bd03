#!/bin/bash
# --progress-json=FD: one JSON object per line for programs.  A slowed
# copy with --verify gives, in order, "copy" lines (bytes going up, the
# total the size, at least one strictly between 0% and 100% with a rate
# and an ETA), then "flush" once every byte is written, then "verify"
# lines, then {"phase": "end", "status": "ok"}; a failed copy ends with
# "failed" and never claims to be verifying.  A stream source's lines
# have a null total and ETA.  The numbers agree with the test's:
# elapsed time within the time measured around nbdcp; in a copy held to
# 16M by --rate, the rate within a factor of 3 of the bytes done over
# the elapsed time and not above the limit, the ETA what is left at
# that rate.  Descriptor 0 works like any other.
# --progress=FD writes 0/100
# before anything else, as nbdcopy does.  The copies are checked.
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires "$QEMU_IMG"
start_progress_sources

start=$EPOCHREALTIME
run_nbdcp --progress-json=3 --verify -C 2 -T 2 -R 2 "$src" "$tmp/out.raw" \
  3>"$tmp/json"
wall=$(echo "$EPOCHREALTIME - $start" | bc)
cat "$tmp/json"
check_same "$ref" "$tmp/out.raw" "--progress-json"
python3 - "$tmp/json" $((64 * 1024 * 1024)) "$wall" <<'PY' || fail "--progress-json: wrong lines (above)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
size = int(sys.argv[2])
wall = float(sys.argv[3])
# Elapsed time (from the start of the copy, then from that of the
# verification) never past the time the test measured around nbdcp,
# nor going back.
for group in (("copy", "flush"), ("verify",), ("end",)):
    elapsed = [l["elapsed_seconds"] for l in lines if l["phase"] in group]
    assert elapsed == sorted(elapsed), (group, elapsed)
    assert all(0 <= e <= wall + 0.1 for e in elapsed), (group, elapsed, wall)
phases = [l["phase"] for l in lines]
order = {"copy": 0, "flush": 1, "verify": 2, "end": 3}
assert phases == sorted(phases, key=order.get), phases
assert phases[-1] == "end" and lines[-1]["status"] == "ok", lines[-1]
assert phases.count("end") == 1, phases
assert "verify" in phases, phases
copy = [l for l in lines if l["phase"] == "copy"]
assert any(0 < l["percent"] < 100 and l["eta_seconds"] is not None
           and l["bytes_per_second"] > 0 for l in copy), copy
for phase in ("copy", "flush", "verify"):
    done = [l["bytes_done"] for l in lines if l["phase"] == phase]
    assert done == sorted(done), (phase, done)
for l in lines[:-1]:
    assert l["bytes_total"] == size, l
    assert 0 <= l["bytes_done"] <= size, l
    assert l["percent"] == min(99, l["bytes_done"] * 100 // size), l
for l in lines:
    if l["phase"] == "flush":
        assert l["bytes_done"] == size, l
PY

# A stream source (its size unknown, read through a pipe from the
# slowed ssrc): bytes_total and eta_seconds are null on every line,
# bytes_done only goes up, and it ends "ok".
run_nbdcp "$(uri_of "$tmp/ssrc.sock")" - |
  run_nbdcp --progress-json=3 - "$tmp/stream.raw" 3>"$tmp/json.stream"
cat "$tmp/json.stream"
check_same "$(uri_of "$tmp/sref.sock")" "$tmp/stream.raw" "stream source"
python3 - "$tmp/json.stream" <<'PY' || fail "--progress-json, stream source: wrong lines (above)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines[-1] == {"phase": "end", "status": "ok",
                     "elapsed_seconds": lines[-1]["elapsed_seconds"]}, lines[-1]
counted = lines[:-1]
assert counted and all(l["bytes_total"] is None and l["eta_seconds"] is None
                       for l in counted), counted
done = [l["bytes_done"] for l in counted]
assert done == sorted(done) and done[-1] <= 16 * 1024 * 1024, done
PY

# A steady copy, held to 16M by --rate, 64 MiB in about 4 s: each
# rate from the second half-second on is within a factor of 3 of the
# bytes done over the time elapsed, and not above the limit and a
# quarter; each ETA is what is left at that rate.
run_nbdcp --progress-json=3 --rate=16M "$ref" null: 3>"$tmp/json.rate"
python3 - "$tmp/json.rate" $((64 * 1024 * 1024)) <<'PY' || { cat "$tmp/json.rate"; fail "--progress-json: wrong rate or ETA (above)"; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
size = int(sys.argv[2])
checked = 0
for l in lines:
    if l["phase"] != "copy" or l["elapsed_seconds"] < 0.5 or l["bytes_done"] == 0:
        continue
    average = l["bytes_done"] / l["elapsed_seconds"]
    assert average / 3 <= l["bytes_per_second"] <= average * 3, (l, average)
    assert l["bytes_per_second"] <= 16 * 1024 * 1024 * 1.25, l
    left = (size - l["bytes_done"]) / l["bytes_per_second"]
    assert abs(l["eta_seconds"] - left) <= 0.051 + left * 1e-6, (l, left)
    checked += 1
assert checked >= 4, "fewer than 4 lines to check the rate of"
PY

# Descriptor 0 is a descriptor like any other (opened for writing).
run_nbdcp --progress-json=0 "$ref" "$tmp/fd0.raw" 0>"$tmp/json.fd0" ||
  fail "--progress-json=0: the copy failed"
grep -q '"phase": "flush", "bytes_done": 67108864' "$tmp/json.fd0" &&
  tail -n 1 "$tmp/json.fd0" |
  grep -Eq '^\{"phase": "end", "status": "ok", "elapsed_seconds": [0-9.]+\}$' ||
  fail "--progress-json=0: wrote '$(cat "$tmp/json.fd0")'"

# A failed copy (the destination is read-only): "failed" at the end.
start_nbdkit ro -r memory size=64M
expect_fail 'read-only' "$NBDCP" --progress-json=3 "$src" \
  "$(uri_of "$tmp/ro.sock")" 3>"$tmp/json.fail"
tail -n 1 "$tmp/json.fail" | grep -q '"phase": "end", "status": "failed"' ||
  fail "a failed copy: last line $(tail -n 1 "$tmp/json.fail")"

# --progress=FD: 0/100 first.
run_nbdcp --progress=3 "$src" "$tmp/fd.raw" 3>"$tmp/fd"
[ "$(head -n 1 "$tmp/fd")" = 0/100 ] || fail "--progress=FD: first line $(head -n 1 "$tmp/fd")"
check_same "$ref" "$tmp/fd.raw" "--progress=FD"
