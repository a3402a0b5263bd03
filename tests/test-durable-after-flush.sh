#!/bin/bash
# A copy that exits 0 is durable: the destination here keeps writes in
# nbdkit's cache filter (cache=writeback) and only writes them to its
# file when a client flushes, so a server killed with SIGKILL right
# after the copy loses whatever was not flushed.  The file must still
# equal the source.  The control shows that the check can fail: a
# client that does not flush (nbdcopy without --flush) loses data.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin file
requires_nbdkit_filter cache
requires "$QEMU_IMG"

size=256M
start_nbdkit src sparse-random size=$size seed=21 percent=20
src=$(uri_of "$tmp/src.sock")

# copy_and_crash NAME COMMAND...: copy into a fresh writeback-cached file
# destination with COMMAND SRC DST, then kill the server without letting
# it flush anything.
copy_and_crash ()
{
  local name=$1 pid
  shift
  truncate -s $size "$tmp/$name.img"
  "$NBDKIT" -f --exit-with-parent -U "$tmp/$name.sock" -P "$tmp/$name.pid" \
    --filter=cache file "$tmp/$name.img" cache=writeback \
    2>>"$tmp/$name.err" &
  pid=$!
  # The pid file is written once nbdkit listens (the socket file
  # appears before, when a connection is still refused).
  wait_until 60 test -s "$tmp/$name.pid" || fail "$name: nbdkit did not start"
  timeout 120 "$@" "$src" "$(uri_of "$tmp/$name.sock")" ||
    fail "$name: the copy failed"
  kill -KILL $pid
  wait $pid 2>/dev/null || :
}

for c in 1 4; do
  copy_and_crash nbdcp-C$c "$NBDCP" -C $c
  "$QEMU_IMG" compare -q -f raw -F raw "$src" "$tmp/nbdcp-C$c.img" ||
    fail "-C $c: writes were lost when the server crashed after the copy"
done

if command -v nbdcopy >/dev/null 2>&1; then
  copy_and_crash control nbdcopy
  if "$QEMU_IMG" compare -q -f raw -F raw "$src" "$tmp/control.img"; then
    fail "control: a copy without flush survived the crash; the test proves nothing"
  fi
  echo "control: without a flush the crash lost data, as it should"
fi
