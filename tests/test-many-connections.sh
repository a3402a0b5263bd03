#!/bin/bash
# -C far beyond what helps (nbdcopy accepts -C 1024) is lowered to 64
# connections per side, and further to fit the open-file limit, with a
# -v note; the copy then works, also where address space is limited
# (1024 lanes of 16 MiB buffers and 1024 thread stacks did not fit).
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

start_nbdkit src -r sparse-random size=256M seed=9 percent=20
start_nbdkit dst memory size=256M
src=$(uri_of "$tmp/src.sock")
dst=$(uri_of "$tmp/dst.sock")

# compare WHAT: the destination holds the source.
compare ()
{
  "$QEMU_IMG" compare -q -f raw -F raw "$src" "$dst" ||
    fail "$1: the destination differs from the source"
}
# lanes FILE: the number of lanes -v reported.
lanes ()
{
  sed -n 's/^nbdcp: copying .*: \([0-9]*\) lanes\{0,1\} on.*/\1/p' "$1"
}

run_nbdcp -v -C 1024 -T 1024 "$src" "$dst" 2>"$tmp/v1" ||
  { grep '^nbdcp' "$tmp/v1"; fail "-C 1024 -T 1024 failed"; }
compare "-C 1024"
grep -q '^nbdcp: -C 1024 lowered to 64 connections per side' "$tmp/v1" ||
  { grep '^nbdcp' "$tmp/v1"; fail "-C 1024: no -v note that it was lowered"; }
n=$(lanes "$tmp/v1")
[ -n "$n" ] && [ "$n" -ge 1 ] && [ "$n" -le 64 ] ||
  { grep '^nbdcp' "$tmp/v1"; fail "-C 1024: $n lanes"; }

# An open-file limit that 64 connections per side would exceed.
start_nbdkit dst2 memory size=256M
dst=$(uri_of "$tmp/dst2.sock")
(ulimit -n 80 && run_nbdcp -v -C 64 -T 64 "$src" "$dst") 2>"$tmp/v2" ||
  { grep '^nbdcp' "$tmp/v2"; fail "-C 64 with ulimit -n 80 failed"; }
compare "ulimit -n 80"
grep -q '^nbdcp: -C 64 lowered to 16 connections per side to fit the open file limit (ulimit -n 80)' "$tmp/v2" ||
  { grep '^nbdcp' "$tmp/v2"; fail "ulimit -n 80: no -v note"; }

# Limited address space (sanitizers reserve terabytes of it: skip).
if [ "${SANITIZED:-no}" = no ]; then
  start_nbdkit dst3 memory size=256M
  dst=$(uri_of "$tmp/dst3.sock")
  (ulimit -v $((4 * 1024 * 1024)) && run_nbdcp -C 1024 -T 1024 "$src" "$dst") ||
    fail "-C 1024 -T 1024 in 4 GiB of address space failed"
  compare "-C 1024 in 4 GiB"
fi
