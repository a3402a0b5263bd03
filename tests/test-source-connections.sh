#!/bin/bash
# The source opens no more connections than the disk has 128 MiB
# segments (each lane copies whole segments; an idle connection only
# costs both sides a thread and a handshake), and no fewer, up to -C;
# and, as nbdcopy does, no more than -T (by default the online CPUs).
# The source server's log counts the connections; qemu-img compare
# checks the copy; where nbdcopy is installed, it must open as many.
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

copy tiny 1M 1 -T 4                      # one segment
copy three $((300 * 1024 * 1024)) 3 -T 4 # three segments, -C 4
copy four 1G 4 -T 4                      # eight segments, -C 4
copy two 1G 2 -C 2 -T 4
copy threads 1G 3 -T 3                   # -T 3 cuts -C 4 to 3
cpus=$(nproc)
copy default 1G $((cpus < 4 ? cpus : 4)) # -T: the online CPUs
grep -q '^nbdcp: .*: 1 connection: the disk has 1 segment of 128 MiB' \
  "$tmp/tiny.v" || { grep '^nbdcp' "$tmp/tiny.v"; fail "tiny: no -v note"; }

# The same numbers of connections as nbdcopy's own, option for option
# (its rule: connections and threads are both cut to the smaller).
if command -v nbdcopy >/dev/null 2>&1; then
  start_nbdkit counted -r --filter=log sparse-random size=1G seed=5 \
    percent=30 runlength=1048576 logfile="$tmp/counted.log"
  counted=$(uri_of "$tmp/counted.sock")
  connections_of ()
  {
    local before
    before=$(grep -c ' Connect ' "$tmp/counted.log" || :)
    "$@" "$counted" null: || fail "$*: the copy failed"
    echo $(($(grep -c ' Connect ' "$tmp/counted.log" || :) - before))
  }
  for opts in "" "-C 3" "-T 3" "-C 2 -T 4" "-C 4 -T 1" "-C 8 -T 8"; do
    # shellcheck disable=SC2086 # the options are meant to split
    theirs=$(connections_of nbdcopy $opts)
    # shellcheck disable=SC2086
    ours=$(connections_of run_nbdcp $opts)
    [ "$ours" = "$theirs" ] ||
      fail "options '$opts': nbdcp opened $ours connections, nbdcopy $theirs"
    echo "options '$opts': $ours connections, as nbdcopy"
  done
fi
