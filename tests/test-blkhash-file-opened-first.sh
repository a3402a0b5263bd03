#!/bin/bash
# --blkhash-file that cannot be created fails the copy before anything
# is written (exit 1, a message naming the file): an NBD destination's
# log shows no write, a destination file is not created.  A copy that
# fails after the checksum file was opened removes the file it created
# and leaves an existing one as it was; a copy that succeeds writes the
# checksum (the Python reference's) into it, over what it held.
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires "$QEMU_IMG"
requires_nbdkit_plugin memory
requires_nbdkit_plugin pattern
requires_nbdkit_filter log
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"

size=$((3 * 1024 * 1024))
start_nbdkit src pattern $size
src=$(uri_of "$tmp/src.sock")
start_nbdkit dst --filter=log memory $size logfile="$tmp/dst.log"
dst=$(uri_of "$tmp/dst.sock")
bad=$tmp/no/such/dir/sum

# An NBD destination: nothing is written to it.
expect_fail "--blkhash-file: $bad: No such file or directory" \
  "$NBDCP" --blkhash-file="$bad" "$src" "$dst"
cp "$tmp/dst.log" "$tmp/dst.log.1"
! grep -Eq ' (Write|Zero|Trim) ' "$tmp/dst.log.1" ||
  fail "a copy whose --blkhash-file cannot be created wrote to the destination"
# A destination file: not created.
expect_fail "--blkhash-file: $bad" \
  "$NBDCP" --blkhash=md5 --blkhash-file="$bad" "$src" "$tmp/copy.raw"
[ ! -e "$tmp/copy.raw" ] || fail "the destination file was created"

# A copy refused after the file was opened (a destination too small)
# leaves no checksum file behind, and an existing one untouched.
start_nbdkit small memory 1M
expect_fail "is smaller than source" \
  "$NBDCP" --blkhash-file="$tmp/new.sum" "$src" "$(uri_of "$tmp/small.sock")"
[ ! -e "$tmp/new.sum" ] || fail "a failed copy left the checksum file it made"
echo old >"$tmp/old.sum"
expect_fail "is smaller than source" \
  "$NBDCP" --blkhash-file="$tmp/old.sum" "$src" "$(uri_of "$tmp/small.sock")"
[ "$(cat "$tmp/old.sum")" = old ] || fail "a failed copy changed the old file"

# A copy that succeeds: the checksum alone, over the old contents.
printf 'a longer line that is not a checksum\n' >"$tmp/old.sum"
run_nbdcp --blkhash-file="$tmp/old.sum" "$src" "$tmp/copy.raw"
check_same "$src" "$tmp/copy.raw"
want=$(python3 "$ref" sha256 "$tmp/copy.raw")
[ "$(cat "$tmp/old.sum")" = "$want" ] ||
  fail "checksum file holds '$(cat "$tmp/old.sum")', expected $want"
