#!/bin/bash
# A failed copy can simply be run again: after a destination that fails
# writes (or a source that fails reads, or a timeout) has left a partial
# copy, the same command against the healthy server, on the same socket
# and the same disk, succeeds and the destination then equals the source.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter error
requires_nbdkit_filter delay
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin file
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

size=256M
# fresh_src: the source, started afresh on the same socket before each
# copy that follows a failed one.  A failed copy ends with requests in
# flight on the source too, and nbdkit 1.32 may abort then (see
# restart_nbdkit in tests/functions.sh).
fresh_src ()
{
  restart_nbdkit src -r sparse-random size=$size seed=9 percent=30 \
    runlength=65536
}
fresh_src
src=$(uri_of "$tmp/src.sock")
dst=$(uri_of "$tmp/dst.sock")

# The destination disk starts full of non-zero junk, so that only a
# complete copy (data and zeroes) can make it equal to the source.
head -c $size < <(yes junk) >"$tmp/junk.img"
[ "$(stat -c %s "$tmp/junk.img")" -eq $((256 * 1024 * 1024)) ] ||
  fail "could not write the junk disk"
junk ()
{
  cp "$tmp/junk.img" "$tmp/dst.img"
}
junk

# The reference: the source as qemu-img reads it.
"$QEMU_IMG" convert -f raw -O raw "$src" "$tmp/ref.img"

# start_dst ARGS...: (re)start the destination server on the same
# socket with ARGS, ending the previous one first.
start_dst ()
{
  restart_nbdkit dst "$@"
}

same ()
{
  cmp -s "$tmp/ref.img" "$tmp/dst.img" ||
    fail "destination differs from the source after: $*"
}

differs ()
{
  if cmp -s "$tmp/ref.img" "$tmp/dst.img"; then
    fail "the failed copy was complete (the test proves nothing): $*"
  fi
}

# destination_fails WHAT PATTERN ERROR-FILTER-ARGS...: onto the junk
# disk, a copy to the destination behind nbdkit's error filter with
# ERROR-FILTER-ARGS fails with a message matching PATTERN and leaves it
# incomplete; the same copy to the healthy server on the same socket
# then makes it equal to the source.
destination_fails ()
{
  local what=$1 pattern=$2
  shift 2
  junk
  start_dst --filter=error file "$tmp/dst.img" "$@"
  expect_fail "$pattern" "$NBDCP" "$src" "$dst"
  start_dst file "$tmp/dst.img"
  fresh_src
  differs "$what failing"
  run_nbdcp "$src" "$dst"
  same "a retry after $what failed"
}

# 1. Every write fails.
destination_fails "every write" \
  '^nbdcp: destination write at offset [0-9]+ length [0-9]+ failed: Input/output error$' \
  error-pwrite=EIO error-pwrite-rate=100%

# 2. Some writes fail, after others went through.
destination_fails "some writes" \
  'destination write at offset [0-9]+ length [0-9]+ failed' \
  error-pwrite=EIO error-pwrite-rate=3%

# 3. Zeroes fail (the junk must still be zeroed by the retry).
destination_fails "every zero" \
  'destination (zero|write) at offset [0-9]+ length [0-9]+ failed' \
  error-zero=EIO error-zero-rate=100% error-trim=EIO error-trim-rate=100%

# 4. Source reads fail part way, then the source is healthy.
junk
start_nbdkit badsrc -r --filter=error sparse-random size=$size seed=9 \
  percent=30 runlength=65536 error-pread=EIO error-pread-rate=3%
expect_fail 'source read at offset [0-9]+ length [0-9]+ failed' \
  "$NBDCP" "$(uri_of "$tmp/badsrc.sock")" "$dst"
start_dst file "$tmp/dst.img"
differs "some reads failing"
run_nbdcp "$src" "$dst"
same "a retry after some reads failed"

# 5. A destination that stopped answering (--timeout), then answers.
# (--timeout also bounds the handshake: 2 s, not 1, so that a handshake
# slowed by a loaded machine is not what times out.)
junk
start_dst --filter=delay file "$tmp/dst.img" delay-write=30
expect_fail 'no reply in .*\(--timeout\)' \
  "$NBDCP" --timeout=2 "$src" "$dst"
start_dst file "$tmp/dst.img"
fresh_src
differs "a timeout"
run_nbdcp --timeout=5 "$src" "$dst"
same "a retry after a timeout"

# 6. A fresh destination on the same socket after a failed one: a
# memory disk that fails every write, then a new empty file.
start_dst --filter=error memory size=$size error-pwrite=EIO \
  error-pwrite-rate=100%
expect_fail 'destination write' "$NBDCP" "$src" "$dst"
truncate -s $size "$tmp/fresh.img"
start_dst file "$tmp/fresh.img"
fresh_src
run_nbdcp "$src" "$dst"
cmp -s "$tmp/ref.img" "$tmp/fresh.img" ||
  fail "a fresh destination after a failed one differs from the source"
