#!/bin/bash
# --destination-is-zero sends no zero or trim requests at all, writes only non-zero blocks, and the copy is right.
. "${srcdir:-.}/tests/functions.sh"

requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires_nbdkit_filter log
requires "$QEMU_IMG"

# The source has big holes, and data extents with zero blocks inside
# them: each byte below sits alone in its 4K block, in a data extent of
# 32K or more (the data plugin allocates in 32K pages).  With -S 4096
# the non-zero 4K blocks are 0x100000, 0x7fff000, 0x8000000 and
# 0x10000000: 16K in all.
data='@1048576 1 @134215000 3*5000 @268435456 2'
size=512M

# written LOG: the bytes that Write requests in LOG carried.
written ()
{
  awk "$AWK_HEX"'
    $4 == "Write" {
      for (i = 5; i <= NF; i++)
        if ($i ~ /^count=/) total += hex(substr($i, 7))
    }
    END { printf "%.0f\n", total }' "$1"
}

# copy NAME NBDCP-OPTIONS...: copy the source to a fresh memory disk
# with -S 4096, and compare the two afterwards; the copy's requests are
# in $tmp/NAME.copy.log.
copy ()
{
  local name=$1
  shift
  copy_logged "$name" data "$data" size=$size -- memory size=$size -- \
    -S 4096 "$@"
}

# A fresh memory disk reads as zero, so the option tells the truth.
copy dz --destination-is-zero
if grep -E ' (Zero|Trim) id=' "$tmp/dz.copy.log"; then
  fail "--destination-is-zero: zero or trim requests were sent"
fi
[ "$(written "$tmp/dz.copy.log")" -eq 16384 ] ||
  fail "--destination-is-zero: wrote $(written "$tmp/dz.copy.log") bytes, not the 16384 non-zero ones"
grep -q ' Flush id=' "$tmp/dz.copy.log" ||
  fail "--destination-is-zero: the destination was not flushed"

# --target-is-zero is the same option.
copy tz --target-is-zero
if grep -E ' (Zero|Trim) id=' "$tmp/tz.copy.log"; then
  fail "--target-is-zero: zero or trim requests were sent"
fi

# Without the option the holes and the zero blocks are zeroed, so the
# checks above can fail.
copy plain
grep -q ' Zero id=' "$tmp/plain.copy.log" ||
  fail "without --destination-is-zero no zero request was sent"
[ "$(written "$tmp/plain.copy.log")" -eq 16384 ] ||
  fail "without --destination-is-zero: wrote $(written "$tmp/plain.copy.log") bytes, not 16384"
