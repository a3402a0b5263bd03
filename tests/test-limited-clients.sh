#!/bin/bash
# Servers that accept fewer clients than nbdcp asks for must not make it
# hang: nbdkit's limit filter (rejects extra clients) and qemu-nbd's
# default --shared=1 (leaves them waiting).  -v says what was dropped,
# and every copy is compared with its source by qemu-img.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter limit
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

# Source limited to one client, destination to two.
start_nbdkit src -r --filter=limit sparse-random size=600M seed=17 limit=1
start_nbdkit dst --filter=limit memory size=600M limit=2
src=$(uri_of "$tmp/src.sock")
run_nbdcp -v -C 4 "$src" "$(uri_of "$tmp/dst.sock")" 2>"$tmp/v1"
grep -q 'connection .* failed\|dropped' "$tmp/v1" ||
  fail "-v did not report the refused connections"
grep -q 'copying .*: 1 lane' "$tmp/v1" || fail "expected one lane"
check_same "$src" "$(uri_of "$tmp/dst.sock")" "limit=1 -> limit=2"

# qemu-nbd with its default single client, as a destination.  It exits
# when nbdcp disconnects, and the image is compared.
requires "$QEMU_NBD"
"$QEMU_IMG" create -q -f raw "$tmp/disk.raw" 600M
start_qemu_nbd q -f raw "$tmp/disk.raw"
run_nbdcp -v -C 4 "$src" "$(uri_of "$tmp/q.sock")" 2>"$tmp/v2"
grep -q 'dropped' "$tmp/v2" || fail "-v did not report dropped connections"
wait "${_pids[-1]}" || :
check_same "$src" "$tmp/disk.raw" "limit=1 -> qemu-nbd"

# And as a source, into a fresh memory disk.
start_qemu_nbd q2 -f raw -r "$tmp/disk.raw"
start_nbdkit dst2 memory size=600M
run_nbdcp "$(uri_of "$tmp/q2.sock")" "$(uri_of "$tmp/dst2.sock")"
check_same "$src" "$(uri_of "$tmp/dst2.sock")" "qemu-nbd -> memory"
