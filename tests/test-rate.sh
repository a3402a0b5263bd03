#!/bin/bash
# --rate=SIZE holds the reads to SIZE bytes per second over all
# connections: 64 MiB of data at 16M takes at least 3.5 s (4 s, less the
# credit of four requests at the start), with one connection and with
# two, and at 32M at least 1.75 s; only lower bounds, so a slow machine
# never fails it.  Holes cost nothing: a 4 GiB disk with 64 MiB of data
# copies at 64M in less than the 64 s its size would take.  Each copy is
# compared with the source, --stats=json names the limit, and bad
# values are refused.
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

# Holes are not read, so they are not held back.
start_nbdkit sparse -r sparse-random size=4G percent=1.5 seed=3
start_nbdkit sdst memory size=4G
start=$SECONDS
run_nbdcp --rate=64M "$(uri_of "$tmp/sparse.sock")" "$(uri_of "$tmp/sdst.sock")"
[ $((SECONDS - start)) -lt 60 ] || fail "holes were held to the rate"
check_same "$(uri_of "$tmp/sparse.sock")" "$(uri_of "$tmp/sdst.sock")" "sparse"

for bad in 0 512 abc -1; do
  expect_fail "^nbdcp: --rate" "$NBDCP" --rate=$bad "$src" null:
done
