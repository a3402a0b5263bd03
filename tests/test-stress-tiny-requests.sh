#!/bin/bash
# Many small copies with tiny requests and few of them in flight, each
# under a short time limit: a copy whose event loop loses track of a
# connection hangs here rather than in a user's hands.  Such copies
# leave connections idle between replies, which is when a stale read
# wake-up once stranded libnbd in REPLY.START with commands queued
# but never sent (see nbd_socket_ready in copy/nbd.c).  That took a race
# in the kernel and struck about one 256M copy in 20-60, so this is a
# bounded net that catches such hangs now and then, not a proof.
#
# Every destination is compared with its source by qemu-img.  The
# source is sparse-random behind the blocksize filter: sparse-random
# makes up different bytes for a read that is not 4K-aligned, so
# without the filter a 512-byte copy would differ from what qemu-img
# reads.  The filter reads whole blocks from the plugin while
# still taking 512-byte requests from the client.
#
# STRESS_SECONDS (default 30) bounds the time spent starting copies
# (every setting runs at least once); STRESS_RUNS (default 1000)
# bounds their number.  Each copy is killed after RUN_TIMEOUT seconds.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires_nbdkit_filter blocksize
requires "$QEMU_IMG"
requires bc

budget=${STRESS_SECONDS:-30}
max_runs=${STRESS_RUNS:-1000}
RUN_TIMEOUT=25

# Settings, with the disk size that keeps each copy to a second or so
# unloaded.  runlength=3 (bytes) gives runs of single 4K blocks, so
# even a small disk means thousands of requests.
settings=(
  "8M --synchronous"
  "4M --synchronous --request-size=512"
  "4M -R 1 -C 1 --request-size=512"
  "4M -R 4 --request-size=512"
  "4M -R 2 -C 3 -T 3 --request-size=512"
  "8M -R 1 -C 2 -T 2 --request-size=4096"
  "8M -R 2 -C 2 -T 2 --request-size=4096"
  "8M -R 4 -C 4 -T 4 --request-size=4096"
)

seed0=$RANDOM
start=$SECONDS
runs=0
echo "seeds from $seed0; budget $budget s, at most $max_runs runs"
while [ "$runs" -lt "$max_runs" ] &&
  { [ $((SECONDS - start)) -lt "$budget" ] || [ "$runs" -lt ${#settings[@]} ]; }; do
  set -- ${settings[runs % ${#settings[@]}]}
  size=$1
  shift
  seed=$((seed0 + runs))
  runs=$((runs + 1))

  start_nbdkit src -r --filter=blocksize sparse-random minblock=4K \
    size="$size" seed="$seed" percent=20 runlength=3
  start_nbdkit dst memory "$size"
  src=$(uri_of "$tmp/src.sock")
  dst=$(uri_of "$tmp/dst.sock")

  r=0
  t0=$(date +%s.%N)
  timeout --kill-after=5 "$RUN_TIMEOUT" "$NBDCP" "$@" "$src" "$dst" \
    2>"$tmp/err" || r=$?
  if [ "$r" -eq 124 ] || [ "$r" -eq 137 ]; then
    cat "$tmp/err" >&2
    fail "run $runs hung: 'nbdcp $*' of a $size sparse-random disk" \
      "(seed=$seed) did not finish in $RUN_TIMEOUT s; a connection" \
      "probably stopped sending (see nbd_socket_ready in copy/nbd.c)"
  fi
  if [ "$r" -ne 0 ]; then
    cat "$tmp/err" >&2
    fail "run $runs: 'nbdcp $*' (size=$size seed=$seed) exited with $r"
  fi
  "$QEMU_IMG" compare -q -f raw -F raw "$src" "$dst" ||
    fail "run $runs: 'nbdcp $*' (size=$size seed=$seed): destination" \
      "differs from the source"
  echo "run $runs: nbdcp $* (size=$size seed=$seed):" \
    "$(echo "$(date +%s.%N) - $t0" | bc) s"
  stop_servers
  rm -f "$tmp/src.sock" "$tmp/dst.sock"
done
echo "$runs copies in $((SECONDS - start)) s: none hung, every destination" \
  "identical to its source"
