#!/bin/bash
# A source whose extent map is fragmented (data and holes alternating
# in pieces smaller than a request) is read in whole requests, not one
# read per extent, and a server that answers block status one small
# extent at a time does not make the copy one request per extent.  The
# source's log counts its reads and block status requests; qemu-img
# compare checks the copies, into a new file (holes skipped) and over
# old data (holes zeroed), and the new file stays as sparse as the
# source.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin file
requires_nbdkit_plugin eval
requires_nbdkit_filter log
requires "$QEMU_IMG"
requires python3
requires dd

# 16 MiB: 4K of random data every 8K, the rest holes (2048 data
# extents, as a VM image on ext4 or XFS may have).
size=$((16 * 1024 * 1024))
python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC)
os.ftruncate(fd, int(sys.argv[2]))
b = os.urandom(4096)
for o in range(0, int(sys.argv[2]), 8192):
    os.pwrite(fd, b, o)
' "$tmp/frag.img" $size

# requests LOG: the source's reads and block status requests.
requests ()
{
  awk '$4 == "Read" || $4 == "Extents" { n++ } END { print n + 0 }' "$1"
}

# copy NAME MAX DST SRC-ARGS...: copy the nbdkit source SRC-ARGS
# (logged) to the file DST with nbdcp; the source must have had at
# most MAX reads and block status requests.
copy ()
{
  local name=$1 max=$2 dst=$3 n
  shift 3
  start_nbdkit "$name" -r --filter=log "$@" logfile="$tmp/$name.log"
  run_nbdcp "$(uri_of "$tmp/$name.sock")" "$dst" ||
    fail "$name: nbdcp failed"
  cp "$tmp/$name.log" "$tmp/$name.copy.log"
  n=$(requests "$tmp/$name.copy.log")
  echo "$name: $n reads and block status requests"
  [ "$n" -le "$max" ] ||
    fail "$name: $n reads and block status requests, more than $max"
}

# 1. The file plugin reports every 4K extent.  Requests are 512K, so 32
# reads and one block status request cover the disk; allow 8 more.
# (One read per data extent would be 2048; a block status request per
# read, 64.)
max=$((size / 524288 + 8))
copy file $max "$tmp/new.img" file "$tmp/frag.img"
check_same "$tmp/frag.img" "$tmp/new.img" "fragmented file, new destination"
# The holes that were read stay holes in the new file: zero detection
# splits each buffer at every 4K block.  Half the file is data; allow
# 1 MiB more (where the file system keeps sparse files at all).
truncate -s 1M "$tmp/probe.img"
if [ "$(stat -c %b "$tmp/probe.img")" -eq 0 ]; then
  allocated=$(($(stat -c '%b * %B' "$tmp/new.img")))
  echo "new destination: $allocated bytes allocated of $size"
  [ $allocated -le $((size / 2 + 1024 * 1024)) ] ||
    fail "the new destination has $allocated bytes allocated, not about $((size / 2))"
fi

# Over old data: the holes that were read must be zeroed.
head -c $size /dev/urandom >"$tmp/old.img"
copy file-old $max "$tmp/old.img" file "$tmp/frag.img"
check_same "$tmp/frag.img" "$tmp/old.img" "fragmented file, over old data"

# 2. A server that answers each block status request with one 4K
# extent, alternately data and hole, as the file says, over its first
# 1 MiB + 12K (the last request is cut at the end of the disk).  One
# request per extent would be 259 block status requests and 130 reads;
# three requests of each cover it.  Allow 8 in all.
lie=$((1024 * 1024 + 12288))
head -c $lie "$tmp/frag.img" >"$tmp/lie.img"
copy lie 8 "$tmp/lie-new.img" eval \
  get_size="echo $lie" \
  pread='dd if='"$tmp/lie.img"' skip=$4 count=$3 iflag=skip_bytes,count_bytes status=none' \
  can_extents='exit 0' \
  extents='echo $4 $((4096 - $4 % 4096)) $(( $4 / 4096 % 2 ? 3 : 0 ))'
check_same "$tmp/lie.img" "$tmp/lie-new.img" "one extent per answer"

# 3. A segment that ends in a small hole does not make the lane's next
# block status request look past its own segment: on a fragmented disk
# that made the server describe a second segment of small extents, to
# be thrown away.  Four segments, each ending (and the next starting)
# in 64K of 4K data every 8K, the rest hole; one lane takes them in
# turn.
segment=$((128 * 1024 * 1024))
python3 -c '
import os, sys
seg = int(sys.argv[2])
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC)
os.ftruncate(fd, 4 * seg)
b = os.urandom(4096)
for k in range(1, 4):
    for o in range(k * seg - 65536, k * seg + 65536, 8192):
        os.pwrite(fd, b, o)
' "$tmp/edges.img" $segment
start_nbdkit edges -r --filter=log file "$tmp/edges.img" \
  logfile="$tmp/edges.log"
run_nbdcp --connections=1 "$(uri_of "$tmp/edges.sock")" \
  "$tmp/edges-new.img" || fail "edges: nbdcp failed"
check_same "$tmp/edges.img" "$tmp/edges-new.img" "small holes at segment ends"
grep -o ' Extents id=[0-9]* offset=0x[0-9a-f]* count=0x[0-9a-f]*' \
  "$tmp/edges.log" >"$tmp/edges.asked"
while read -r _ _ offset count; do
  offset=$((${offset#offset=})) count=$((${count#count=}))
  [ $((offset % segment + count)) -le $segment ] ||
    fail "block status asked past its segment after a small hole: offset $offset, count $count"
done <"$tmp/edges.asked"
echo "edges: $(wc -l <"$tmp/edges.asked") block status requests, none past its segment"
