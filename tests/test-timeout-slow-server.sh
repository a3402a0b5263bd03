#!/bin/bash
# --timeout counts from a connection's last sign of life, not from when
# a request was sent: on a slow but working server (nbdkit's rate
# filter) a request may wait behind many others for longer than the
# timeout, and the copy must still succeed, and be right.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires_nbdkit_filter rate
requires "$QEMU_IMG"

start_nbdkit src sparse-random size=256M seed=4 percent=100
# 200 Mbit/s: a 16 MiB write takes about 0.7 s, and the sixteenth one
# in the queue waits about 10 s, twice the timeout; a reply comes every
# 0.7 s, so a busy machine has 4 s of margin before the copy may
# rightly time out.
start_nbdkit dst --filter=rate memory size=256M rate=200M
src=$(uri_of "$tmp/src.sock")
dst=$(uri_of "$tmp/dst.sock")

run_nbdcp --timeout=5 -C 1 -R 16 --request-size=16M --queue-size=256M \
  "$src" "$dst" || fail "a slow but working copy timed out"
"$QEMU_IMG" compare -q -f raw -F raw "$src" "$dst" ||
  fail "the destination differs from the source"
