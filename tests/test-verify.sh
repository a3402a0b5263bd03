#!/bin/bash
# --verify reads the destination back after the copy: it passes on
# destinations that hold the data (NBD on every connection, files, a
# subprocess server, from a stream source), catches destinations that
# drop writes or return other data than was written, naming the first
# 128 MiB segment that differs, and is refused where nothing can be read
# back.
. "${srcdir:-.}/tests/functions.sh"

requires python3
requires fallocate
requires "$QEMU_IMG"
requires "$QEMU_NBD"
requires_nbdkit_plugin data
requires_nbdkit_plugin eval
requires_nbdkit_plugin sparse-random
requires_nbdkit_filter log
"$NBDCP" --verify --help >/dev/null
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"

# A source with data in each of three segments, holes between.
seg=$((128 * 1024 * 1024))
size=$((300 * 1024 * 1024))
data="@0 \"hello\" @$((seg + 72)) \"world\" @$((2 * seg + 144)) \"third\""
start_nbdkit src data "$data" size=$size
src=$(uri_of "$tmp/src.sock")
"$QEMU_IMG" convert -f raw -O raw "$src" "$tmp/src.img"

# 1. Honest destinations.  NBD: every connection reads back (three: one
# per segment), and holes are found by block status rather than read.
truncate -s $size "$tmp/q.img"
start_qemu_nbd q -f raw -e 4 -t "$tmp/q.img"
run_nbdcp -v -T 4 --verify "$src" "$(uri_of "$tmp/q.sock")" 2>"$tmp/v.err" ||
  { cat "$tmp/v.err" >&2; fail "verify onto qemu-nbd failed"; }
grep -q -- "--verify: reading back $size bytes of .* on 3 connections" \
  "$tmp/v.err" || { cat "$tmp/v.err" >&2; fail "not read back on 3 lanes"; }
holes=$(sed -n 's/.*--verify: .* \([0-9]*\) in holes not read.*/\1/p' \
  "$tmp/v.err")
[ "${holes:-0}" -gt $((size / 2)) ] ||
  fail "verify read holes of the destination (holes not read: $holes)"
check_same "$tmp/src.img" "$tmp/q.img" "verified copy onto qemu-nbd"

# A file, with --blkhash: the printed checksum is an independent
# reader's checksum of what is in the file.
out=$(run_nbdcp --verify --blkhash=sha1/4K "$src" "$tmp/f.img")
check_same "$tmp/src.img" "$tmp/f.img" "verified copy into a file"
[ "$out" = "$(python3 "$ref" sha1/4K "$tmp/f.img")" ] ||
  fail "--blkhash with --verify printed $out"

# A subprocess server, a stream source, and --allocated.
truncate -s $size "$tmp/c.img"
run_nbdcp --verify -- "$src" [ "$QEMU_NBD" -f raw "$tmp/c.img" ]
check_same "$tmp/src.img" "$tmp/c.img" "verified copy onto [ qemu-nbd ]"
rm -f "$tmp/s.img"
run_nbdcp --verify - "$tmp/s.img" <"$tmp/src.img"
check_same "$tmp/src.img" "$tmp/s.img" "stream source: copy differs"
truncate -s $size "$tmp/a.img"
run_nbdcp --verify --allocated "$src" "$tmp/a.img"
check_same "$tmp/src.img" "$tmp/a.img" "--allocated: copy differs"

# 2. Destinations that lie, over a file DISK: an nbdkit eval server that
# drops writes in [DROP_LO, DROP_HI) and passes reads through FILTER.
# Its block status tells the truth about DISK's holes (SEEK_HOLE), so the
# pass reads only data: the eval plugin moves some 40 MB/s.
extents_py=$(cd "${srcdir:-.}" && pwd)/tests/file-extents.py
# lying NAME DISK DROP_LO DROP_HI FILTER
lying ()
{
  local name=$1 disk=$2 lo=$3 hi=$4 filter=$5
  truncate -s $size "$disk"
  start_nbdkit "$name" --filter=log eval logfile="$tmp/$name.log" \
    get_size="echo $size" \
    can_write='exit 0' can_zero='exit 0' can_flush='exit 0' \
    can_extents='exit 0' \
    pread="dd if='$disk' bs=64K skip=\$4 count=\$3 \
           iflag=skip_bytes,count_bytes status=none | $filter" \
    pwrite="if [ \$4 -ge $lo ] && [ \$4 -lt $hi ]; then cat >/dev/null;
            else dd of='$disk' bs=64K seek=\$4 oflag=seek_bytes conv=notrunc \
                    status=none; fi" \
    zero="fallocate -p -o \$4 -l \$3 '$disk'" \
    extents="python3 '$extents_py' '$disk' \$4 \$3" \
    flush='exit 0'
}

# The same server telling the truth: passes.
lying truth "$tmp/truth.img" 0 0 cat
run_nbdcp --verify "$src" "$(uri_of "$tmp/truth.sock")"
check_same "$tmp/src.img" "$tmp/truth.img" "honest eval server"

# Writes to the second segment dropped: "world" never lands.
lying drop "$tmp/drop.img" $seg $((2 * seg)) cat
expect_fail "^nbdcp: --verify: the destination differs from the source in \
bytes $seg to $((2 * seg)) \(segment 2 of 3\): blkhash sha256/65536 of the \
source [0-9a-f]{64}, of the destination [0-9a-f]{64}$" \
  "$NBDCP" --verify "$src" "$(uri_of "$tmp/drop.sock")"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "more than one line: $(cat "$tmp/err")"
# The copy itself did write it (so the pass, not the copy, caught it).
grep -q "Write id=.* offset=0x8000000 " "$tmp/drop.log" ||
  fail "the copy did not send the write that was dropped"

# Reads that return other data than was written ("third" reads "Third").
lying misread "$tmp/misread.img" 0 0 "tr t T"
expect_fail "the destination differs from the source in bytes $((2 * seg)) \
to $size \(segment 3 of 3\)" \
  "$NBDCP" --verify "$src" "$(uri_of "$tmp/misread.sock")"
check_same "$tmp/src.img" "$tmp/misread.img" "the misreading server's disk should hold the right data"

# A server that fails the reads of the pass: says where.
start_nbdkit eio --filter=error memory $size error-pread-rate=1 \
  error-pread=EIO
expect_fail "^nbdcp: --verify: reading the destination back: destination \
read at offset [0-9]+ length [0-9]+ failed" \
  "$NBDCP" --verify "$src" "$(uri_of "$tmp/eio.sock")"

# 3. Refused before anything is opened or written.
expect_fail "^nbdcp: --verify: null: keeps nothing" \
  "$NBDCP" --verify "$src" null:
expect_fail "standard output is not open for reading" \
  "$NBDCP" --verify "$tmp/src.img" - >"$tmp/stdout.img"
[ ! -s "$tmp/stdout.img" ] || fail "--verify to '>FILE' wrote something"
r=0
"$NBDCP" --verify "$tmp/src.img" - 2>"$tmp/err" | cat >/dev/null || r=$?
[ $r -eq 1 ] && grep -q "is a stream and cannot be read back" "$tmp/err" ||
  fail "--verify to a pipe: exit $r, $(cat "$tmp/err")"
# '1<>FILE' can be read back.
truncate -s $size "$tmp/rw.img"
run_nbdcp --verify "$tmp/src.img" - 1<>"$tmp/rw.img"
check_same "$tmp/src.img" "$tmp/rw.img" "1<>FILE: copy differs"
exit 0
