#!/bin/bash
# --bitmap=NAME: an incremental copy from a qcow2 image's dirty bitmap,
# served by qemu-nbd -B, onto the previous full copy.  After data
# writes, write -z and discards (some across the 128 MiB segment
# boundary) the destination equals the source (qemu-img compare), and
# the destination's log shows writes and zeroes that cover exactly the
# dirty ranges, once: nothing clean is touched and nothing dirty is
# missed.  The dirty ranges come from nbdinfo --map, checked against
# what the test itself wrote.  Granularities 64K and 1M, -C 4, an empty
# bitmap (nothing written, exit 0), a missing bitmap (fails naming the
# bitmaps the server has, nothing written), --no-extents, --allocated,
# --stats=json, -p and --progress-json; and the copies --bitmap
# refuses.
. "${srcdir:-.}/tests/functions.sh"
requires "$QEMU_NBD"
requires "$QEMU_IMG"
requires qemu-io
requires nbdinfo
requires python3
requires_nbdkit_plugin file
requires_nbdkit_filter log

M=$((1024 * 1024))
K=1024

# compare_qcow2 QCOW2 RAW WHAT: qemu-img reads both the same.
compare_qcow2 ()
{
  "$QEMU_IMG" compare -f qcow2 -F raw "$1" "$2" >"$tmp/cmp.out" 2>&1 || {
    cat "$tmp/cmp.out" >&2
    fail "$3: the destination differs from the source (qemu-img compare)"
  }
}

# dirty_map QCOW2 BITMAP OUT: the bitmap's dirty runs, "offset length"
# per line, as nbdinfo (libnbd's own client, not nbdcp) reads them
# through a qemu-nbd of its own.
dirty_map ()
{
  nbdinfo --map="qemu:dirty-bitmap:$2" -- \
    [ "$QEMU_NBD" -r -f qcow2 -B "$2" "$1" ] >"$tmp/map.raw"
  awk '$3 == 1 { printf "%.0f %.0f\n", $1, $2 }' "$tmp/map.raw" | merge_runs >"$3"
}

# merge_runs: sorted "offset length" lines joined where they touch; an
# overlap is an error (a range written twice).
merge_runs ()
{
  sort -k1,1n | awk '
    NR > 1 && $1 < end { printf "overlap at %.0f\n", $1 > "/dev/stderr"; exit 1 }
    NR > 1 && $1 == end { end += $2; next }
    NR > 1 { printf "%.0f %.0f\n", start, end - start }
    { start = $1; end = $1 + $2 }
    END { if (NR > 0) printf "%.0f %.0f\n", start, end - start }'
}

# expected_runs GRANULARITY "OFFSET LENGTH"...: the runs a bitmap of
# that granularity marks after writes to those ranges.
expected_runs ()
{
  local g=$1
  shift
  printf '%s\n' "$@" | awk -v g="$g" '{
      s = int($1 / g) * g; e = int(($1 + $2 + g - 1) / g) * g
      printf "%.0f %.0f\n", s, e - s }' | sort -k1,1n | awk '
    NR > 1 && $1 <= end { if ($1 + $2 > end) end = $1 + $2; next }
    NR > 1 { printf "%.0f %.0f\n", start, end - start }
    { start = $1; end = $1 + $2 }
    END { if (NR > 0) printf "%.0f %.0f\n", start, end - start }'
}

# touched LOG: the Write, Zero and Trim requests in an nbdkit log, as
# merged runs (fails on an overlap).
touched ()
{
  logged_writes "$1" | merge_runs
}

# incremental NAME QCOW2 BASE BITMAP NBDCP-ARGS...: serve a copy of the
# full copy BASE with nbdkit's log filter, copy QCOW2's BITMAP onto it
# with nbdcp, and check it: equal to the source, and written exactly
# where the bitmap is dirty.  The copy is $tmp/NAME.raw, the log
# $tmp/NAME.log, nbdcp's stderr $tmp/NAME.err.
incremental ()
{
  local name=$1 qcow=$2 base=$3 bitmap=$4
  shift 4
  cp --sparse=always "$base" "$tmp/$name.raw"
  dirty_map "$qcow" "$bitmap" "$tmp/$name.dirty"
  start_nbdkit "$name-dst" --filter=log file "$tmp/$name.raw" \
    logfile="$tmp/$name.log"
  start_qemu_nbd "$name-src" -r -t -e 4 -f qcow2 -B "$bitmap" "$qcow"
  # Every dirty byte written (not skipped where the destination reads
  # as zero), so that the writes are exactly the dirty ranges.
  run_nbdcp --no-destination-extents "$@" --bitmap="$bitmap" \
    "$(uri_of "$tmp/$name-src.sock")" \
    "$(uri_of "$tmp/$name-dst.sock")" 2>"$tmp/$name.err" || {
    cat "$tmp/$name.err" >&2
    fail "$name: nbdcp --bitmap failed"
  }
  stop_servers
  compare_qcow2 "$qcow" "$tmp/$name.raw" "$name"
  touched "$tmp/$name.log" >"$tmp/$name.touched" ||
    fail "$name: a range was written twice"
  if ! cmp -s "$tmp/$name.dirty" "$tmp/$name.touched"; then
    echo "dirty ranges:" >&2
    cat "$tmp/$name.dirty" >&2
    echo "written or zeroed:" >&2
    cat "$tmp/$name.touched" >&2
    fail "$name: the writes are not exactly the dirty ranges"
  fi
}

# --- 64K granularity, 300M: three segments -------------------------------
src=$tmp/src.qcow2
"$QEMU_IMG" create -q -f qcow2 "$src" 300M
qemu-io -f qcow2 -c 'write -P 0x11 0 20M' -c 'write -P 0x22 120M 16M' \
  -c 'write -P 0x33 250M 10M' -c 'write -P 0x44 299M 1M' "$src" >/dev/null
# The bitmap starts with the full copy, as a backup tool's does.
"$QEMU_IMG" bitmap --add --enable -g 64K "$src" b0
"$QEMU_IMG" bitmap --add --enable -g 64K "$src" empty
start_qemu_nbd full -r -f qcow2 "$src"
run_nbdcp "$(uri_of "$tmp/full.sock")" "$tmp/full.raw"
stop_servers
compare_qcow2 "$src" "$tmp/full.raw" "full copy"

# The empty bitmap: nothing to copy, nothing written, exit 0.
incremental empty "$src" "$tmp/full.raw" empty --stats=json
[ ! -s "$tmp/empty.touched" ] || fail "empty bitmap: something was written"
grep -q '"dirty_bytes": 0, "clean_bytes": 314572800' "$tmp/empty.err" ||
  fail "empty bitmap: stats wrong: $(cat "$tmp/empty.err")"
"$QEMU_IMG" bitmap --remove "$src" empty

# The guest's writes: data, zeroes, discards; a 4K write (one 64K
# granule), runs across the 128M and 256M segment boundaries, the end;
# and over old data, zeroes at 14M with new data right after them at
# 15M: one dirty run that base:allocation splits into a zero extent and
# a data extent (both must reach the destination, which holds 0x11
# there).
writes=(
  "$((1 * M)) $((4 * K))"
  "$((5 * M + 100 * K)) $((300 * K))"
  "$((10 * M)) $((2 * M))"
  "$((127 * M + 512 * K)) $((M))"
  "$((130 * M)) $((3 * M))"
  "$((200 * M)) $((64 * K))"
  "$((255 * M)) $((2 * M))"
  "$((299 * M + 960 * K)) $((64 * K))"
  "$((14 * M)) $((M))"
  "$((15 * M)) $((M))"
)
qemu-io -f qcow2 \
  -c "write -P 0x55 ${writes[0]}" \
  -c "write -P 0x66 ${writes[1]}" \
  -c "write -z ${writes[2]}" \
  -c "write -P 0x77 ${writes[3]}" \
  -c "discard ${writes[4]}" \
  -c "write -P 0x88 ${writes[5]}" \
  -c "write -z ${writes[6]}" \
  -c "write -P 0x99 ${writes[7]}" \
  -c "write -z ${writes[8]}" \
  -c "write -P 0xaa ${writes[9]}" \
  "$src" >/dev/null

# The oracle itself: nbdinfo's dirty map is what the test wrote.
expected_runs $((64 * K)) "${writes[@]}" >"$tmp/expected"
dirty_map "$src" b0 "$tmp/nbdinfo"
cmp -s "$tmp/expected" "$tmp/nbdinfo" || {
  cat "$tmp/expected" "$tmp/nbdinfo" >&2
  fail "nbdinfo's dirty map is not what was written"
}

# ... in which 14M-16M is one dirty run, and base:allocation says zero
# for its first half, data for its second.
grep -q "^$((14 * M)) $((2 * M))\$" "$tmp/nbdinfo" ||
  fail "14M-16M is not one dirty run: $(cat "$tmp/nbdinfo")"
nbdinfo --map -- [ "$QEMU_NBD" -r -f qcow2 "$src" ] >"$tmp/alloc.map"
awk -v z=$((14 * M)) -v d=$((15 * M)) -v e=$((16 * M)) '
  $1 <= z && z < $1 + $2 && $1 + $2 >= d && $3 % 4 >= 2 { zero = 1 }
  $1 <= d && d < $1 + $2 && $1 + $2 >= e && $3 % 4 < 2 { data = 1 }
  END { exit !(zero && data) }' "$tmp/alloc.map" ||
  fail "14M-15M is not zero and 15M-16M data: $(cat "$tmp/alloc.map")"

incremental inc "$src" "$tmp/full.raw" b0 -v --stats=json
dirty=$(awk '{ n += $2 } END { printf "%.0f", n }' "$tmp/inc.dirty")
python3 - "$tmp/inc.err" "$dirty" <<'PY' || fail "stats: $(grep '^{' "$tmp/inc.err")"
import json, sys
s = json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][0])
dirty = int(sys.argv[2])
assert s["ok"] and s["bitmap"] == "b0", s
assert s["dirty_bytes"] == dirty, s
assert s["clean_bytes"] == s["size"] - dirty == s["skipped_bytes"], s
assert s["data_bytes"] + s["zero_bytes"] == dirty, s
PY
grep -q 'bitmap b0: .* the smallest run is 64.0 KiB, and every boundary a multiple of 64.0 KiB' \
  "$tmp/inc.err" || fail "-v: no granularity: $(grep bitmap "$tmp/inc.err")"

# Several connections, each with the bitmap; and -p counting only the
# dirty bytes as the work: "100% of X" with X the dirty size.
incremental multi "$src" "$tmp/full.raw" b0 -C 4 -T 4 -p
python3 - "$tmp/multi.err" "$dirty" <<'PY' || fail "-p: $(cat "$tmp/multi.err")"
import re, sys
lines = [l for l in open(sys.argv[1]) if re.match(r"\d+% ", l)]
m = re.match(r"100% of ([0-9.]+) MiB, ", lines[-1])
assert m and len(lines) == 10, lines
assert abs(float(m.group(1)) * 2**20 - int(sys.argv[2])) < 0.06 * 2**20, lines[-1]
PY

# --progress-json the same: every line's bytes_total is the dirty size,
# bytes_done never more, and it ends "ok".
incremental pj "$src" "$tmp/full.raw" b0 -C 2 -T 2 --progress-json=3 \
  3>"$tmp/pj.json"
python3 - "$tmp/pj.json" "$dirty" <<'PY' || fail "--progress-json: $(cat "$tmp/pj.json")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
dirty = int(sys.argv[2])
counted = [l for l in lines if "bytes_total" in l]
assert counted, lines
assert all(l["bytes_total"] == dirty >= l["bytes_done"] for l in counted), counted
assert all(l["percent"] <= 99 for l in counted), counted
assert lines[-1]["phase"] == "end" and lines[-1]["status"] == "ok", lines[-1]
PY

# --no-extents: dirty ranges are read whole, holes and all.
incremental noext "$src" "$tmp/full.raw" b0 --no-extents
# --allocated: the dirty ranges end up allocated (zeroes written with
# NO_HOLE), the clean ones are left alone.
incremental alloc "$src" "$tmp/full.raw" b0 --allocated
grep ' Zero ' "$tmp/alloc.log" | grep -q 'may_trim=1' &&
  fail "--allocated: a zero request may trim"

# --- 1M granularity --------------------------------------------------------
src2=$tmp/src2.qcow2
"$QEMU_IMG" create -q -f qcow2 "$src2" 64M
qemu-io -f qcow2 -c 'write -P 0x21 0 8M' -c 'write -P 0x22 40M 4M' \
  "$src2" >/dev/null
"$QEMU_IMG" bitmap --add --enable -g 1M "$src2" big
start_qemu_nbd full2 -r -f qcow2 "$src2"
run_nbdcp "$(uri_of "$tmp/full2.sock")" "$tmp/full2.raw"
stop_servers
compare_qcow2 "$src2" "$tmp/full2.raw" "full copy, 1M bitmap"
qemu-io -f qcow2 -c "write -P 0x31 $((5 * M + 100 * K)) 4K" \
  -c "write -P 0x32 $((10 * M - 4 * K)) 8K" -c "write -z $((41 * M)) 4K" \
  "$src2" >/dev/null
expected_runs "$M" "$((5 * M + 100 * K)) 4096" "$((10 * M - 4 * K)) 8192" \
  "$((41 * M)) 4096" >"$tmp/expected2"
incremental big "$src2" "$tmp/full2.raw" big -v
cmp -s "$tmp/expected2" "$tmp/big.dirty" || fail "1M: unexpected dirty map"
grep -q 'every boundary a multiple of 1.0 MiB' "$tmp/big.err" ||
  fail "-v: 1M granularity not seen: $(grep bitmap "$tmp/big.err")"

# --- Refusals, before anything is written --------------------------------
cp --sparse=always "$tmp/full.raw" "$tmp/keep.raw"
start_nbdkit miss --filter=log file "$tmp/keep.raw" logfile="$tmp/miss.log"
start_qemu_nbd msrc -r -t -f qcow2 -B b0 "$src"
msrc=$(uri_of "$tmp/msrc.sock")
expect_fail "no dirty bitmap 'nosuch'.*offers .*qemu:dirty-bitmap:b0" \
  "$NBDCP" --bitmap=nosuch "$msrc" "$(uri_of "$tmp/miss.sock")"
expect_fail "no dirty bitmap 'nosuch'" \
  "$NBDCP" --bitmap=nosuch "$msrc" "$tmp/keep.raw"
expect_fail 'cannot be used with --destination-is-zero' \
  "$NBDCP" --bitmap=b0 --destination-is-zero "$msrc" "$tmp/keep.raw"
expect_fail 'cannot be used with --blkhash' \
  "$NBDCP" --bitmap=b0 --blkhash "$msrc" null:
expect_fail 'cannot be used with a stream' \
  "$NBDCP" --bitmap=b0 - "$tmp/keep.raw" < <(echo)
# Standard output on a new (empty) file is a new file.
expect_fail 'destination - does not exist or is empty' \
  "$NBDCP" --bitmap=b0 "$msrc" -
expect_fail 'needs an NBD source' \
  "$NBDCP" --bitmap=b0 "$tmp/full.raw" "$tmp/keep.raw"
expect_fail 'does not exist or is empty' \
  "$NBDCP" --bitmap=b0 "$msrc" "$tmp/new.raw"
[ ! -e "$tmp/new.raw" ] || fail "a refused copy created its destination"
# A server with no bitmaps at all says which contexts it has.
start_nbdkit plain memory 1M
expect_fail "no dirty bitmap 'b0'.*offers base:allocation" \
  "$NBDCP" --bitmap=b0 "$(uri_of "$tmp/plain.sock")" "$tmp/keep.raw"
stop_servers
! grep -Eq ' (Write|Zero|Trim) ' "$tmp/miss.log" ||
  fail "a refused copy wrote to the destination"
check_same "$tmp/full.raw" "$tmp/keep.raw" "refused copies"

# A dry run onto null: is allowed.
start_qemu_nbd dry -r -f qcow2 -B b0 "$src"
run_nbdcp --bitmap=b0 "$(uri_of "$tmp/dry.sock")" null:
