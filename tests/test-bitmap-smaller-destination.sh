#!/bin/bash
# --bitmap onto a destination file smaller than the source is refused
# before anything is written: exit 1, a message naming both sizes, and
# the file left as it was (not extended with zeroes, which would leave
# a "copy" that differs from the source wherever the bitmap is clean
# beyond the file's old end).  A destination of the source's size is
# still copied onto, and then equals the source.
. "${srcdir:-.}/tests/functions.sh"
requires "$QEMU_NBD"
requires "$QEMU_IMG"
requires qemu-io

M=$((1024 * 1024))
src=$tmp/src.qcow2
"$QEMU_IMG" create -q -f qcow2 "$src" 8M
qemu-io -f qcow2 -c 'write -P 0x11 0 8M' "$src" >/dev/null
"$QEMU_IMG" bitmap --add --enable -g 64K "$src" b0
# The full copy, made when the bitmap started, read by qemu-img.
"$QEMU_IMG" convert -f qcow2 -O raw "$src" "$tmp/full.raw"
qemu-io -f qcow2 -c "write -P 0x22 $M 64K" "$src" >/dev/null

# The destination holds only the first 4 MiB of the full copy.
head -c $((4 * M)) "$tmp/full.raw" >"$tmp/small.raw"
cp "$tmp/small.raw" "$tmp/small.orig"
start_qemu_nbd src -r -t -f qcow2 -B b0 "$src"
srcuri=$(uri_of "$tmp/src.sock")
expect_fail "destination $tmp/small.raw \\(4194304 bytes\\) is smaller than source .*\\(8388608 bytes\\)" \
  "$NBDCP" --bitmap=b0 "$srcuri" "$tmp/small.raw"
cmp "$tmp/small.orig" "$tmp/small.raw" ||
  fail "the refused destination was changed (size $(stat -c %s "$tmp/small.raw"))"
# With --resume too: refused the same way, and no journal is left.
expect_fail "is smaller than source" \
  "$NBDCP" --bitmap=b0 --resume="$tmp/journal" "$srcuri" "$tmp/small.raw"
cmp "$tmp/small.orig" "$tmp/small.raw" || fail "--resume: destination changed"
[ ! -e "$tmp/journal" ] || fail "--resume: a refused copy left its journal"

# The full copy itself is brought up to date.
run_nbdcp --bitmap=b0 "$srcuri" "$tmp/full.raw"
stop_servers
"$QEMU_IMG" compare -q -f qcow2 -F raw "$src" "$tmp/full.raw" ||
  fail "the incremental copy onto the full copy differs from the source"
