#!/bin/bash
# --progress-json=FD: one JSON object per line for programs.  A slowed
# copy with --verify gives, in order, "copy" lines (bytes going up, the
# total the size, at least one strictly between 0% and 100% with a rate
# and an ETA), then "flush" once every byte is written, then "verify"
# lines, then {"phase": "end", "status": "ok"}; a failed copy ends with
# "failed" and never claims to be verifying.  A stream source's lines
# have a null total and ETA.  --progress=FD writes 0/100
# before anything else, as nbdcopy does.  The copies are checked.
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires "$QEMU_IMG"
start_progress_sources

run_nbdcp --progress-json=3 --verify -C 2 -T 2 -R 2 "$src" "$tmp/out.raw" \
  3>"$tmp/json"
cat "$tmp/json"
check_same "$ref" "$tmp/out.raw" "--progress-json"
python3 - "$tmp/json" $((64 * 1024 * 1024)) <<'PY' || fail "--progress-json: wrong lines (above)"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
size = int(sys.argv[2])
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
