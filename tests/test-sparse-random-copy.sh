#!/bin/bash
# sparse-random copied into memory disks, at awkward sizes and with the
# options that change how the engine schedules requests; qemu-img
# compares source and destination after every copy, so a lost range, a
# lost last request or a lost zero run fails.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

# copy SIZE NBDCP-OPTIONS...: a fresh source of a random seed (printed,
# so that a failure can be replayed) into the memory disk of that size.
# Copies of the same size share the destination: it then holds the last
# copy's data, so a zero run that is not zeroed shows as well as a data
# run that is not written.
copy ()
{
  local size=$1 seed=$RANDOM n
  shift
  n=$((++copies))
  echo "size=$size seed=$seed: nbdcp $*"
  [ -S "$tmp/dst-$size.sock" ] || start_nbdkit "dst-$size" memory size="$size"
  start_nbdkit "src$n" -r sparse-random size="$size" seed=$seed
  copy_checked "size $size, seed $seed, '$*'" "$(uri_of "$tmp/src$n.sock")" \
    "$(uri_of "$tmp/dst-$size.sock")" "$@"
  kill "${_pids[-1]}"
}
copies=0

# Sizes: a multiple of the segment, one byte past it, not a multiple of
# the request size or of 512, smaller than one request, one byte.
copy 1G
copy $((256 * 1024 * 1024 + 1))
copy $((300 * 1024 * 1024 + 12345))
copy 777777
copy 1
copy 1G -C 1
copy 1G -C 4 -T 4
copy 1G -C 8 -T 3
copy 1G -T 1
copy 300M --requests 1
copy 300M --request-size 64K
copy 300M --request-size 32M
copy 300M --queue-size 2M
copy 300M -S 0
copy 300M -S 64K
copy 300M --no-extents
copy 300M --synchronous
copy 2G --flush
