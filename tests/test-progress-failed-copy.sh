#!/bin/bash
# A copy that fails after all of its data was written (the final flush
# fails) never reports completion: --progress=FD writes no 100/100 line
# and -p no 100% line, though every byte was written; and the copy ends
# with exit 1.  (test-progress-fd.sh checks the copies that succeed.)
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin eval
requires_nbdkit_plugin pattern

# A destination that takes every write and zero but fails its flush.
# One connection, so that the flush comes after every write (with more,
# a connection with nothing to write flushes first and stops the copy).
start_nbdkit badflush eval get_size='echo 4194304' can_write='exit 0' \
  pread='dd if=/dev/zero count=$3 iflag=count_bytes status=none' \
  pwrite='cat >/dev/null' can_zero='exit 0' zero='exit 0' \
  can_flush='exit 0' flush='echo "EIO flush refused" >&2; exit 1'
start_nbdkit src -r pattern size=4M
src=$(uri_of "$tmp/src.sock")
dst=$(uri_of "$tmp/badflush.sock")

expect_fail '^nbdcp: destination flush failed' \
  "$NBDCP" -C 1 --progress=3 "$src" "$dst" 3>"$tmp/fd"
echo "--progress=3 wrote: $(tr '\n' ' ' <"$tmp/fd")"
if grep -q '^100/100$' "$tmp/fd"; then
  fail "--progress=FD: a copy whose flush failed reported 100/100"
fi
grep -q '^99/100$' "$tmp/fd" ||
  fail "test setup: the data was not all written before the flush failed"

expect_fail '^nbdcp: destination flush failed' "$NBDCP" -C 1 -p "$src" "$dst"
cat "$tmp/err"
if grep -q '100%' "$tmp/err"; then
  fail "-p: a copy whose flush failed reported 100%"
fi
