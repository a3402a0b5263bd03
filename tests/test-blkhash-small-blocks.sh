#!/bin/bash
# --blkhash accepts every power of 2 from 1 byte, as nbdcopy 1.24 does:
# md5/4 of "hello" is nbdcopy's own test value (from a file, an NBD
# server and stdin), and blocks of 1 to 256 bytes give the Python
# reference's value on a small image, on a 140 MiB one (two segments,
# several lanes: blocks smaller than a digest keep the segment's bytes
# in the slot), and with --verify; the copies themselves are right.
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires "$QEMU_IMG"
requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires_nbdkit_plugin sparse-random
"$NBDCP" --blkhash --help >/dev/null
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"

# nbdcopy's test: md5/4 on "hello" (two whole blocks and a short one).
hello_md5_4=8262896de34125dec173722c920e8bd0
printf hello >"$tmp/hello"
expect_equal "ref hello md5/4" $hello_md5_4 \
  "$(python3 "$ref" md5/4 "$tmp/hello")"
expect_equal "hello md5/4, file" $hello_md5_4 \
  "$(run_nbdcp --blkhash=md5/4 "$tmp/hello" null:)"
expect_equal "hello md5/4, NBD" $hello_md5_4 \
  "$(run_nbdcp --blkhash=md5/4 -- [ "$NBDKIT" data '"hello"' ] null:)"
expect_equal "hello md5/4, stdin" $hello_md5_4 \
  "$(run_nbdcp --blkhash=md5/4 - null: <"$tmp/hello")"

# A 3 MiB image with data at its start, in its middle and in its short
# last block; every algorithm at small block sizes, from 1 byte, into a
# file compared with cmp.
size=$((3 * 1024 * 1024 + 7))
truncate -s $size "$tmp/small.raw"
printf 'hello, small blocks' | dd of="$tmp/small.raw" conv=notrunc 2>/dev/null
head -c 3000 /dev/urandom |
  dd of="$tmp/small.raw" bs=1 seek=1500000 conv=notrunc 2>/dev/null
printf 'tail!!' | dd of="$tmp/small.raw" bs=1 seek=$((size - 6)) \
  conv=notrunc 2>/dev/null
for spec in md5/1 sha1/2 sha256/8 sha512/32 md5/128; do
  rm -f "$tmp/small.copy"
  expect_equal "$spec, small image" \
    "$(python3 "$ref" "$spec" "$tmp/small.raw")" \
    "$(run_nbdcp --blkhash="$spec" "$tmp/small.raw" "$tmp/small.copy")"
  cmp "$tmp/small.raw" "$tmp/small.copy" || fail "$spec: the copy differs"
done

# Two segments, four lanes, sparse data with zero extents in between:
# a block smaller than a digest (md5/8: the slot keeps bytes) and a
# small block larger than one (sha256/256: digests).
size=$((140 * 1024 * 1024 + 12345))
start_nbdkit sr sparse-random $size seed=7 percent=1 runlength=300000
sr=$(uri_of "$tmp/sr.sock")
"$QEMU_IMG" convert -f raw -O raw "$sr" "$tmp/sr.raw"
truncate -s $size "$tmp/sr.raw" # qemu rounds an NBD disk up to 512
i=0
for spec in md5/8 sha256/256; do
  i=$((i + 1))
  start_nbdkit "m$i" memory $size
  dst=$(uri_of "$tmp/m$i.sock")
  expect_equal "$spec, 140 MiB" "$(python3 "$ref" "$spec" "$tmp/sr.raw")" \
    "$(run_nbdcp -C 4 -T 4 --blkhash="$spec" "$sr" "$dst")"
  check_same "$tmp/sr.raw" "$dst" "$spec, 140 MiB"
done

# --verify hashes the destination the same way: equal after the copy.
run_nbdcp --verify --blkhash=md5/4 "$tmp/small.raw" "$tmp/verified.raw" \
  >"$tmp/verify.out" ||
  fail "--verify --blkhash=md5/4 failed"
cmp "$tmp/small.raw" "$tmp/verified.raw" || fail "--verify: the copy differs"
expect_equal "--verify md5/4" "$(python3 "$ref" md5/4 "$tmp/small.raw")" \
  "$(cat "$tmp/verify.out")"
