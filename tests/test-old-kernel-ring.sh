#!/bin/bash
# Kernels before 6.1 refuse io_uring's single-issuer and deferred-task-
# work flags with EINVAL, and nbdcp then makes the plain kind of ring
# (copy/ring.c).  This kernel has the flags, so a preload library
# (tests/old-kernel-ring.so) makes liburing refuse them, and nbdcp must
# say it fell back and still copy every byte: NBD -> file (the file's
# reads and writes go through the ring), file -> NBD and NBD -> NBD,
# each checked by qemu-img compare against the source.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

preload=${OLD_KERNEL_RING:-$PWD/tests/old-kernel-ring.so}
[ -f "$preload" ] || skip "$preload is not built"
# An AddressSanitizer build wants its runtime loaded first.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# old_kernel_nbdcp ARGS...: nbdcp -v under the preload; fails unless the
# ring was refused and nbdcp said it fell back.
old_kernel_nbdcp ()
{
  LD_PRELOAD=$preload run_nbdcp -v "$@" 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; fail "nbdcp $* failed on a plain ring"; }
  grep -q '^old-kernel-ring: refused' "$tmp/err" ||
    fail "the preload did not refuse the ring flags"
  grep -q '^nbdcp: io_uring: task work by interrupt (an older kernel)' \
    "$tmp/err" || fail "nbdcp did not say it fell back to a plain ring"
}

start_nbdkit src -r sparse-random size=1G seed=17 percent=20
src=$(uri_of "$tmp/src.sock")
old_kernel_nbdcp "$src" "$tmp/copy.raw"
check_same "$src" "$tmp/copy.raw" "NBD -> file on a plain ring"

start_nbdkit dst memory size=1G
dst=$(uri_of "$tmp/dst.sock")
old_kernel_nbdcp "$tmp/copy.raw" "$dst"
check_same "$tmp/copy.raw" "$dst" "file -> NBD on a plain ring"

start_nbdkit dst2 memory size=1G
dst2=$(uri_of "$tmp/dst2.sock")
old_kernel_nbdcp "$src" "$dst2"
check_same "$src" "$dst2" "NBD -> NBD on a plain ring"
