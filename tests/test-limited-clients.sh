#!/bin/bash
# Servers that accept fewer clients than nbdcp asks for must not make it
# hang: nbdkit's limit filter (rejects extra clients) and qemu-nbd's
# default --shared=1 (leaves them waiting).  -v says what was dropped,
# and every copy is compared with its source.  A one-client server costs
# no waiting: a small copy from a default qemu-nbd takes well under the
# 2 s that extra connections may take; a server that takes several
# clients without advertising multi-conn keeps them.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter limit
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

# Source limited to one client, destination to two.
start_nbdkit src -r --filter=limit sparse-random size=600M seed=17 limit=1
start_nbdkit dst --filter=limit memory size=600M limit=2
src=$(uri_of "$tmp/src.sock")
run_nbdcp -v -C 4 -T 4 "$src" "$(uri_of "$tmp/dst.sock")" 2>"$tmp/v1"
grep -q 'connection .* failed\|dropped' "$tmp/v1" ||
  fail "-v did not report the refused connections"
grep -q 'copying .*: 1 lane' "$tmp/v1" || fail "expected one lane"
check_same "$src" "$(uri_of "$tmp/dst.sock")" "limit=1 -> limit=2"

# qemu-nbd with its default single client, as a destination.  It exits
# when nbdcp disconnects, and the image is compared.
requires "$QEMU_NBD"
"$QEMU_IMG" create -q -f raw "$tmp/disk.raw" 600M
start_qemu_nbd q -f raw "$tmp/disk.raw"
# (From a source that takes four clients: nbdcp opens no more
# destination connections than the source gave it.)
start_nbdkit src4 -r sparse-random size=600M seed=17
run_nbdcp -v -C 4 -T 4 "$(uri_of "$tmp/src4.sock")" "$(uri_of "$tmp/q.sock")" \
  2>"$tmp/v2"
grep -q 'dropped' "$tmp/v2" || fail "-v did not report dropped connections"
wait "${_pids[-2]}" || :
check_same "$src" "$tmp/disk.raw" "sparse-random -> qemu-nbd"

# And as a source, into a fresh memory disk.
start_qemu_nbd q2 -f raw -r "$tmp/disk.raw"
start_nbdkit dst2 memory size=600M
run_nbdcp "$(uri_of "$tmp/q2.sock")" "$(uri_of "$tmp/dst2.sock")"
check_same "$src" "$(uri_of "$tmp/dst2.sock")" "qemu-nbd -> memory"

# A sparse qcow2 from a default qemu-nbd (one client, no multi-conn):
# the extra connections never get the server's greeting and are dropped
# at once, not after 2 s.  (300M: three segments, so that extras are
# tried at all.)  The copy is checked against qemu-img's reading.  Its
# time is compared with the same copy over one connection (-C 1, no
# extras), not with a fixed bound that a loaded machine can exceed: the
# extras may cost a quarter of a second, not the 2 s of a wait.
stop_servers
"$QEMU_IMG" create -q -f qcow2 "$tmp/small.qcow2" 300M
qemu-io -f qcow2 -c 'write -P 0x55 4096 64k' "$tmp/small.qcow2" >/dev/null
"$QEMU_IMG" convert -f qcow2 -O raw "$tmp/small.qcow2" "$tmp/small.expected"
start_qemu_nbd small1 -f qcow2 "$tmp/small.qcow2"
t0=$(date +%s%N)
run_nbdcp -C 1 "$(uri_of "$tmp/small1.sock")" "$tmp/small1.raw" ||
  fail "copy from a default qemu-nbd with -C 1 failed"
base=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "the same with -C 1: $base ms"
start_qemu_nbd small -f qcow2 "$tmp/small.qcow2"
t0=$(date +%s%N)
run_nbdcp -v "$(uri_of "$tmp/small.sock")" "$tmp/small.raw" 2>"$tmp/v3" ||
  { cat "$tmp/v3"; fail "copy from a default qemu-nbd failed"; }
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "300M sparse qcow2 from a default qemu-nbd: $ms ms"
cmp "$tmp/small.expected" "$tmp/small.raw" ||
  fail "copy from a default qemu-nbd differs from qemu-img's reading"
[ "$ms" -lt $((base + 1500)) ] ||
  { cat "$tmp/v3"; fail "copy from a default qemu-nbd took $ms ms, $base ms with -C 1 (extra connections waited)"; }
grep -q 'got no greeting.*dropped' "$tmp/v3" ||
  { cat "$tmp/v3"; fail "-v did not say the ungreeted connections were dropped"; }

# A server that takes several clients but does not advertise multi-conn
# greets every connection: they are kept.  (512M: four segments, so
# that four connections can be used.)
if "$NBDKIT" --filter=multi-conn null --dump-plugin >/dev/null 2>&1; then
  start_nbdkit nomc -r --filter=multi-conn sparse-random size=512M seed=3 \
    percent=5 multi-conn-mode=disable
  run_nbdcp -v -C 4 -T 4 "$(uri_of "$tmp/nomc.sock")" "$tmp/nomc.raw" 2>"$tmp/v4"
  grep -q 'source .*multi-conn not advertised' "$tmp/v4" ||
    { cat "$tmp/v4"; fail "the multi-conn filter did not hide multi-conn"; }
  grep -Eq '^nbdcp: source .*, [234] connections,' "$tmp/v4" ||
    { grep '^nbdcp' "$tmp/v4"; fail "a multi-client server without multi-conn lost its extra connections"; }
  "$QEMU_IMG" compare -q -f raw -F raw "$tmp/nomc.raw" \
    "$(uri_of "$tmp/nomc.sock")" ||
    fail "copy from the multi-conn-less server differs from what it serves"
fi
