#!/bin/bash
# Local files as source and destination: nbd -> file, file -> nbd and file -> file copy every byte (odd sizes, 1 and 0 bytes too); a new file gets exactly the source's size, a larger one is cut to it; holes stay holes, --allocated allocates all; a destination that is a symbolic link is followed (a dangling one creates its file).
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin file
requires_nbdkit_plugin memory
requires_nbdkit_plugin sparse-random
requires_nbdkit_filter checkwrite
requires_nbdkit_filter log
requires nbdinfo
requires "$QEMU_IMG"

size_of () { stat -c %s "$1"; }
# N bytes of 0xff: old data to overwrite (cheaper than random).
ones () { head -c "$1" /dev/zero | tr '\0' '\377'; }
# Allocated bytes of a file.
alloc_of () { echo $(($(stat -c %b "$1") * $(stat -c %B "$1"))); }

# Odd-sized files: random data (1000001 bytes), 1 byte, 0 bytes; and a
# sparse one with data at unaligned offsets and a tail not ending on 4K.
head -c 1000001 /dev/urandom >"$tmp/odd"
printf x >"$tmp/one"
: >"$tmp/empty"
truncate -s $((8 * 1024 * 1024 + 333)) "$tmp/holes"
printf 'start' | dd of="$tmp/holes" conv=notrunc status=none
head -c 70000 /dev/urandom |
  dd of="$tmp/holes" oflag=seek_bytes seek=3000001 conv=notrunc status=none
printf 'end' | dd of="$tmp/holes" oflag=seek_bytes seek=$((8 * 1024 * 1024 + 330)) \
  conv=notrunc status=none
[ "$(size_of "$tmp/holes")" -eq $((8 * 1024 * 1024 + 333)) ] ||
  fail "test setup: the sparse file has the wrong size"

for f in odd one empty holes; do
  # file -> file, to a destination that does not exist yet.
  run_nbdcp "$tmp/$f" "$tmp/$f.copy" || fail "$f: file -> file failed"
  cmp "$tmp/$f" "$tmp/$f.copy" || fail "$f: file -> file copy differs"
  [ "$(size_of "$tmp/$f.copy")" -eq "$(size_of "$tmp/$f")" ] ||
    fail "$f: file -> file: destination size $(size_of "$tmp/$f.copy")"

  # nbd -> file: the file exported read-only by nbdkit.
  start_nbdkit "src-$f" -r file "$tmp/$f"
  run_nbdcp "$(uri_of "$tmp/src-$f.sock")" "$tmp/$f.fromnbd" ||
    fail "$f: nbd -> file failed"
  cmp "$tmp/$f" "$tmp/$f.fromnbd" || fail "$f: nbd -> file copy differs"

  # file -> nbd: into memory of exactly the file's size.
  start_nbdkit "mem-$f" memory size="$(size_of "$tmp/$f")"
  run_nbdcp "$tmp/$f" "$(uri_of "$tmp/mem-$f.sock")" ||
    fail "$f: file -> nbd failed"
  check_same "$tmp/$f" "$(uri_of "$tmp/mem-$f.sock")" "$f: file -> nbd"

  # file -> nbd again, into a checker of the file itself: any write,
  # zero or trim that differs from the file fails, and the log (outside
  # the checker) shows that the writes cover the file exactly once.
  if [ "$f" != empty ]; then
    start_nbdkit "chk-$f" --filter=log --filter=checkwrite file "$tmp/$f" \
      logfile="$tmp/chk-$f.log"
    run_nbdcp --no-destination-extents "$tmp/$f" "$(uri_of "$tmp/chk-$f.sock")" ||
      fail "$f: file -> checkwrite failed"
    check_covered "$tmp/chk-$f.log" "$(size_of "$tmp/$f")"
  fi
done

# The checker really checks: other data into it fails.
head -c 1000001 /dev/urandom >"$tmp/other"
expect_fail 'destination (write|zero) at offset [0-9]+ length [0-9]+ failed' \
  "$NBDCP" "$tmp/other" "$(uri_of "$tmp/chk-odd.sock")"

# An existing destination larger than the source, full of old data,
# ends with exactly the source's bytes and size (the holes of the
# source are zeroes there, not the old data).
for f in odd holes; do
  ones $((12 * 1024 * 1024)) >"$tmp/big"
  run_nbdcp "$tmp/$f" "$tmp/big" || fail "$f: file -> larger file failed"
  [ "$(size_of "$tmp/big")" -eq "$(size_of "$tmp/$f")" ] ||
    fail "$f: larger destination left at $(size_of "$tmp/big") bytes, source has $(size_of "$tmp/$f")"
  cmp "$tmp/$f" "$tmp/big" || fail "$f: copy onto a larger file differs"
done
# The same from an NBD source.
ones $((12 * 1024 * 1024)) >"$tmp/big"
run_nbdcp "$(uri_of "$tmp/src-holes.sock")" "$tmp/big"
[ "$(size_of "$tmp/big")" -eq "$(size_of "$tmp/holes")" ] ||
  fail "nbd -> larger file: left at $(size_of "$tmp/big") bytes"
cmp "$tmp/holes" "$tmp/big" || fail "nbd -> larger file differs"

# A sparse NBD source into a new file: the same bytes, and about as
# much allocated as the source has data; with --allocated, all of it.
src_size=$((32 * 1024 * 1024))
sr=(sparse-random size=$src_size seed=4242 percent=30 runlength=524288)
start_nbdkit sr -r "${sr[@]}"
sr_uri=$(uri_of "$tmp/sr.sock")
data=$(nbdinfo --map "$sr_uri" | awk '$3 == 0 { s += $2 } END { print s + 0 }')
[ "$data" -gt 0 ] && [ "$data" -lt $((src_size / 2)) ] ||
  fail "test setup: sparse-random has $data bytes of data"
run_nbdcp "$sr_uri" "$tmp/sparse.img"
run_nbdcp --allocated "$sr_uri" "$tmp/alloc.img"
for f in sparse alloc; do
  [ "$(size_of "$tmp/$f.img")" -eq $src_size ] ||
    fail "$f: nbd -> file: size $(size_of "$tmp/$f.img"), not $src_size"
  check_same "$sr_uri" "$tmp/$f.img" "$f: nbd -> file"
done
sparse_alloc=$(alloc_of "$tmp/sparse.img")
alloc_alloc=$(alloc_of "$tmp/alloc.img")
echo "source data $data bytes; allocated: $sparse_alloc sparse, $alloc_alloc with --allocated"
# Probe: can this file system keep a file sparse at all?
truncate -s 1M "$tmp/probe"
if [ "$(alloc_of "$tmp/probe")" -eq 0 ]; then
  [ "$sparse_alloc" -le $((data + 1024 * 1024)) ] ||
    fail "nbd -> file: $sparse_alloc bytes allocated for $data bytes of data"
  [ "$sparse_alloc" -ge "$data" ] ||
    fail "nbd -> file: only $sparse_alloc bytes allocated for $data bytes of data"
else
  echo "the file system of $tmp keeps no sparse files: holes not checked"
fi
[ "$alloc_alloc" -ge $src_size ] ||
  fail "--allocated: only $alloc_alloc of $src_size bytes allocated"

# A sparse copy onto a fully allocated file of old data must punch
# the holes and stay correct; --allocated onto a sparse file must fill
# it.
ones $src_size >"$tmp/reuse.img"
run_nbdcp "$sr_uri" "$tmp/reuse.img"
check_same "$sr_uri" "$tmp/reuse.img" "nbd -> allocated random file"
if [ "$(alloc_of "$tmp/probe")" -eq 0 ]; then
  [ "$(alloc_of "$tmp/reuse.img")" -le $((data + 1024 * 1024)) ] ||
    fail "nbd -> allocated file: holes not punched ($(alloc_of "$tmp/reuse.img") bytes allocated)"
fi
run_nbdcp --allocated "$sr_uri" "$tmp/sparse.img"
[ "$(alloc_of "$tmp/sparse.img")" -ge $src_size ] ||
  fail "--allocated onto a sparse file: only $(alloc_of "$tmp/sparse.img") bytes allocated"
check_same "$sr_uri" "$tmp/sparse.img" "--allocated onto a sparse file"

# file -> nbd from the copies (one allocated through and through, one
# sparse), each into a fresh memory disk compared with the source.
for f in alloc reuse; do
  start_nbdkit "srmem-$f" memory size=$src_size
  run_nbdcp "$tmp/$f.img" "$(uri_of "$tmp/srmem-$f.sock")" ||
    fail "$f.img -> nbd failed"
  check_same "$sr_uri" "$(uri_of "$tmp/srmem-$f.sock")" "$f.img -> nbd"
done

# A destination that is a symbolic link is followed, as nbdcopy and dd
# do (the man page says so): the file it names is written and cut to
# the source's size, the link stays a link; a dangling one creates the
# file it names.
head -c $((1024 * 1024 + 3)) /dev/urandom >"$tmp/l.src"
head -c $((3 * 1024 * 1024)) /dev/urandom >"$tmp/l.target"
ln -s "$tmp/l.target" "$tmp/l.link"
run_nbdcp "$tmp/l.src" "$tmp/l.link" || fail "-> a symbolic link failed"
[ -L "$tmp/l.link" ] || fail "-> a symbolic link: the link was replaced"
cmp "$tmp/l.src" "$tmp/l.target" || fail "-> a symbolic link: its file differs"
ln -s "$tmp/l.new" "$tmp/l.dangling"
run_nbdcp "$tmp/l.src" "$tmp/l.dangling" || fail "-> a dangling link failed"
[ -L "$tmp/l.dangling" ] && [ -f "$tmp/l.new" ] ||
  fail "-> a dangling link: the file it names was not created"
cmp "$tmp/l.src" "$tmp/l.new" || fail "-> a dangling link: its file differs"
