#!/bin/bash
# Servers with block-size constraints (minimum, preferred, maximum) get
# only requests that obey them: nbdkit's blocksize-policy filter with
# blocksize-error-policy=error fails any request that does not, and
# qemu-nbd's compress driver (qcow2 compressed clusters, a 64 KiB
# minimum) refuses unaligned writes.  Every copy is checked with
# qemu-img compare; copies that cannot be done are refused before
# anything is written.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires_nbdkit_plugin data
requires_nbdkit_filter blocksize-policy
requires_nbdkit_filter log
requires "$QEMU_IMG"
requires "$QEMU_NBD"

# The filter's parameters (they follow the plugin and its own).
policy ()
{
  echo blocksize-error-policy=error blocksize-minimum="$1" \
    blocksize-preferred="$1" \
    blocksize-maximum="$2"
}

# copy NAME SIZE SRC-MIN SRC-MAX DST-MIN DST-MAX SOURCE-PLUGIN-ARGS --
# NBDCP-OPTIONS: copy through the policy filter on both sides, check the
# result and that the destination saw only aligned requests.
n=0
copy ()
{
  local name=$1 size=$2 smin=$3 smax=$4 dmin=$5 dmax=$6 plugin=()
  shift 6
  while [ "$1" != -- ]; do plugin+=("$1"); shift; done
  shift
  n=$((n + 1))
  echo "$name: size=$size source $smin..$smax, destination $dmin..$dmax, nbdcp $*"
  start_nbdkit "src$n" --filter=blocksize-policy "${plugin[@]}" \
    $(policy "$smin" "$smax")
  start_nbdkit "dst$n" --filter=log --filter=blocksize-policy \
    memory size="$size" logfile="$tmp/dst$n.log" $(policy "$dmin" "$dmax")
  run_nbdcp "$@" "$(uri_of "$tmp/src$n.sock")" "$(uri_of "$tmp/dst$n.sock")" ||
    fail "$name: nbdcp failed"
  cp "$tmp/dst$n.log" "$tmp/dst$n.copy.log"
  "$QEMU_IMG" compare -q -f raw -F raw "$(uri_of "$tmp/src$n.sock")" \
    "$(uri_of "$tmp/dst$n.sock")" ||
    fail "$name: the destination differs from the source"
  # The filter refuses unaligned requests, but say so if one was sent.
  awk -v min="$dmin" -v max="$dmax" "$AWK_HEX"'
    $4 == "Write" || $4 == "Zero" || $4 == "Trim" {
      off = -1; cnt = -1
      for (i = 5; i <= NF; i++) {
        if ($i ~ /^offset=/) off = hex(substr($i, 8))
        if ($i ~ /^count=/) cnt = hex(substr($i, 7))
      }
      if (off % min != 0 || cnt % min != 0 || ($4 == "Write" && cnt > max)) {
        print "bad request: " $0; bad = 1
      }
    }
    END { exit bad }' "$tmp/dst$n.copy.log" ||
    fail "$name: a request broke the destination's constraints"
}

M=$((1024 * 1024))
# Sizes that are not a multiple of the segment (128M), the request size
# or the maximum, but are of the minimum.
odd=$((300 * M + 3 * 65536))

copy min4k 256M 4096 65536 4096 65536 sparse-random size=256M seed=1 --
copy min64k $odd 4096 $((256 * 1024)) 65536 $((128 * 1024)) \
  sparse-random size=$odd seed=2 --
copy small-requests $odd 4096 65536 65536 65536 \
  sparse-random size=$odd seed=3 -- --request-size=64K -S 512
copy request-4k 64M 4096 65536 4096 8192 \
  sparse-random size=64M seed=4 -- --request-size=4096 -S 512
copy src-min64k 64M 65536 $((1024 * 1024)) 4096 65536 \
  sparse-random size=64M seed=5 -- -S 512
copy allocated 64M 4096 65536 65536 65536 \
  sparse-random size=64M seed=6 -- --allocated
copy dst-is-zero 64M 4096 65536 65536 65536 \
  sparse-random size=64M seed=7 -- --destination-is-zero -S 4096
copy no-extents 64M 4096 65536 65536 65536 \
  sparse-random size=64M seed=8 -- --no-extents
copy synchronous 64M 4096 65536 65536 65536 \
  sparse-random size=64M seed=9 -- --synchronous
# 4 KiB of data inside 64 KiB blocks, and zero blocks inside data: each
# partly-data block must be written whole, never zeroed.
copy partial-blocks 8M 512 65536 65536 65536 \
  data '@4096 1*4096 @131072 2*512 @196608 3*65536 @1048064 4*1024' size=8M \
  -- -S 512

# The default request size rises to the servers' preferred block size.
start_nbdkit pref-src --filter=blocksize-policy sparse-random size=64M \
  seed=10 blocksize-preferred=4M
start_nbdkit pref-dst --filter=log memory size=64M logfile="$tmp/pref.log"
run_nbdcp -v "$(uri_of "$tmp/pref-src.sock")" "$(uri_of "$tmp/pref-dst.sock")" \
  2>"$tmp/pref.err" || { cat "$tmp/pref.err"; fail "preferred: nbdcp failed"; }
grep -q 'request size raised from 524288 to 4194304' "$tmp/pref.err" ||
  { cat "$tmp/pref.err"; fail "preferred: the request size was not raised"; }
"$QEMU_IMG" compare -q -f raw -F raw "$(uri_of "$tmp/pref-src.sock")" \
  "$(uri_of "$tmp/pref-dst.sock")" || fail "preferred: the copy differs"

# Refused before anything is written: a request size below a minimum,
# and a size that is not a multiple of a minimum (its last block could
# be neither read nor written).
start_nbdkit ref-src --filter=blocksize-policy sparse-random size=1000000 \
  seed=1 $(policy 4096 65536)
start_nbdkit ref-dst --filter=log --filter=blocksize-policy memory size=1M \
  logfile="$tmp/ref.log" $(policy 65536 65536)
start_nbdkit ref-src2 sparse-random size=1000000 seed=1
start_nbdkit ref-src3 sparse-random size=1M seed=1
expect_fail "source .* minimum block size of 4096 bytes.*last 576 bytes cannot be read" \
  "$NBDCP" "$(uri_of "$tmp/ref-src.sock")" "$(uri_of "$tmp/ref-dst.sock")"
expect_fail "destination .* minimum block size of 65536 bytes.*cannot be written" \
  "$NBDCP" "$(uri_of "$tmp/ref-src2.sock")" "$(uri_of "$tmp/ref-dst.sock")"
expect_fail "--request-size 4096 is smaller than the destination's minimum block size, 65536" \
  "$NBDCP" --request-size=4096 "$(uri_of "$tmp/ref-src3.sock")" \
  "$(uri_of "$tmp/ref-dst.sock")"
if grep -E ' (Write|Zero|Trim) ' "$tmp/ref.log"; then
  fail "a refused copy wrote to the destination"
fi

# qemu-nbd's compress driver: compressed qcow2 clusters of 64 KiB.
# One connection with one request at a time, and four connections.
for mode in sync multi; do
  img=$tmp/$mode.qcow2
  "$QEMU_IMG" create -q -f qcow2 "$img" 256M
  start_nbdkit "q$mode-src" sparse-random size=256M seed=11 percent=30
  if [ $mode = sync ]; then
    run_nbdcp --synchronous -S 512 "$(uri_of "$tmp/q$mode-src.sock")" -- \
      [ "$QEMU_NBD" --image-opts \
        driver=compress,file.driver=qcow2,file.file.driver=file,file.file.filename="$img" ] ||
      fail "compressed qcow2, $mode: nbdcp failed"
  else
    start_qemu_nbd "q$mode" -e 4 --image-opts \
      driver=compress,file.driver=qcow2,file.file.driver=file,file.file.filename="$img"
    qemu_pid=${_pids[-1]}
    run_nbdcp -C 4 -T 4 -S 512 "$(uri_of "$tmp/q$mode-src.sock")" \
      "$(uri_of "$tmp/q$mode.sock")" ||
      fail "compressed qcow2, $mode: nbdcp failed"
    # qemu-img opens the image itself: qemu-nbd must have closed it
    # (it may have ended already, with its last client).
    kill "$qemu_pid" 2>/dev/null || :
    wait "$qemu_pid" || :
  fi
  "$QEMU_IMG" compare -q -f raw -F qcow2 "$(uri_of "$tmp/q$mode-src.sock")" "$img" ||
    fail "compressed qcow2, $mode: the image differs from the source"
done

# A raw file with 4 KiB of data at 4096 into a compressed qcow2, with
# and without --destination-is-zero.
truncate -s 1M "$tmp/small.raw"
printf '%4096s' x | tr ' ' y | dd of="$tmp/small.raw" bs=4096 seek=1 conv=notrunc status=none
for o in "" --destination-is-zero; do
  img=$tmp/small$o.qcow2
  "$QEMU_IMG" create -q -f qcow2 "$img" 1M
  run_nbdcp $o "$tmp/small.raw" -- [ "$QEMU_NBD" --image-opts \
    driver=compress,file.driver=qcow2,file.file.driver=file,file.file.filename="$img" ] ||
    fail "small raw to compressed qcow2 $o: nbdcp failed"
  "$QEMU_IMG" compare -q -f raw -F qcow2 "$tmp/small.raw" "$img" ||
    fail "small raw to compressed qcow2 $o: the image differs"
done
