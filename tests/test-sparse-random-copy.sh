#!/bin/bash
# sparse-random copied onto itself verifies every write against its own
# data: run it at awkward sizes and with the options that change how the
# engine schedules requests.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random

copy ()
{
  local size=$1
  shift
  echo "size=$size: nbdcp $*"
  "$NBDKIT" -U - sparse-random size="$size" seed=$RANDOM \
    --run "timeout 120 $NBDCP $* \$uri \$uri" ||
    fail "self-copy of size $size with '$*' failed"
}

# Sizes: a multiple of the segment, one byte past it, not a multiple of
# the request size or of 512, smaller than one request, one byte.
copy 1G
copy $((256 * 1024 * 1024 + 1))
copy $((300 * 1024 * 1024 + 12345))
copy 777777
copy 1
copy 1G -C 1
copy 1G -C 4
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
