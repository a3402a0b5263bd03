#!/bin/bash
# A failed read, write, zero, block status or flush ends the copy with
# exit 1 and a message naming the operation, offset, length and error;
# no hang, never exit 0.  Errors come from nbdkit's error filter.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter error
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

src_size=512M
src=$(uri_of "$tmp/src.sock")
dst=$(uri_of "$tmp/dst.sock")
# fresh_src, fresh_dst: a healthy source or destination, started afresh
# for each case.  A failed copy ends with requests in flight on the
# healthy side too, and nbdkit 1.32 may abort then (see restart_nbdkit
# in tests/functions.sh): the next case would find it gone.
fresh_src ()
{
  restart_nbdkit src -r sparse-random size=$src_size seed=7 percent=50
}
fresh_dst ()
{
  restart_nbdkit dst memory size=$src_size
}

# Every read fails.
start_nbdkit badread -r --filter=error sparse-random size=$src_size seed=7 percent=50 \
  error-pread=EIO error-pread-rate=100%
fresh_dst
expect_fail '^nbdcp: source read at offset [0-9]+ length [0-9]+ failed: Input/output error$' \
  "$NBDCP" "$(uri_of "$tmp/badread.sock")" "$dst"

# Some reads fail, in the middle of a multi-connection copy.
start_nbdkit someread -r --filter=error sparse-random size=$src_size seed=7 percent=50 \
  error-pread=EIO error-pread-rate=5%
fresh_dst
expect_fail 'source read at offset [0-9]+ length [0-9]+ failed' \
  "$NBDCP" -C 4 -T 4 "$(uri_of "$tmp/someread.sock")" "$dst"

# Block status fails.
start_nbdkit badextents -r --filter=error sparse-random size=$src_size \
  error-extents=EIO error-extents-rate=100%
fresh_dst
expect_fail 'source extents \(block status\) at offset [0-9]+ length [0-9]+ failed' \
  "$NBDCP" "$(uri_of "$tmp/badextents.sock")" "$dst"

# Writes fail (ENOSPC, so the message must carry the server's errno).
start_nbdkit badwrite --filter=error memory size=$src_size \
  error-pwrite=ENOSPC error-pwrite-rate=100%
fresh_src
expect_fail 'destination write at offset [0-9]+ length [0-9]+ failed: No space left on device' \
  "$NBDCP" "$src" "$(uri_of "$tmp/badwrite.sock")"

# Zeroes fail (sent even where the fresh disk reads as zero already).
start_nbdkit badzero --filter=error memory size=$src_size \
  error-zero=EIO error-zero-rate=100%
fresh_src
expect_fail 'destination zero at offset [0-9]+ length [0-9]+ failed' \
  "$NBDCP" --no-destination-extents "$src" "$(uri_of "$tmp/badzero.sock")"

# Flush fails: the data all went, but the copy is not durable.  (The
# error filter cannot fail flushes; the eval plugin can.)
requires_nbdkit_plugin eval
start_nbdkit badflush eval get_size='echo 4194304' can_write='exit 0' \
  pread='dd if=/dev/zero count=$3 iflag=count_bytes status=none' \
  pwrite='cat >/dev/null' can_flush='exit 0' \
  flush='echo "EIO flush refused" >&2; exit 1'
start_nbdkit small -r pattern size=4M
expect_fail '^nbdcp: destination flush failed: Input/output error$' \
  "$NBDCP" "$(uri_of "$tmp/small.sock")" "$(uri_of "$tmp/badflush.sock")"

# The same plugins without the error filter copy, so the failures above
# were the filter's.
fresh_src
fresh_dst
run_nbdcp "$src" "$dst"
check_same "$src" "$dst" "the healthy pair"

# Errors that start in the middle of a copy (error-file appears), while
# requests are in flight on every connection: still exit 1, no hang.
# The errors start once the log (in front of the other filters) shows
# reads on four connections, not after a fixed time, which on a loaded
# machine could pass before nbdcp had even connected.
requires_nbdkit_filter log
requires_nbdkit_filter delay
start_nbdkit midway -r --filter=log --filter=error --filter=delay \
  sparse-random size=1G percent=100 seed=7 rdelay=100ms \
  error-pread=EIO error-pread-rate=100% error-pread-file="$tmp/inject" \
  logfile="$tmp/midway.log"
start_nbdkit bigdst memory size=1G
timeout 60 "$NBDCP" -C 4 -T 4 "$(uri_of "$tmp/midway.sock")" \
  "$(uri_of "$tmp/bigdst.sock")" 2>"$tmp/midway.err" &
copier=$!
# reading_on_four: reads have come on four connections (or nbdcp ended).
reading_on_four ()
{
  ! kill -0 $copier 2>/dev/null ||
    [ "$(awk '$4 == "Read" && !c[$3]++ { n++ } END { print n + 0 }' \
         "$tmp/midway.log")" -ge 4 ]
}
wait_until 60 reading_on_four || fail "mid-copy read errors: no reads on four connections"
kill -0 $copier 2>/dev/null || fail "mid-copy read errors: nbdcp ended too soon"
touch "$tmp/inject"
r=0
wait "$copier" || r=$?
[ "$r" -eq 1 ] || fail "mid-copy read errors: expected exit 1, got $r"
grep -Eq '^nbdcp: source read at offset [0-9]+ length [0-9]+ failed: Input/output error$' \
  "$tmp/midway.err" || fail "mid-copy read errors: $(cat "$tmp/midway.err")"
