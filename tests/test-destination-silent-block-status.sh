#!/bin/bash
# A destination that never answers block status does not hold the copy
# up: nbdcp asks the destination where it reads as zero only as an
# optimisation, gives the question up after a short deadline (3 s, or
# half of --timeout), zeroes every hole as if it had not asked, and
# asks no more.  The destination is a file full of old random data
# behind nbdkit's delay filter (block status answered after 600 s), so
# a hole left unzeroed, or data skipped, shows in cmp against the
# source; and the copy must end in time, without --timeout (under 10 s
# of nbdcp's own work, bounded at 40 s here for a loaded machine) and
# with --timeout=5 (no "no reply" failure).  --verify, which reads the
# destination back, does not ask it again either: it reads everything.
# A fresh server per case:
# nbdcp closes the connection with the question unanswered, which
# nbdkit 1.32 may not survive.
. "${srcdir:-.}/tests/functions.sh"

requires_nbdkit_plugin file
requires_nbdkit_filter delay
requires cmp

size=$((160 * 1024 * 1024)) # two segments
truncate -s $size "$tmp/src.raw"
# Data here and there, holes between them: the holes are what the
# destination's answer would have let nbdcp skip.
for mib in 0 7 64 127 128 150 159; do
  head -c 1M /dev/urandom |
    dd of="$tmp/src.raw" bs=1M seek=$mib conv=notrunc status=none
done

copy_case ()
{
  local name=$1
  shift
  head -c $size /dev/urandom >"$tmp/$name.img"
  start_nbdkit "$name" --filter=delay file "$tmp/$name.img" delay-extents=600
  local t0=$(date +%s%N) rc=0
  timeout 40 "$NBDCP" -v -C 2 "$@" "$tmp/src.raw" "$(uri_of "$tmp/$name.sock")" \
    >"$tmp/$name.log" 2>&1 || rc=$?
  local ms=$((($(date +%s%N) - t0) / 1000000))
  echo "$name: exit $rc after $ms ms"
  [ $rc -ne 124 ] || { tail "$tmp/$name.log"; fail "$name: nbdcp still waiting after 40 s"; }
  [ $rc -eq 0 ] || { tail "$tmp/$name.log"; fail "$name: exit $rc"; }
  grep -q 'no answer to block status' "$tmp/$name.log" ||
    fail "$name: -v did not say the question was given up"
  cmp "$tmp/src.raw" "$tmp/$name.img" || fail "$name: destination differs"
}

copy_case untimed
copy_case timed --timeout=5
# The deadline is half of --timeout when that is shorter than 3 s: a
# --timeout of 2 s must not fire for the question.
copy_case short --timeout=2
copy_case verified --verify
copy_case verified_timed --verify --timeout=4
