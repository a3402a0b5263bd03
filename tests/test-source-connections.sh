#!/bin/bash
# The source opens no more connections than the disk has 128 MiB
# segments (each lane copies whole segments; an idle connection only
# costs both sides a thread and a handshake), and no fewer, up to -C.
# The source server's log counts the connections; qemu-img compare
# checks the copy.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

# copy NAME SIZE WANT NBDCP-OPTIONS...: copy SIZE bytes of sparse-random
# to a memory disk; the source must have seen WANT connections.
copy ()
{
  local name=$1 size=$2 want=$3 src dst seen
  shift 3
  # Runs of 1M keep qemu-img compare quick: with 64K runs it took 47 s
  # on the 1G disks (a few round trips per extent, one after another).
  start_nbdkit "$name-src" -r --filter=log \
    sparse-random size="$size" seed=5 percent=30 runlength=1048576 \
    logfile="$tmp/$name.log"
  start_nbdkit "$name-dst" memory size="$size"
  src=$(uri_of "$tmp/$name-src.sock")
  dst=$(uri_of "$tmp/$name-dst.sock")
  run_nbdcp -v "$@" "$src" "$dst" 2>"$tmp/$name.v" ||
    { grep '^nbdcp' "$tmp/$name.v"; fail "$name: nbdcp failed"; }
  seen=$(grep -c ' Connect ' "$tmp/$name.log" || :)
  [ "$seen" = "$want" ] ||
    { grep '^nbdcp' "$tmp/$name.v"; fail "$name: $seen source connections, expected $want"; }
  "$QEMU_IMG" compare -q -f raw -F raw "$src" "$dst" ||
    fail "$name: the destination differs from the source"
}

copy tiny 1M 1                      # one segment
copy three $((300 * 1024 * 1024)) 3 # three segments, -C 4
copy four 1G 4                      # eight segments, -C 4
copy two 1G 2 -C 2
grep -q '^nbdcp: .*: 1 connection: the disk has 1 segment of 128 MiB' \
  "$tmp/tiny.v" || { grep '^nbdcp' "$tmp/tiny.v"; fail "tiny: no -v note"; }
