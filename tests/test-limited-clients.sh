#!/bin/bash
# Servers that accept fewer clients than nbdcp asks for must not make it
# hang: nbdkit's limit filter (rejects extra clients) and qemu-nbd's
# default --shared=1 (leaves them waiting).  -v says what was dropped.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter limit
requires_nbdkit_filter checkwrite

# Source limited to one client, destination to two.
start_nbdkit src -r --filter=limit pattern size=600M limit=1
start_nbdkit dst --filter=limit --filter=checkwrite pattern size=600M limit=2
run_nbdcp -v -C 4 "$(uri_of "$tmp/src.sock")" "$(uri_of "$tmp/dst.sock")" \
  2>"$tmp/v1"
grep -q 'connection .* failed\|dropped' "$tmp/v1" ||
  fail "-v did not report the refused connections"
grep -q 'copying .*: 1 lane' "$tmp/v1" || fail "expected one lane"

# qemu-nbd with its default single client, as a destination.
requires "$QEMU_NBD"
requires "$QEMU_IMG"
"$QEMU_IMG" create -q -f raw "$tmp/disk.raw" 600M
start_qemu_nbd q -f raw "$tmp/disk.raw"
run_nbdcp -v -C 4 "$(uri_of "$tmp/src.sock")" "$(uri_of "$tmp/q.sock")" \
  2>"$tmp/v2"
grep -q 'dropped' "$tmp/v2" || fail "-v did not report dropped connections"
stop_servers
start_nbdkit check --filter=checkwrite pattern size=600M
start_qemu_nbd q2 -f raw -r "$tmp/disk.raw"
run_nbdcp "$(uri_of "$tmp/q2.sock")" "$(uri_of "$tmp/check.sock")"
