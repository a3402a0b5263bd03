#!/bin/bash
# --stats after reconnections (--retry): data, zeroed and skipped count
# each byte of the source once, so that they add up to its size as the
# man page says, and the bytes copied again are given apart as
# "redone".  The destination breaks in the middle of the second segment
# (start_breaking_nbdkit) while the first, finished but not flushed, is
# copied again too; the copies are checked with qemu-img.
. "${srcdir:-.}/tests/functions.sh"

requires "$QEMU_IMG"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin file
requires_nbdkit_plugin sh
"$NBDCP" --retry=1 --help >/dev/null

size=$((2 * 128 * 1024 * 1024 + 3 * 1024 * 1024 + 4096))
start_nbdkit src sparse-random $size seed=5 percent=10 runlength=4194304 \
  random-content=true
src=$(uri_of "$tmp/src.sock")

# json KEY: the number KEY has in the JSON object in $tmp/err.
json ()
{
  sed -n 's/.*"'"$1"'": \([0-9]*\).*/\1/p' "$tmp/err"
}

# copy NAME NBDCP-ARGS...: one connection copies the source onto a fresh
# file through a destination that breaks 16 MiB into the second segment
# and comes back as a plain file server; then the stats are checked.
copy ()
{
  local name=$1
  shift
  copy_across_break "$name" $size $((128 * 1024 * 1024)) \
    $((16 * 1024 * 1024)) "$src" \
    -C 1 -T 1 --retry=10 --retry-delay=0.1 --stats=json "$@"
  check_same "$src" "$tmp/$name.img" "$name"

  data=$(json data_bytes) zero=$(json zero_bytes)
  skipped=$(json skipped_bytes) resumed=$(json resumed_bytes)
  redone=$(json redone_bytes) retries=$(json retries)
  [ -n "$data" ] && [ -n "$zero" ] && [ -n "$skipped" ] &&
    [ -n "$resumed" ] && [ -n "$redone" ] && [ -n "$retries" ] ||
    { cat "$tmp/err" >&2; fail "$name: a count is missing from --stats=json"; }
  [ $((data + zero + skipped + resumed)) = $size ] || {
    cat "$tmp/err" >&2
    fail "$name: data $data + zeroed $zero + skipped $skipped + resumed" \
      "$resumed is $((data + zero + skipped + resumed)), not the size $size"
  }
  # The first segment was finished, but not flushed: it was copied
  # again whole, with what of the second had been written before the
  # break (perhaps nothing: the server runs requests in parallel, and
  # the one that breaks it may come first).
  [ "$redone" -ge $((128 * 1024 * 1024)) ] ||
    { cat "$tmp/err" >&2; fail "$name: only $redone bytes redone"; }
  [ "$retries" -ge 1 ] || fail "$name: no reconnection counted"
  [ "$resumed" = 0 ] || fail "$name: $resumed bytes resumed without --resume"
}

copy zeroed --no-destination-extents
[ "$zero" != 0 ] || fail "zeroed: no zero requests (the test proves little)"
# By default the holes of the new file are not zeroed: skipped, where
# the destination (once it is the file plugin) says it reads as zero.
copy already
[ "$skipped" != 0 ] || fail "already: nothing skipped (the test proves little)"
copy skipped --destination-is-zero
[ "$skipped" != 0 ] || fail "skipped: nothing skipped (the test proves little)"
exit 0
