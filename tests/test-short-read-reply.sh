#!/bin/bash
# A read whose reply does not cover its request exactly once fails: a
# structured reply of one data chunk for the first half of the request
# (bad-nbd-server.py's half-read mode), or of two chunks that overlap
# though their lengths add up to the request's (overlap-read).  nbdcp
# exits 1 naming the read, its offset and length and what was wrong,
# also with --blkhash, --verify and --retry (it used to copy the zeroes
# it had not been sent and exit 0).  Replies that do cover their
# requests still work: the same server in its good mode, and nbdkit
# with and without structured replies (a simple reply is one chunk).
. "${srcdir:-.}/tests/functions.sh"
requires "$PYTHON"
requires "$QEMU_IMG"
requires_nbdkit_plugin pattern

size=$((1 << 20))
start_nbdkit ref -r pattern size=$size
ref=$(uri_of "$tmp/ref.sock")

start_bad_server good good --size=$size
copy_checked "good mode" "$(uri_of "$tmp/good.sock")" "$tmp/good.img"
check_same "$ref" "$tmp/good.img" "good mode"
start_nbdkit nosr -r --no-sr pattern size=$size
copy_checked "nbdkit --no-sr" "$(uri_of "$tmp/nosr.sock")" "$tmp/nosr.img" \
  --no-extents
check_same "$ref" "$tmp/nosr.img" "nbdkit --no-sr"

# The same bytes, each reply in 8 pieces sent out of order (4 of them
# ahead of the first), are checked and taken; in 10 pieces (5 ahead),
# more than nbdcp keeps track of, the read fails rather than go
# unchecked.
start_bad_server shuffled shuffled-read --size=$size
copy_checked "shuffled-read" "$(uri_of "$tmp/shuffled.sock")" "$tmp/shuffled.img"
check_same "$ref" "$tmp/shuffled.img" "shuffled-read"
# Four pieces kept ahead, then one that joins two of them while a
# fourth is still kept after them.
start_bad_server bridged bridged-read --size=$size
copy_checked "bridged-read" "$(uri_of "$tmp/bridged.sock")" "$tmp/bridged.img"
check_same "$ref" "$tmp/bridged.img" "bridged-read"
start_bad_server scattered shuffled-read --size=$size --chunks=10
expect_fail "source read at offset [0-9]+ length [0-9]+ failed: server's reply came in more than 4 pieces out of order" \
  "$NBDCP" "$(uri_of "$tmp/scattered.sock")" "$tmp/scattered.img"

for mode in half-read overlap-read; do
  start_bad_server "$mode" "$mode" --size=$size
  uri=$(uri_of "$tmp/$mode.sock")
  case $mode in
  half-read) what="server's reply covered [0-9]+ of [0-9]+ bytes" ;;
  overlap-read) what="server's reply had overlapping chunks" ;;
  esac
  read="source read at offset [0-9]+ length [0-9]+ failed: $what"
  expect_fail "$read" "$NBDCP" "$uri" "$tmp/$mode.img"
  expect_fail "$read" "$NBDCP" --blkhash "$uri" "$tmp/$mode.img"
  [ ! -s "$tmp/out" ] || fail "$mode: --blkhash printed a checksum: $(cat "$tmp/out")"
  expect_fail "$read" "$NBDCP" --verify "$uri" "$tmp/$mode.img"
  # --retry reads again on a new connection, which fails the same way.
  retried="source connection 1: read at offset [0-9]+ length [0-9]+ failed"
  expect_fail "$retried: $what \\(gave up after 1 retry\\)" \
    "$NBDCP" --retry=1 --retry-delay=0.1 "$uri" "$tmp/$mode.img"
done
