#!/bin/bash
# Writing a file does not leave the copy in the page cache: each write
# is written back and dropped as the copy goes on (file.c,
# write_back_and_drop), so a large copy does not push everything else
# out of memory.  fincore counts the file's cached bytes after the copy;
# then cmp checks the data against what qemu-img reads from the source.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires "$QEMU_IMG"
requires fincore

# Page cache on tmpfs is the file itself: nothing to drop there.
[ "$(stat -f -c %T "$tmp")" != tmpfs ] || skip "$tmp is on tmpfs"

start_nbdkit src -r sparse-random size=512M seed=11 percent=25
src=$(uri_of "$tmp/src.sock")
run_nbdcp "$src" "$tmp/out.raw" || fail "nbdcp failed"

written=$(du -B1 "$tmp/out.raw" | cut -f1)
cached=$(fincore --bytes --noheadings --output RES "$tmp/out.raw")
echo "written $written bytes, $cached of them still in the page cache"
[ "$written" -gt $((64 * 1024 * 1024)) ] ||
  fail "only $written bytes written: the test copies too little"
# A few requests' worth may still be on their way out at exit.
[ "$cached" -lt $((written / 4)) ] ||
  fail "$cached of $written written bytes left in the page cache"

# Only then (reading it fills the cache again): the data.
"$QEMU_IMG" convert -f raw -O raw "$src" "$tmp/expected.raw"
cmp "$tmp/expected.raw" "$tmp/out.raw" ||
  fail "the file differs from qemu-img's reading of the source"
