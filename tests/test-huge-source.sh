#!/bin/bash
# A source larger than nbdcp copies (128 TiB) is refused at once, with
# a message that says so and names the limit, before the destination
# is opened and before anything sized by the source is allocated: a
# server claiming 2^63-1 bytes (bad-nbd-server.py's huge mode, and
# nbdkit's null plugin) used to end in "out of memory" after asking
# for 512 GiB, and here runs under a 4 GiB address-space limit.
. "${srcdir:-.}/tests/functions.sh"
requires "$PYTHON"
requires_nbdkit_plugin null
[ "${SANITIZED:-no}" = no ] || skip "sanitizers reserve more address space"

start_bad_server huge huge
start_nbdkit null null size=$(((1 << 63) - 1))
start_nbdkit limit null size=128T

too_large="is too large: 9223372036854775807 bytes; nbdcp copies at most 140737488355328 bytes \(128\.0 TiB\)"
for src in huge null; do
  uri=$(uri_of "$tmp/$src.sock")
  for dst in null: "$tmp/$src.img"; do
    start=$(date +%s)
    (
      ulimit -v $((4 << 20))
      expect_fail "^nbdcp: source [^ ]*$src.sock $too_large" "$NBDCP" "$uri" "$dst"
    )
    [ $(($(date +%s) - start)) -lt 30 ] || fail "$src: refused, but slowly"
    [ ! -e "$tmp/$src.img" ] || fail "$src: the destination was created"
  done
done
# 128 TiB itself is copied (all of it a hole, to null:).
run_nbdcp "$(uri_of "$tmp/limit.sock")" null: ||
  fail "a 128 TiB source was not copied"
