#!/bin/bash
# The counts -v reports, with their plurals: the size being copied
# ("copying 4194304 bytes: 1 lane on 1 thread", or "until the source
# stream ends" for a stream); an empty disk gets one
# connection ("1 connection: the disk has 1 segment of 128 MiB", and
# the copy is done); --verify reads back "on 1 connection" or "on 2
# connections", as many as the copy used.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin memory
requires cmp

start_nbdkit empty memory size=0
empty=$(uri_of "$tmp/empty.sock")
run_nbdcp -v -C 4 "$empty" null: 2>"$tmp/err" || { cat "$tmp/err"; fail "empty disk: copy failed"; }
grep -qxF "nbdcp: $empty: 1 connection: the disk has 1 segment of 128 MiB" "$tmp/err" ||
  { grep -i segment "$tmp/err"; fail "empty disk: not one connection for one segment"; }
grep -q "^nbdcp: copying 0 bytes: 1 lane on 1 thread, " "$tmp/err" ||
  { grep copying "$tmp/err"; fail "empty disk: not 'copying 0 bytes'"; }

head -c $((4 * 1024 * 1024)) /dev/urandom >"$tmp/src.raw"
run_nbdcp -v --verify "$tmp/src.raw" "$tmp/one.raw" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "--verify, 1 connection: copy failed"; }
grep -qxF "nbdcp: --verify: reading back 4194304 bytes of $tmp/one.raw on 1 connection" "$tmp/err" ||
  { grep -i verify "$tmp/err"; fail "--verify, 1 connection: wrong count"; }
grep -q "^nbdcp: copying 4194304 bytes: 1 lane on 1 thread, " "$tmp/err" ||
  { grep copying "$tmp/err"; fail "-v: the copy's size and lanes are not given"; }
cmp "$tmp/src.raw" "$tmp/one.raw" || fail "--verify, 1 connection: copy differs"
# A stream source (a pipe) has no size to give.
cat "$tmp/src.raw" | run_nbdcp -v - "$tmp/stream.raw" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "stream source: copy failed"; }
grep -q "^nbdcp: copying until the source stream ends: 1 lane on 1 thread, " "$tmp/err" ||
  { grep copying "$tmp/err"; fail "-v, stream source: wrong line"; }
cmp "$tmp/src.raw" "$tmp/stream.raw" || fail "stream source: copy differs"
# Three segments of 128 MiB or less (260 MiB: 4 MiB of data, the rest
# a hole), on two connections (-C 2 -T 2, whatever the CPUs).
cp "$tmp/src.raw" "$tmp/big.raw"
truncate -s $((260 * 1024 * 1024)) "$tmp/big.raw"
start_nbdkit big -r file "$tmp/big.raw"
run_nbdcp -v -C 2 -T 2 --verify "$(uri_of "$tmp/big.sock")" "$tmp/two.raw" 2>"$tmp/err" ||
  { cat "$tmp/err"; fail "--verify, 2 connections: copy failed"; }
grep -qxF "nbdcp: --verify: reading back 272629760 bytes of $tmp/two.raw on 2 connections" "$tmp/err" ||
  { grep -i verify "$tmp/err"; fail "--verify, 2 connections: wrong count"; }
cmp "$tmp/big.raw" "$tmp/two.raw" || fail "--verify, 2 connections: copy differs"
