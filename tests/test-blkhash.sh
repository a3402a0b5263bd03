#!/bin/bash
# --blkhash gives nbdcopy's and blksum's checksum (the known values of nbdcopy's tests, and an independent Python reference) for every source kind, algorithm and block size, with holes, zero extents and zero data hashed alike, while the copy itself stays right.
. "${srcdir:-.}/tests/functions.sh"

requires python3
requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires_nbdkit_plugin pattern
requires_nbdkit_plugin sparse-random
requires "$QEMU_IMG"
"$NBDCP" --blkhash --help >/dev/null
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"

# The known values (from nbdcopy's tests).
empty=af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc
hello_md5=f741ac9ce55f5325906bb14e9c05d467
hello_sha256=337355feb53a5309d5aba92796223c2c84ffab930e706c01fef573a2722545e6
hello_md5_4=8262896de34125dec173722c920e8bd0
hello_goodbye=61b8f3a8cea76e16eeff7ce27f1b7711c1f1e437f5038cec17773772a4bded28
pattern_1g=6750a1c3d78e46eaffb0d094624825dea88f0c7098b2424fce776c0748442649

: >"$tmp/empty"
printf hello >"$tmp/hello"
# The reference agrees with them, md5/4 included (nbdcp's own md5/4
# and other small blocks: test-blkhash-small-blocks.sh).
expect_equal "ref empty" $empty "$(python3 "$ref" "$tmp/empty")"
expect_equal "ref hello md5" $hello_md5 "$(python3 "$ref" md5 "$tmp/hello")"
expect_equal "ref hello sha256" $hello_sha256 \
  "$(python3 "$ref" sha256 "$tmp/hello")"
expect_equal "ref hello md5/4" $hello_md5_4 \
  "$(python3 "$ref" md5/4 "$tmp/hello")"

# nbdcp: files, stdin, a subprocess server and NBD sockets.
expect_equal "empty file" $empty "$(run_nbdcp --blkhash "$tmp/empty" null:)"
expect_equal "hello md5" $hello_md5 \
  "$(run_nbdcp --blkhash=md5 "$tmp/hello" null:)"
expect_equal "hello sha256" $hello_sha256 \
  "$(run_nbdcp --blkhash=sha256 "$tmp/hello" "$tmp/hello.copy")"
cmp "$tmp/hello" "$tmp/hello.copy" || fail "hello: the copy differs"
expect_equal "hello from stdin" $hello_sha256 \
  "$(run_nbdcp --blkhash - null: <"$tmp/hello")"
expect_equal "empty stdin" $empty "$(run_nbdcp --blkhash - null: </dev/null)"
expect_equal "hello goodbye" $hello_goodbye \
  "$(run_nbdcp --blkhash -- [ "$NBDKIT" data '"hello" @1048576 "goodbye"' ] \
       null:)"
start_nbdkit pattern pattern 1G
expect_equal "pattern 1G" $pattern_1g \
  "$(run_nbdcp --blkhash "$(uri_of "$tmp/pattern.sock")" null:)"
# The same disk through a memory server: data, then zero extents.
start_nbdkit hg memory 1048583
"$QEMU_IMG" convert -n -f raw -O raw "nbd+unix:///?socket=$tmp/hg.sock" \
  "nbd+unix:///?socket=$tmp/hg.sock" 2>/dev/null || :
run_nbdcp -- [ "$NBDKIT" data '"hello" @1048576 "goodbye"' ] \
  "$(uri_of "$tmp/hg.sock")"
expect_equal "hello goodbye, memory" $hello_goodbye \
  "$(run_nbdcp --blkhash "$(uri_of "$tmp/hg.sock")" null:)"

# Sparse-random sources of odd sizes (a short last block, segments of
# 128 MiB, several lanes), every algorithm, several block sizes and
# copy modes, to null: and to a memory disk checked with qemu-img.
size=$((140 * 1024 * 1024 + 12345))
start_nbdkit sr sparse-random $size seed=7 percent=20 runlength=300000
sr=$(uri_of "$tmp/sr.sock")
"$QEMU_IMG" convert -f raw -O raw "$sr" "$tmp/sr.raw"
# qemu rounds an NBD disk's size up to 512 bytes: cut the padding.
truncate -s $size "$tmp/sr.raw"
i=0
for spec in md5 sha1/512 sha256/4K sha512/1M sha256/2M sha1/64K md5/128K; do
  want=$(python3 "$ref" "$spec" "$tmp/sr.raw")
  expect_equal "$spec to null:" "$want" \
    "$(run_nbdcp -C 4 -T 4 --blkhash="$spec" "$sr" null:)"
  i=$((i + 1))
  start_nbdkit "m$i" memory $size
  dst=$(uri_of "$tmp/m$i.sock")
  case $i in
  1) opts=(--request-size=4K) ;; # raised to the hash block
  2) opts=(-S 512 --destination-is-zero) ;;
  3) opts=(--allocated) ;;
  4) opts=(--no-extents -C 2 -T 1) ;;
  5) opts=(--queue-size=64M) ;;
  6) opts=(--synchronous) ;;
  *) opts=(-R 2 --request-size=128K) ;;
  esac
  expect_equal "$spec ${opts[*]} to memory" "$want" \
    "$(run_nbdcp --blkhash="$spec" "${opts[@]}" "$sr" "$dst")"
  "$QEMU_IMG" compare -f raw -F raw "$sr" "$dst" >/dev/null ||
    fail "$spec ${opts[*]}: the copy differs"
done

# Small blocks make few digest slots (4 for sha512/512, 64 MiB): four
# lanes over six segments then wait for one another's segments to be
# fed in order.
size=$((700 * 1024 * 1024 + 4095))
start_nbdkit sr7 sparse-random $size seed=11 percent=5
"$QEMU_IMG" convert -f raw -O raw "$(uri_of "$tmp/sr7.sock")" "$tmp/sr7.raw"
truncate -s $size "$tmp/sr7.raw"
expect_equal "sha512/512, few slots" \
  "$(python3 "$ref" sha512/512 "$tmp/sr7.raw")" \
  "$(run_nbdcp -C 4 -T 4 --blkhash=sha512/512 "$(uri_of "$tmp/sr7.sock")" null:)"
rm -f "$tmp/sr7.raw"

# The same source from a file, from stdin (a stream: its size is known
# only at the end) and into a stream.
want=$(python3 "$ref" sha256 "$tmp/sr.raw")
expect_equal "file source" "$want" \
  "$(run_nbdcp --blkhash -C 2 -T 2 "$tmp/sr.raw" null:)"
expect_equal "stdin source" "$want" \
  "$(run_nbdcp --blkhash - null: <"$tmp/sr.raw")"
run_nbdcp --blkhash-file="$tmp/stream.sum" "$sr" - >"$tmp/stream.out"
cmp "$tmp/sr.raw" "$tmp/stream.out" || fail "stream destination: differs"
expect_equal "stream destination, --blkhash-file" "$want" \
  "$(cat "$tmp/stream.sum")"
# A stream that ends exactly at a segment's end, and at a request's.
head -c 134217728 "$tmp/sr.raw" >"$tmp/seg.raw"
expect_equal "stdin, one whole segment" "$(python3 "$ref" "$tmp/seg.raw")" \
  "$(run_nbdcp --blkhash - null: <"$tmp/seg.raw")"
head -c 3145728 "$tmp/sr.raw" >"$tmp/req.raw"
expect_equal "stdin, whole requests" \
  "$(python3 "$ref" sha1/512 "$tmp/req.raw")" \
  "$(run_nbdcp --blkhash=sha1/512 - null: <"$tmp/req.raw")"

# The largest block size, on a file with one whole block and a short
# one (big requests from sparse-random would only make the test slow).
head -c $((32 * 1024 * 1024 + 777)) "$tmp/sr.raw" >"$tmp/big.raw"
expect_equal "sha256/32M" "$(python3 "$ref" sha256/32M "$tmp/big.raw")" \
  "$(run_nbdcp --blkhash=sha256/32M "$tmp/big.raw" null:)"

# Holes, zero extents and data that reads as zero hash alike.
truncate -s 5000000 "$tmp/hole.raw"
head -c 5000000 /dev/zero >"$tmp/zero.raw"
want=$(python3 "$ref" "$tmp/zero.raw")
expect_equal "a hole" "$want" "$(run_nbdcp --blkhash "$tmp/hole.raw" null:)"
expect_equal "zero data" "$want" "$(run_nbdcp --blkhash "$tmp/zero.raw" null:)"
expect_equal "zero data, no extents" "$want" \
  "$(run_nbdcp --blkhash --no-extents -S 0 "$tmp/zero.raw" null:)"
expect_equal "zero extents" "$want" \
  "$(run_nbdcp --blkhash -- [ "$NBDKIT" memory 5000000 ] null:)"
expect_equal "zero extents, sha512/512" \
  "$(python3 "$ref" sha512/512 "$tmp/zero.raw")" \
  "$(run_nbdcp --blkhash=sha512/512 -- [ "$NBDKIT" memory 5000000 ] null:)"

# Memory follows what is in flight, not the disk size: a 1 TiB sparse
# disk (16M blocks) through 4 lanes stays under the buffer pools
# (4 x 16 MiB) + 32 MiB.  Its value: all 64K blocks are zero blocks.
start_nbdkit tib memory 1T
/usr/bin/time -f '%M' -o "$tmp/rss" timeout 120 "$NBDCP" -C 4 -T 4 --blkhash \
  "$(uri_of "$tmp/tib.sock")" null: >"$tmp/tib.sum"
want=$(python3 -c '
import hashlib, struct
z = hashlib.sha256(bytes(65536)).digest() * 8192
h = hashlib.sha256()
for i in range(2048):
    h.update(z)
h.update(struct.pack("<Q", 1 << 40))
print(h.hexdigest())')
expect_equal "1 TiB of zeroes" "$want" "$(cat "$tmp/tib.sum")"
rss_kb=$(tail -1 "$tmp/rss")
[ "$rss_kb" -lt $(((64 + 32) * 1024)) ] ||
  fail "1 TiB: peak RSS ${rss_kb} KiB, over pools + 32 MiB"

# --blkhash-file alone turns the checksum on and leaves stdout alone;
# -v and --stats still work.
run_nbdcp --blkhash-file="$tmp/h.sum" "$tmp/hello" null: >"$tmp/out"
expect_equal "--blkhash-file" $hello_sha256 "$(cat "$tmp/h.sum")"
[ ! -s "$tmp/out" ] || fail "--blkhash-file printed on stdout"
run_nbdcp -v --stats --blkhash=md5 "$tmp/hello" null: >"$tmp/out" \
  2>"$tmp/err"
grep -qx $hello_md5 "$tmp/out" || fail "--stats: no checksum line"
grep -q "blkhash md5/65536" "$tmp/err" || fail "-v: no --blkhash note"

# Refused: unknown algorithms, block sizes that are not a power of 2
# from 1 to 32M, a checksum that would go into the copy on stdout.
for bad in sha3 "" /64K md5/3 sha256/1000 sha256/64M sha1/0 sha1/-1 \
  sha1/x; do
  expect_fail "^nbdcp: --blkhash" "$NBDCP" --blkhash="$bad" "$tmp/hello" null:
done
expect_fail "use --blkhash-file" "$NBDCP" --blkhash "$tmp/hello" -
expect_fail "blkhash-file" "$NBDCP" --blkhash-file=/nonexistent/dir/x \
  "$tmp/hello" null:
# With standard output closed the checksum has nowhere to go: refused,
# not printed into the /dev/null put in its place and exit 0.
r=0
"$NBDCP" --blkhash "$tmp/hello" null: >&- 2>"$tmp/err" || r=$?
[ $r -eq 1 ] || fail "--blkhash with stdout closed: exit $r, not 1"
grep -q '^nbdcp: --blkhash: standard output is closed' "$tmp/err" ||
  fail "--blkhash with stdout closed: $(cat "$tmp/err")"
