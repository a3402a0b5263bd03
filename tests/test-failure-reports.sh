#!/bin/bash
# What --stats=json, --stats and --progress-json say when a copy does
# not succeed, for each way it can end and each phase a signal can
# come in:
# - refused before copying (a destination too small): one progress
#   line, {"phase": "end", "status": "failed"}, and no stats saying ok;
# - an error reply in the middle (EIO on writes) and --timeout (writes
#   never answered): exit 1, "ok": false, data + zeroed + skipped less
#   than the size, --stats's first line "FAILED after", progress only
#   "copy" lines below 100% and then "failed";
# - SIGTERM in the copy (a write waiting in the server), in the final
#   flush (a flush that sleeps) and in --verify's read-back (slow
#   reads): exit 143 or 130, "interrupted by signal", progress whose
#   last line is "interrupted" after the phase it came in; the stats
#   say "ok": false for the copy and flush (in the flush with every
#   byte counted: written, not flushed), and in --verify the copy's
#   own "ok": true (they are printed before --verify reads back, as
#   tests/fault-matrix.py asserts too).
# Every case gets fresh servers: nbdkit 1.32 may abort when a client
# goes away while it answers.
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires_nbdkit_plugin pattern
requires_nbdkit_plugin memory
requires_nbdkit_plugin eval
requires_nbdkit_filter delay
requires_nbdkit_filter error
requires_nbdkit_filter log

size=$((64 * 1024 * 1024))
n=0
# fresh_src: a new 64 MiB pattern source in $src.
fresh_src ()
{
  n=$((n + 1))
  start_nbdkit "src$n" -r pattern size=$size
  src=$(uri_of "$tmp/src$n.sock")
}

# reports WHAT STATUS OK PHASES: the --stats=json line in $tmp/err and
# the --progress-json lines in $tmp/pj after a copy that ended with
# STATUS ("failed" or "interrupted").  OK: "none" (a stats line, if
# any, says "ok": false), "true" (one says "ok": true), "false" (one
# says "ok": false, and data + zeroed + skipped are less than the
# size) or "unflushed" (one says "ok": false, every byte counted).
# The progress lines' phases are PHASES (an ERE over their names
# joined by spaces), the last one "end" with STATUS, and none at 100%.
reports ()
{
  python3 - "$tmp/err" "$tmp/pj" "$2" "$3" "$4" "$size" <<'PY' ||
import json, re, sys
err, pj, status, ok, phases, size = sys.argv[1:]
size = int(size)
stats = [json.loads(l) for l in open(err) if l.startswith("{")]
if ok == "none":
    assert all(s["ok"] is False for s in stats), stats
else:
    assert len(stats) == 1, stats
    s = stats[0]
    assert s["ok"] is (ok == "true"), s
    assert s["size"] == size, s
    done = s["data_bytes"] + s["zero_bytes"] + s["skipped_bytes"]
    assert done < size if ok == "false" else done == size, s
lines = [json.loads(l) for l in open(pj)]
names = " ".join(l["phase"] for l in lines)
assert re.fullmatch(phases, names), names
assert lines[-1]["phase"] == "end" and lines[-1]["status"] == status, lines[-1]
assert all(l.get("percent", 0) < 100 for l in lines), lines
PY
    { cat "$tmp/err" "$tmp/pj"; fail "$1: wrong stats or progress (above)"; }
  echo "$1: $(grep '^nbdcp: ' "$tmp/err" | head -n 1); progress ends $(tail -n 1 "$tmp/pj")"
}

# 1. Refused before copying: a destination smaller than the source.
fresh_src
start_nbdkit small memory size=1M
expect_fail '^nbdcp: destination .* is smaller than source' \
  "$NBDCP" --stats=json --progress-json=3 "$src" "$(uri_of "$tmp/small.sock")" \
  3>"$tmp/pj"
reports "refused" failed none 'end'

# 2. An error reply: every write fails with EIO.
fresh_src
start_nbdkit eio --filter=error memory size=$size error-pwrite=EIO \
  error-pwrite-rate=100%
expect_fail '^nbdcp: destination write at offset [0-9]+ length [0-9]+ failed: Input/output error$' \
  "$NBDCP" --stats=json --progress-json=3 "$src" "$(uri_of "$tmp/eio.sock")" \
  3>"$tmp/pj"
reports "EIO" failed false '(copy )*end'
# The text summary says so too.
fresh_src
start_nbdkit eio2 --filter=error memory size=$size error-pwrite=EIO \
  error-pwrite-rate=100%
expect_fail '^nbdcp: destination write at offset [0-9]+ length [0-9]+ failed: Input/output error$' \
  "$NBDCP" --stats "$src" "$(uri_of "$tmp/eio2.sock")"
grep -q '^nbdcp: FAILED after ' "$tmp/err" ||
  { cat "$tmp/err"; fail "--stats: a failed copy is not said to have failed"; }
! grep -q '^nbdcp: copied ' "$tmp/err" || fail "--stats: a failed copy 'copied'"
# Every write failed: nothing was done, of the whole size.
grep -Eq '^nbdcp: FAILED after 0 bytes of [0-9.]+ [KMG]iB in ' "$tmp/err" ||
  { cat "$tmp/err"; fail "--stats: a failed copy's bytes done are not what was done"; }
# A hole before the first write, skipped (the destination reads as
# zero), is done: 1 MiB of 2 MiB.
truncate -s 1M "$tmp/hole-first.raw"
head -c $((1024 * 1024)) /dev/urandom >>"$tmp/hole-first.raw"
start_nbdkit eio3 --filter=error memory size=2M error-pwrite=EIO \
  error-pwrite-rate=100%
expect_fail '^nbdcp: destination write at offset [0-9]+ length [0-9]+ failed: Input/output error$' \
  "$NBDCP" -C 1 --stats "$tmp/hole-first.raw" "$(uri_of "$tmp/eio3.sock")"
grep -q '^nbdcp: FAILED after 1.0 MiB of 2.0 MiB in ' "$tmp/err" &&
  grep -q '^  skipped        1.0 MiB (1048576 bytes, ' "$tmp/err" ||
  { cat "$tmp/err"; fail "--stats: a skipped hole is not counted as done"; }

# 3. --timeout: writes never answered.  (5 s: --timeout bounds the
# handshake too, which a loaded machine can make take seconds.)
fresh_src
start_nbdkit stuck --filter=delay memory size=$size wdelay=60
expect_fail '^nbdcp: destination (write|zero) at offset [0-9]+ length [0-9]+ failed: no reply in 5(\.0)? seconds \(--timeout\)$' \
  "$NBDCP" --timeout=5 --stats=json --progress-json=3 "$src" \
  "$(uri_of "$tmp/stuck.sock")" 3>"$tmp/pj"
reports "--timeout" failed false '(copy )*end'

# interrupt WHAT SIGNAL STATUS READY NBDCP-ARGS...: nbdcp in the
# background, SIGNAL once the command READY succeeds, exit STATUS and
# "interrupted by signal" expected.
interrupt ()
{
  local what=$1 sig=$2 status=$3 ready=$4 pid r=0
  shift 4
  "$NBDCP" "$@" 3>"$tmp/pj" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  wait_until 60 bash -c "$ready" || { kill -KILL $pid; fail "$what: never ready"; }
  kill -0 $pid 2>/dev/null || { cat "$tmp/err"; fail "$what: nbdcp ended early"; }
  kill -"$sig" $pid
  ends_within $pid 30 || fail "$what: nbdcp still running 30 s after SIG$sig"
  wait $pid || r=$?
  [ $r -eq "$status" ] || { cat "$tmp/err"; fail "$what: exit $r, not $status"; }
  grep -q 'interrupted by signal' "$tmp/err" ||
    { cat "$tmp/err"; fail "$what: not 'interrupted by signal'"; }
}

# 4. A signal in the copy: a write waits in the server.
fresh_src
start_nbdkit slow --filter=log --filter=delay memory size=$size wdelay=30 \
  logfile="$tmp/slow.log"
interrupt "signal in the copy" TERM 143 \
  "grep -q 'Write' '$tmp/slow.log'" \
  -C 1 --stats=json --progress-json=3 "$src" "$(uri_of "$tmp/slow.sock")"
reports "signal in the copy" interrupted false '(copy )*end'

# 5. A signal in the final flush: every byte written, the flush sleeps.
fresh_src
start_nbdkit sleepy eval get_size="echo $size" can_write='exit 0' \
  pread='dd if=/dev/zero count=$3 iflag=count_bytes status=none' \
  pwrite='cat >/dev/null' can_flush='exit 0' \
  flush="touch '$tmp/flushing'; sleep 30"
interrupt "signal in the flush" TERM 143 "test -e '$tmp/flushing'" \
  -C 1 --stats=json --progress-json=3 "$src" "$(uri_of "$tmp/sleepy.sock")"
# (nbdkit would wait for the sleeping flush before it exits.)
kill -9 "${_pids[-1]}"
# The stats count every byte, none of them flushed: not ok.
reports "signal in the flush" interrupted unflushed '(copy )*(flush )+end'

# 6. A signal in --verify's read-back: the destination's reads are slow.
fresh_src
start_nbdkit slowread --filter=delay memory size=$size rdelay=5
interrupt "signal in --verify" INT 130 \
  "grep -q '\"phase\": \"verify\"' '$tmp/pj'" \
  --verify --stats=json --progress-json=3 "$src" \
  "$(uri_of "$tmp/slowread.sock")"
grep -q '^nbdcp: --verify: reading the destination back: interrupted by signal' \
  "$tmp/err" || { cat "$tmp/err"; fail "signal in --verify: message"; }
reports "signal in --verify" interrupted true '(copy )*(flush )*(verify )+end'
