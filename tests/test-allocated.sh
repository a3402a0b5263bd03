#!/bin/bash
# --allocated never trims and zeroes only with NBD_CMD_FLAG_NO_HOLE (the log's trim=0), and the copy is right.
. "${srcdir:-.}/tests/functions.sh"

requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires_nbdkit_filter log
requires "$QEMU_IMG"

# Big holes, and zero 4K blocks inside data extents (functions.sh):
# both become zero requests.
data=$ZERO_BLOCKS_DATA size=$ZERO_BLOCKS_SIZE

# copy NAME PLUGIN-ARGS -- NBDCP-OPTIONS...: copy the source to a
# destination served by PLUGIN-ARGS, and compare the two afterwards;
# the copy's requests are in $tmp/NAME.copy.log.
copy ()
{
  local name=$1
  shift
  copy_logged "$name" data "$data" size=$size -- "$@"
}

# The log filter prints a Zero's NBD_CMD_FLAG_NO_HOLE as trim=0
# ("may trim" = 0) and its absence as trim=1.
copy alloc memory size=$size -- --allocated
if grep ' Trim id=' "$tmp/alloc.copy.log"; then
  fail "--allocated: trim requests were sent"
fi
grep -q ' Zero id=' "$tmp/alloc.copy.log" ||
  fail "--allocated: no zero request at all (the holes must be zeroed)"
if grep ' Zero id=' "$tmp/alloc.copy.log" | grep -v ' trim=0 '; then
  fail "--allocated: zero requests without NO_HOLE were sent"
fi

# Without --allocated the holes are zeroed by punching holes (trim=1),
# so the checks above can fail (even where the fresh disk reads as zero
# already: --no-destination-extents).
copy sparse memory size=$size -- --no-destination-extents
grep ' Zero id=' "$tmp/sparse.copy.log" | grep -q ' trim=1 ' ||
  fail "without --allocated no hole-punching zero request was sent"

# On a file whose filesystem punches holes, the result can be seen:
# without --allocated the copy stays sparse, with it the whole file is
# allocated.  Skipped where the filesystem keeps no sparse files.  A
# smaller disk, to spare the filesystem.
if "$NBDKIT" file --dump-plugin >/dev/null 2>&1; then
  data='@1048576 1 @33554000 3*5000'
  size=64M
  bytes=$((64 * 1024 * 1024))
  truncate -s $bytes "$tmp/sparse.img" "$tmp/alloc.img"
  copy fsparse file "$tmp/sparse.img" --
  copy falloc file "$tmp/alloc.img" -- --allocated
  sparse_kb=$(du -k "$tmp/sparse.img" | cut -f1)
  alloc_kb=$(du -k "$tmp/alloc.img" | cut -f1)
  echo "file destination: ${sparse_kb}K allocated without --allocated, ${alloc_kb}K with"
  if [ "$sparse_kb" -lt $((bytes / 1024 / 4)) ]; then
    [ "$alloc_kb" -ge $((bytes / 1024)) ] ||
      fail "--allocated left the file destination sparse: ${alloc_kb}K allocated"
  else
    echo "the filesystem of $tmp keeps no sparse file: allocation not checked"
  fi
  if grep ' Zero id=' "$tmp/falloc.copy.log" | grep -v ' trim=0 '; then
    fail "--allocated to a file: zero requests without NO_HOLE were sent"
  fi
fi

# A destination with no zero operation gets zeroes written instead:
# still no Zero or Trim, every byte written, and the same data.
if "$NBDKIT" --filter=nozero null --dump-plugin >/dev/null 2>&1; then
  data='@1048576 1 @33554000 3*5000'
  size=64M
  copy nozero --filter=nozero memory size=$size -- --allocated
  if grep -E ' (Zero|Trim) id=' "$tmp/nozero.copy.log"; then
    fail "--allocated, no zero support: zero or trim requests were sent"
  fi
  written=$(written_bytes "$tmp/nozero.copy.log")
  [ "$written" -eq $((64 * 1048576)) ] ||
    fail "--allocated, no zero support: the holes were not written" \
         "(wrote $written bytes, not the whole 64M disk)"
fi
