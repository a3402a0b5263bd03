#!/bin/bash
# valgrind --leak-check=full finds no memory errors and no leaks in
# representative copies: NBD to NBD, file to file (io_uring), and a
# stream to null:.
. "${srcdir:-.}/tests/functions.sh"
requires "${VALGRIND:-valgrind}"
[ "${SANITIZED:-no}" = no ] || skip "valgrind does not run sanitizer builds"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

vg ()
{
  timeout 300 "${VALGRIND:-valgrind}" -q --error-exitcode=1 \
    --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect "$NBDCP" "$@" ||
    fail "valgrind reported errors or leaks for: nbdcp $*"
}

start_nbdkit src -r sparse-random size=256M seed=11 percent=20
start_nbdkit dst memory size=256M
src=$(uri_of "$tmp/src.sock")
vg -C 2 -T 2 "$src" "$(uri_of "$tmp/dst.sock")"
check_same "$src" "$(uri_of "$tmp/dst.sock")" "NBD -> NBD under valgrind"
vg "$src" "$tmp/a.raw"
check_same "$src" "$tmp/a.raw" "NBD -> file under valgrind"
vg "$tmp/a.raw" "$tmp/b.raw"
cmp "$tmp/a.raw" "$tmp/b.raw" || fail "file copy under valgrind differs"
vg - null: <"$tmp/a.raw"
cat "$tmp/a.raw" | vg -p - null: 2>/dev/null
# A failed copy cleans up too (exit 1 from nbdcp, not 99 from valgrind).
start_nbdkit small memory size=1M
expect_fail 'smaller' "${VALGRIND:-valgrind}" -q --error-exitcode=99 \
  --leak-check=full --errors-for-leak-kinds=definite,indirect \
  "$NBDCP" "$tmp/a.raw" "$(uri_of "$tmp/small.sock")"
