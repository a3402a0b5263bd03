#!/bin/bash
# A raw image served by qemu-nbd copied to a qcow2 image served by
# qemu-nbd, checked afterwards with qemu-img compare.  Both servers run
# with qemu-nbd's default of one client, so this also shows that nbdcp
# copes with a server that takes fewer connections than it asks for.
. "${srcdir:-.}/tests/functions.sh"
requires "$QEMU_NBD"
requires "$QEMU_IMG"
requires qemu-io

raw=$tmp/src.raw
qcow=$tmp/dst.qcow2
size=$((200 * 1024 * 1024 + 4096 * 3))
"$QEMU_IMG" create -q -f raw "$raw" "$size"
# Mixed content: data at the start, zeroes written as data in the
# middle, a long hole, data in the unaligned tail.
qemu-io -f raw -c 'write -P 0x11 0 3M' -c 'write -P 0 3M 1M' \
  -c 'write -P 0x22 64M 5M' -c 'write -P 0x33 199M 1M' \
  -c "write -P 0x44 $((size - 12288)) 12288" "$raw" >/dev/null
"$QEMU_IMG" create -q -f qcow2 "$qcow" "$size"

start_qemu_nbd src -f raw -r "$raw"
start_qemu_nbd dst -f qcow2 "$qcow"
run_nbdcp -C 4 -T 4 "$(uri_of "$tmp/src.sock")" "$(uri_of "$tmp/dst.sock")"

# Stop the servers so the images are closed before comparing.
stop_servers
check_same -F qcow2 "$raw" "$qcow" "raw -> qcow2"
