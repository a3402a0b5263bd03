#!/bin/bash
# A disk with no holes at all (percent=100) and one with random bytes in
# every block: the data path, into memory disks that qemu-img then
# compares with the sources.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

# copy NAME SIZE SPARSE-RANDOM-ARGS...
copy ()
{
  local name=$1 size=$2
  shift 2
  start_nbdkit "$name" -r sparse-random size="$size" "$@"
  start_nbdkit "$name-dst" memory size="$size"
  copy_checked "$name" "$(uri_of "$tmp/$name.sock")" \
    "$(uri_of "$tmp/$name-dst.sock")"
  stop_servers
}

copy full 512M seed=7 percent=100
copy random 256M seed=8 random-content=true runlength=1048576
