#!/bin/bash
# Unix socket connections get a send buffer that holds a whole write
# request (the default, about 200 KiB, splits a 1 MiB write into several
# sends), and the copy made through them is exact.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

# What the kernel should give for a request of $1 bytes: nbdcp asks for
# max(request, 1 MiB); with CAP_NET_ADMIN it gets that, otherwise at
# most net.core.wmem_max; the kernel doubles the figure it keeps.
expected_kib ()
{
  local want=$(( $1 > 1048576 ? $1 : 1048576 ))
  local capeff wmem_max
  capeff=$(awk '/^CapEff:/ {print $2}' /proc/self/status)
  wmem_max=$(cat /proc/sys/net/core/wmem_max)
  if [ $(( 0x$capeff & (1 << 12) )) -eq 0 ] && [ "$wmem_max" -lt "$want" ]; then
    want=$wmem_max
  fi
  echo $(( 2 * want / 1024 ))
}

# copy_and_check REQUEST-SIZE: sparse-random (a seed of its own) into
# the memory disk with -v; the reported buffer must be as big, and the
# destination must then equal the source.
copy_and_check ()
{
  local rs=$1 got want src
  start_nbdkit "sr$rs" -r sparse-random size=96M seed=$((rs % 1000)) percent=100
  src=$(uri_of "$tmp/sr$rs.sock")
  run_nbdcp -v --request-size="$rs" "$src" "$dst" 2>"$tmp/v$rs" || {
    grep -v '^libnbd' "$tmp/v$rs" >&2
    fail "copy with --request-size=$rs failed"
  }
  check_same "$src" "$dst" "--request-size=$rs"
  got=$(sed -n 's/^nbdcp: .*: socket send buffer \([0-9]*\) KiB$/\1/p' \
    "$tmp/v$rs" | head -1)
  want=$(expected_kib "$rs")
  [ -n "$got" ] || fail "-v did not report the socket send buffer"
  [ "$got" -ge "$want" ] ||
    fail "--request-size=$rs: send buffer $got KiB, expected $want KiB"
}

# One destination for the three copies, each of other data.
start_nbdkit dst memory size=96M
dst=$(uri_of "$tmp/dst.sock")
copy_and_check 1048576
copy_and_check 4194304
copy_and_check 262144
