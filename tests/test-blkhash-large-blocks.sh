#!/bin/bash
# --blkhash (and --verify) with a hash block larger than the servers'
# largest request: each block is read in several requests and gathered
# before it is hashed.  Sources behind blocksize-maximum 64K and 1M,
# blocks of 1M, 4M and 32M in several algorithms, a disk of two
# segments whose size is no multiple of any block (its short last block
# holds data), with holes and data (sparse-random); the hash equals
# blkhash-ref.py's of the source as qemu-img reads it, and the copy is
# the source (qemu-img compare), on one connection and on several,
# into a destination as constrained (zero requests cut inside a block)
# and into a file, and across a reconnection (--retry).  --verify passes on such a copy and still catches a
# destination that differs.
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires "$QEMU_IMG"
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires_nbdkit_plugin file
requires_nbdkit_plugin sh
requires_nbdkit_filter blocksize-policy
"$NBDCP" --blkhash --help >/dev/null
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"

# 130 MiB and a bit: two segments, a short last block of every size.
size=$((130 * 1024 * 1024 + 3 * 4096 + 512))
for max in 65536 1048576; do
  start_nbdkit "src$max" --filter=blocksize-policy sparse-random $size \
    seed=$max percent=3 runlength=200000 blocksize-maximum=$max
done
# Data in the last, short block too (sparse-random may leave it a hole):
# the same shape from a file, served with a 1M maximum.
src64=$(uri_of "$tmp/src65536.sock")
src1m=$(uri_of "$tmp/src1048576.sock")
"$QEMU_IMG" convert -f raw -O raw "$src64" "$tmp/s64.raw"
"$QEMU_IMG" convert -f raw -O raw "$src1m" "$tmp/s1m.raw"
truncate -s $size "$tmp/s64.raw" "$tmp/s1m.raw"
cp "$tmp/s1m.raw" "$tmp/tail.raw"
printf 'the short last block' |
  dd of="$tmp/tail.raw" bs=1 seek=$((size - 100)) conv=notrunc 2>/dev/null
start_nbdkit tail --filter=blocksize-policy file "$tmp/tail.raw" \
  blocksize-maximum=1048576
srctail=$(uri_of "$tmp/tail.sock")
cmp -s "$tmp/s64.raw" /dev/zero -n $size && fail "the 64K source is empty"

i=0
# case SRC RAW SPEC DESTINATION-MAX NBDCP-OPTIONS...
case_ ()
{
  local src=$1 raw=$2 spec=$3 dmax=$4 dst got want
  shift 4
  i=$((i + 1))
  if [ "$dmax" = file ]; then
    dst="$tmp/copy$i.raw"
  else
    start_nbdkit "d$i" --filter=blocksize-policy memory $size \
      blocksize-maximum="$dmax"
    dst=$(uri_of "$tmp/d$i.sock")
  fi
  want=$(python3 "$ref" "$spec" "$raw")
  got=$(run_nbdcp "$@" --blkhash="$spec" "$src" "$dst" 2>"$tmp/err$i") ||
    {
      cat "$tmp/err$i" >&2
      fail "case $i ($spec, $*): nbdcp failed"
    }
  expect_equal "case $i ($spec, destination $dmax, $*)" "$want" "$got"
  check_same "$raw" "$dst" "case $i ($spec, $*)"
}

case_ "$src64" "$tmp/s64.raw" sha256/1M 65536
case_ "$src64" "$tmp/s64.raw" md5/4M 1048576 -C 2 -T 2
case_ "$src64" "$tmp/s64.raw" sha1/32M file
case_ "$src1m" "$tmp/s1m.raw" sha512/4M 65536 -C 4 -T 4
case_ "$srctail" "$tmp/tail.raw" sha256/32M 1048576 -C 2 -T 2
# Few blocks gathered at once and a tiny queue: lanes wait for them.
case_ "$srctail" "$tmp/tail.raw" sha1/4M 65536 --queue-size=64K -R 1

# --retry: a destination that breaks 4 MiB into the disk, while blocks
# are being gathered, and comes back; the copy starts its segment again
# and the blocks it was gathering are dropped, not mixed into the new.
copy_across_break brk $size 0 $((4 * 1024 * 1024)) "$srctail" \
  -C 1 -T 1 --retry=10 --retry-delay=0.1 --blkhash=sha256/4M
grep -q "reconnecting in" "$tmp/err" || fail "--retry: no reconnection"
expect_equal "--retry sha256/4M" "$(python3 "$ref" sha256/4M "$tmp/tail.raw")" \
  "$(cat "$tmp/brk.out")"
cmp "$tmp/tail.raw" "$tmp/brk.img" || fail "--retry: the copy differs"

# --verify with such blocks: passes on a right copy ...
start_nbdkit v --filter=blocksize-policy memory $size blocksize-maximum=65536
vdst=$(uri_of "$tmp/v.sock")
run_nbdcp --verify --blkhash=sha256/4M -C 2 -T 2 "$srctail" "$vdst" \
  >"$tmp/verify.out" 2>"$tmp/verify.err" ||
  {
    cat "$tmp/verify.err" >&2
    fail "--verify sha256/4M failed"
  }
expect_equal "--verify sha256/4M" \
  "$(python3 "$ref" sha256/4M "$tmp/tail.raw")" \
  "$(cat "$tmp/verify.out")"
check_same "$tmp/tail.raw" "$vdst" "--verify sha256/4M"

# ... and fails on a destination that drops one 64K write inside a 1M
# block (an nbdkit eval server over a file, its block status the file's
# holes): the pass gathers that block from 16 reads, one of them wrong.
small=$((8 * 1048576 + 4096))
drop=$((3 * 1048576 + 65536))
start_nbdkit dsrc --filter=blocksize-policy data \
  "@$drop \"dropped\" @$((small - 3)) \"end\"" size=$small \
  blocksize-maximum=65536
dsrc=$(uri_of "$tmp/dsrc.sock")
extents_py=$(cd "${srcdir:-.}" && pwd)/tests/file-extents.py
truncate -s $small "$tmp/drop.img"
start_nbdkit drop --filter=blocksize-policy eval get_size="echo $small" \
  can_write='exit 0' can_zero='exit 0' can_flush='exit 0' \
  can_extents='exit 0' \
  pread="dd if='$tmp/drop.img' bs=64K skip=\$4 count=\$3 \
         iflag=skip_bytes,count_bytes status=none" \
  pwrite="if [ \$4 -eq $drop ]; then cat >/dev/null;
          else dd of='$tmp/drop.img' bs=64K seek=\$4 oflag=seek_bytes \
                  conv=notrunc status=none; fi" \
  zero="fallocate -p -o \$4 -l \$3 '$tmp/drop.img'" \
  extents="python3 '$extents_py' '$tmp/drop.img' \$4 \$3" \
  flush='exit 0' blocksize-maximum=65536
expect_fail "^nbdcp: --verify: the destination differs from the source in \
bytes 0 to $small \(segment 1 of 1\): blkhash sha256/1048576 of the \
source [0-9a-f]{64}, of the destination [0-9a-f]{64}$" \
  "$NBDCP" --verify --blkhash=sha256/1M "$dsrc" "$(uri_of "$tmp/drop.sock")"
# The rest was written: only the dropped piece is missing.
grep -q end "$tmp/drop.img" || fail "the copy to the dropping server failed"
! grep -q dropped "$tmp/drop.img" || fail "the server kept the dropped write"
