#!/bin/bash
# --direct: file -> file, nbd -> file and file -> nbd copy every byte, unaligned sizes and small requests included, and really bypass the page cache (checked with fincore where the file system has one).
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin file
requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

direct_dir
echo "O_DIRECT files in $dir ($(stat -f -c %T "$dir"))"

size=$((3 * 1024 * 1024 + 777))
head -c $size /dev/urandom >"$dir/src"
# A sparse source too: holes, and data at offsets no request of 4K
# alignment would cover exactly.
truncate -s $((5 * 1024 * 1024 + 1)) "$dir/sparse"
head -c 9999 /dev/urandom |
  dd of="$dir/sparse" oflag=seek_bytes seek=1234567 conv=notrunc status=none
printf 'tail' | dd of="$dir/sparse" oflag=seek_bytes seek=$((5 * 1024 * 1024 - 3)) \
  conv=notrunc status=none

# Drop a file's pages from the page cache (written data is synced first).
drop_cache () { sync "$1"; dd if="$1" iflag=nocache count=0 status=none; }
# Bytes of a file in the page cache.
cached () {
  fincore -b -n -o RES "$1" | tr -d ' '
}
have_fincore=no
if command -v fincore >/dev/null 2>&1 && fincore -b -n -o RES "$dir/src" >/dev/null 2>&1; then
  have_fincore=yes
fi
# Page-cache use is allowed for the unaligned pieces: a few pages.
slack=$((64 * 1024))
check_uncached () {
  local what=$1 file=$2 c
  [ $have_fincore = yes ] || return 0
  c=$(cached "$file")
  [ "$c" -le $slack ] ||
    fail "$what: $c bytes of $file went through the page cache with --direct"
}

# file -> file.
for f in src sparse; do
  drop_cache "$dir/$f"
  run_nbdcp --direct "$dir/$f" "$dir/$f.copy" || fail "$f: --direct file -> file failed"
  # (Before cmp, which reads both through the cache.)
  check_uncached "$f: file -> file (source)" "$dir/$f"
  check_uncached "$f: file -> file (destination)" "$dir/$f.copy"
  cmp "$dir/$f" "$dir/$f.copy" || fail "$f: --direct file -> file differs"
  [ "$(stat -c %s "$dir/$f.copy")" -eq "$(stat -c %s "$dir/$f")" ] ||
    fail "$f: --direct: destination size $(stat -c %s "$dir/$f.copy")"
done

# Without --direct the same copy does fill the page cache, so the check
# above can fail.
if [ $have_fincore = yes ]; then
  run_nbdcp "$dir/src" "$dir/src.buffered"
  [ "$(cached "$dir/src.buffered")" -gt $slack ] ||
    echo "note: even a buffered copy left nothing in the page cache: the cache checks prove nothing here"
fi

# Small requests, none aligned to 4K: all through the page cache, and
# still right; a larger existing destination is cut to size.
head -c $((8 * 1024 * 1024)) /dev/urandom >"$dir/small.copy"
run_nbdcp --direct --request-size=512 --sparse=512 "$dir/src" "$dir/small.copy"
cmp "$dir/src" "$dir/small.copy" || fail "--direct --request-size=512 differs"

# nbd -> file.
start_nbdkit src -r file "$dir/src"
run_nbdcp --direct "$(uri_of "$tmp/src.sock")" "$dir/fromnbd" ||
  fail "--direct nbd -> file failed"
check_uncached "nbd -> file" "$dir/fromnbd"
cmp "$dir/src" "$dir/fromnbd" || fail "--direct nbd -> file differs"

# A data-plugin source with data at odd places, over a random file, and
# --allocated: every kind of write and zero with O_DIRECT.
disk='@0 "start" @4095 1 2 3 @1048575 ( 0xaa 0x55 ) * 4099 @^4096 "end"'
start_nbdkit dat -r data "$disk" size=$size
head -c $size /dev/urandom >"$dir/dat.copy"
head -c $size /dev/urandom >"$dir/dat.alloc"
run_nbdcp --direct "$(uri_of "$tmp/dat.sock")" "$dir/dat.copy"
run_nbdcp --direct --allocated "$(uri_of "$tmp/dat.sock")" "$dir/dat.alloc"
check_same "$(uri_of "$tmp/dat.sock")" "$dir/dat.copy" "--direct data -> file"
check_same "$(uri_of "$tmp/dat.sock")" "$dir/dat.alloc" \
  "--direct --allocated data -> file"
[ "$(stat -c %s "$dir/dat.copy")" -eq $size ] || fail "--direct data -> file: wrong size"

# file -> nbd.
start_nbdkit mem memory size=$size
drop_cache "$dir/src"
run_nbdcp --direct "$dir/src" "$(uri_of "$tmp/mem.sock")" ||
  fail "--direct file -> nbd failed"
check_uncached "file -> nbd (source)" "$dir/src"
check_same "$dir/src" "$(uri_of "$tmp/mem.sock")" "--direct file -> nbd"
