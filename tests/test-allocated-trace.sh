#!/bin/bash
# --allocated behaves exactly as nbdcopy's: data extents are written
# whole (no zero detection: -S is ignored), holes are zeroed with
# NO_HOLE in requests bounded by the 128 MiB segments, and with
# --destination-is-zero the destination still ends up allocated.  The
# request trace is compared with one computed here and, where nbdcopy is
# installed, with nbdcopy's own; the data with qemu-img compare.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires_nbdkit_filter log
requires "$QEMU_IMG"

G=$((1024 * 1024 * 1024))
size=$((4 * G + 1))
data="@0 1 @$((G - 1)) 1 @$((4 * G - 1)) 1 @$((4 * G)) 1"

# The destination's writes, zeroes and trims as "KIND OFFSET COUNT FLAGS"
# in decimal, sorted.
requests ()
{
  awk "$AWK_HEX"'
    $4 == "Write" || $4 == "Zero" || $4 == "Trim" {
      off = ""; cnt = ""; flags = ""
      for (i = 5; i <= NF; i++) {
        if ($i ~ /^offset=/) off = hex(substr($i, 8))
        else if ($i ~ /^count=/) cnt = hex(substr($i, 7))
        else if ($i ~ /^(trim|fua|fast)=/) flags = flags " " $i
      }
      printf "%s %.0f %.0f%s\n", $4, off, cnt, flags
    }' "$1" | sort
}

# trace NAME COPIER ARGS...: copy the data source to a logging memory
# destination with COPIER, check the data, and leave the trace in
# $tmp/NAME.trace.
trace ()
{
  local name=$1
  shift
  start_nbdkit "$name-src" data "$data"
  start_nbdkit "$name" --filter=log memory size=$size logfile="$tmp/$name.log"
  timeout 120 "$@" --allocated --request-size=32768 \
    "$(uri_of "$tmp/$name-src.sock")" "$(uri_of "$tmp/$name.sock")" ||
    fail "$name: the copy failed"
  requests "$tmp/$name.log" >"$tmp/$name.trace"
  "$QEMU_IMG" compare -q -f raw -F raw "$(uri_of "$tmp/$name-src.sock")" \
    "$(uri_of "$tmp/$name.sock")" || fail "$name: the destination differs"
}

# What nbdcopy does (libnbd 1.14 to 1.24): the data plugin reports
# 32 KiB data extents; each is one write, the last byte a 1-byte write;
# every hole is zeroed with NO_HOLE (trim=0), cut at segment boundaries.
# (The offsets come from the shell: mawk prints big numbers made from
# numbers in %.6g.)
awk -v size=$size -v starts="0 $((G - 32768)) $((4 * G - 32768)) $((4 * G))" 'BEGIN {
  seg = 128 * 1024 * 1024; k = 32768
  n = split(starts, d, " ")
  pos = 0
  for (i = 1; i <= n; i++) {
    for (; pos < d[i]; pos = end) {
      end = (int(pos / seg) + 1) * seg
      if (end > d[i]) end = d[i]
      printf "Zero %.0f %.0f trim=0 fua=0 fast=0\n", pos, end - pos
    }
    len = d[i] + k > size ? size - d[i] : k
    printf "Write %.0f %.0f fua=0\n", d[i], len
    pos = d[i] + len
  }
}' | sort >"$tmp/expected.trace"

trace nbdcp "$NBDCP"
diff -u "$tmp/expected.trace" "$tmp/nbdcp.trace" ||
  fail "--allocated: the request trace is not nbdcopy's"
if command -v nbdcopy >/dev/null 2>&1; then
  trace nbdcopy nbdcopy
  diff -u "$tmp/nbdcopy.trace" "$tmp/nbdcp.trace" ||
    fail "--allocated: the request trace differs from nbdcopy's"
  echo "the trace matches nbdcopy's ($(wc -l <"$tmp/nbdcp.trace") requests)"
fi

# With --destination-is-zero as well, the holes are still written, so a
# file destination ends up fully allocated (where the file system keeps
# sparse files at all).
requires_nbdkit_plugin file
bytes=$((64 * 1024 * 1024))
truncate -s $bytes "$tmp/probe.img"
if [ "$(stat -c %b "$tmp/probe.img")" -ne 0 ]; then
  echo "the file system of $tmp keeps no sparse file: allocation not checked"
  exit 0
fi
start_nbdkit alloc-src data "@1048576 1 @33554000 3*5000" size=$bytes
truncate -s $bytes "$tmp/alloc.img"
run_nbdcp --allocated --destination-is-zero \
  "$(uri_of "$tmp/alloc-src.sock")" "$tmp/alloc.img" ||
  fail "--allocated --destination-is-zero: nbdcp failed"
"$QEMU_IMG" compare -q -f raw -F raw "$(uri_of "$tmp/alloc-src.sock")" \
  "$tmp/alloc.img" || fail "--allocated --destination-is-zero: the file differs"
blocks=$(stat -c '%b * %B' "$tmp/alloc.img")
[ $((blocks)) -ge $bytes ] ||
  fail "--allocated --destination-is-zero left the file sparse: $((blocks)) of $bytes bytes allocated"
