#!/bin/bash
# --retry with --blkhash and --verify: when the destination breaks in the
# middle of segments, so that they are read and hashed again from their
# start after the reconnection, the checksum printed is still the
# source's (an independent reference computes it from what qemu-img
# reads), the copy is identical, and --verify agrees.  The break is
# placed (start_breaking_nbdkit) 48 MiB or more into the segments being
# copied, so their digests are partly made when they start over: a
# segment whose count of hashed bytes kept the first attempt's would be
# complete too early, some of its digests never made again.
. "${srcdir:-.}/tests/functions.sh"

requires python3
requires "$QEMU_IMG"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin file
requires_nbdkit_plugin sh
"$NBDCP" --retry=1 --blkhash --help >/dev/null
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"

# Three segments and a short fourth; data throughout each segment.
size=$((3 * 128 * 1024 * 1024 + 5 * 1024 * 1024 + 12345))
start_nbdkit src sparse-random $size seed=11 percent=25 \
  runlength=1048576 random-content=true
src=$(uri_of "$tmp/src.sock")
"$QEMU_IMG" convert -f raw -O raw "$src" "$tmp/ref.raw"
# qemu rounds an NBD disk's size up to 512 bytes: cut the padding.
truncate -s $size "$tmp/ref.raw"
want=$(python3 "$ref" "$tmp/ref.raw")

# copy NAME NBDCP-ARGS...: copy the source onto a fresh file through a
# destination that breaks 48 MiB into a segment (both lanes are in their
# first segment then) and comes back as a plain file server; the
# checksum nbdcp prints goes to $tmp/NAME.out, its stderr to $tmp/err.
copy ()
{
  local name=$1
  shift
  copy_across_break "$name" $size 0 $((48 * 1024 * 1024)) "$src" \
    -C 2 -T 2 --retry=10 --retry-delay=0.1 --stats=json "$@"
  grep -q "reconnecting in .* (retry 1 of 10)" "$tmp/err" ||
    { cat "$tmp/err" >&2; fail "$name: no reconnection was logged"; }
  # (Whether a write of the segments broken had been answered before
  # the break depends on timing: redone_bytes may be 0.  They were read
  # and hashed again from their start all the same.)
  grep -q '"retries": [1-9]' "$tmp/err" ||
    { cat "$tmp/err" >&2; fail "$name: no reconnection counted"; }
  check_same "$tmp/ref.raw" "$tmp/$name.img" "$name"
  [ "$(cat "$tmp/$name.out")" = "$want" ] ||
    fail "$name: checksum $(cat "$tmp/$name.out"), the source's is $want"
}

copy blkhash --blkhash
# --verify: the source's hash made across the break must equal the
# destination's, read back after the copy.
copy verify --blkhash --verify
exit 0
