#!/bin/bash
# A destination full of old data ends up exactly equal to the source:
# every hole, every zero block inside data, both 128 MiB segments and
# the last byte are written over.  A fresh (all-zero) destination hides
# a zero that was never sent; old data under every byte does not.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin data
requires "$QEMU_IMG"

M=$((1024 * 1024))
# Two segments, the second short, and a size that is no multiple of a
# block or a request.
size=$((136 * M + 777))
# The data plugin reports data in 64 KiB pages.  Page 0 holds, in 4 KiB
# blocks: data, zeroes, data, zeroes (a zero run before and after a data
# run inside one read).  Data straddles the segment boundary; the rest
# is holes, apart from one last non-zero byte.
disk="@0 \"start\" @36864 1 2 3 @$((128 * M - 2728)) 3*5000 @$((size - 1)) 7"
# Old data: 0x55 in every byte, none of it what the source has.
old="( 0x55 ) * $size"

# copy NAME NBDCP-OPTIONS...: copy the source onto fresh old data and
# compare every byte.
copy ()
{
  local name=$1
  shift
  start_nbdkit "$name-src" -r data "$disk" size=$size
  start_nbdkit "$name" data "$old"
  run_nbdcp "$@" "$(uri_of "$tmp/$name-src.sock")" "$(uri_of "$tmp/$name.sock")" ||
    fail "$name: nbdcp $* failed"
  "$QEMU_IMG" compare -f raw -F raw "$(uri_of "$tmp/$name-src.sock")" \
    "$(uri_of "$tmp/$name.sock")" ||
    fail "$name: old data left behind by nbdcp $*"
  stop_servers
}

# (The old data differs from the source at every data byte and every
# zero, so a single byte left alone shows.)
copy default
copy small -C 1 --request-size=32K -S 512
