#!/bin/bash
# A full file system fails the copy with exit 1 and one line naming the
# operation, offset, length and ENOSPC, never exit 0 or a hang: a
# destination file (also with --allocated, whose holes are zeroed, and
# '-' redirected to a file), an NBD destination whose server writes to
# a full file system (not retried by --retry: a live server's error is
# final), the --blkhash-file checksum (no temporary file left, the old
# checksum file kept) and the --resume journal (refused before the
# destination is created).  --stats=json then says "ok": false with
# fewer data bytes than the size, --stats says FAILED, and
# --progress-json ends with "failed", never 100%.  Progress written to
# a full file system never holds a copy up: it succeeds, exact.  Once
# there is room the same command copies exactly (cmp).  With --direct,
# a full ext4 file system on a loop device, where one can be made; and
# --bitmap onto the previous copy.
# The file systems are mounted here, so the test needs root (CI runs
# as root) and is skipped where mount is refused.
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires_nbdkit_plugin file
[ "$(id -u)" -eq 0 ] || skip "mounting a small file system needs root"

mnt=$tmp/mnt
ext4=$tmp/ext4
mkdir "$mnt" "$ext4"
_unmount ()
{
  stop_servers
  unmount "$mnt"
  unmount "$ext4"
}
trap '_unmount; _cleanup' EXIT

# fresh_fs SIZE: an empty tmpfs of SIZE at $mnt, the only one there.
fresh_fs ()
{
  unmount "$mnt" || fail "cannot unmount $mnt"
  mount -t tmpfs -o "size=$1,mode=0700" nbdcp-test "$mnt" 2>"$tmp/mount.err" ||
    skip "cannot mount a tmpfs: $(cat "$tmp/mount.err")"
}
# fill: no room left at all on $mnt.
fill ()
{
  dd if=/dev/zero of="$mnt/filler" bs=64K status=none 2>/dev/null || :
  [ "$(df --output=avail "$mnt" | tail -n 1)" -eq 0 ] || fail "$mnt not full"
}

MiB=$((1024 * 1024))
size=$((8 * MiB))
head -c $size /dev/urandom >"$tmp/src.raw"
# 64 MiB: 1 MiB of data, then a hole.
head -c $MiB /dev/urandom >"$tmp/holes.raw"
truncate -s $((64 * MiB)) "$tmp/holes.raw"
enospc='failed: No space left on device$'

# nospace WHAT OPERATION CMD...: CMD (nbdcp with --stats=json and
# --progress-json=3, 3 going to $tmp/pj) exits 1 with one line
# 'destination OPERATION at offset N length N failed: ENOSPC'; the
# stats say "ok": false with fewer data bytes than the size; the last
# progress line is "failed" and none says 100.
nospace ()
{
  local what=$1 op=$2
  shift 2
  expect_fail "^nbdcp: destination $op at offset [0-9]+ length [0-9]+ $enospc" "$@"
  [ "$(grep -c '^nbdcp: ' "$tmp/err")" -eq 1 ] ||
    { cat "$tmp/err"; fail "$what: not one line"; }
  python3 - "$tmp/err" "$tmp/pj" <<'PY' || { cat "$tmp/err" "$tmp/pj"; fail "$what: stats or progress wrong"; }
import json, sys
stats = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
assert len(stats) == 1, stats
s = stats[0]
assert s["ok"] is False, s
assert s["data_bytes"] < s["size"], s
lines = [json.loads(l) for l in open(sys.argv[2])]
assert lines and lines[-1]["phase"] == "end", lines[-1:]
assert lines[-1]["status"] == "failed", lines[-1]
assert all(l.get("percent", 0) < 100 for l in lines), lines
PY
  echo "$what: $(grep '^nbdcp: ' "$tmp/err")"
}

# 1. A destination file, 8 MiB into 4 MiB.
fresh_fs 4M
nospace "file" write "$NBDCP" --stats=json --progress-json=3 \
  "$tmp/src.raw" "$mnt/dst.raw" 3>"$tmp/pj"
# With room, the same command copies exactly.
mount -o remount,size=32M "$mnt"
run_nbdcp "$tmp/src.raw" "$mnt/dst.raw"
cmp "$tmp/src.raw" "$mnt/dst.raw" || fail "the copy after making room differs"

# 2. --allocated: the hole after the data is zeroed, and that fails.
fresh_fs 4M
nospace "--allocated" zero "$NBDCP" --allocated --stats=json \
  --progress-json=3 "$tmp/holes.raw" "$mnt/dst.raw" 3>"$tmp/pj"

# 3. '-' redirected to a file (by bash -c: expect_fail redirects its
# command's own stdout); --stats in text.
fresh_fs 4M
expect_fail "^nbdcp: destination write at offset [0-9]+ length [0-9]+ $enospc" \
  bash -c '"$0" --stats "$1" - >"$2"' "$NBDCP" "$tmp/src.raw" "$mnt/out.raw"
[ -s "$mnt/out.raw" ] || fail "'-': nothing written to the file"
grep -q '^nbdcp: FAILED after ' "$tmp/err" ||
  { cat "$tmp/err"; fail "--stats does not say the copy failed"; }
grep -Eq '^  data written .*\(([0-9]+) bytes\)$' "$tmp/err" ||
  { cat "$tmp/err"; fail "--stats: no data line"; }
[ "$(sed -n 's/^  data written .*(\([0-9]*\) bytes)$/\1/p' "$tmp/err")" -le $((4 * MiB)) ] ||
  { cat "$tmp/err"; fail "--stats: more data written than there was room for"; }

# 4. An NBD destination whose server writes a file on the full file
# system: its ENOSPC reply fails the copy, and --retry does not retry
# an error reply.
fresh_fs 4M
truncate -s $size "$mnt/nbd.raw"
start_nbdkit full file "$mnt/nbd.raw"
nospace "NBD" write "$NBDCP" --retry=3 --retry-delay=0.2 --stats=json \
  --progress-json=3 "$tmp/src.raw" "$(uri_of "$tmp/full.sock")" 3>"$tmp/pj"
! grep -q 'connecting again' "$tmp/err" || fail "--retry retried ENOSPC"
stop_servers

# 5. --blkhash-file on a full file system: fails naming the file it
# wrote, removes its temporary file, keeps the old checksum file.
fresh_fs 4M
echo old >"$mnt/sum"
fill
expect_fail "^nbdcp: --blkhash-file: writing $mnt/sum\\.[^ /]+ $enospc" \
  "$NBDCP" --blkhash-file="$mnt/sum" "$tmp/src.raw" null:
[ "$(cat "$mnt/sum")" = old ] || fail "--blkhash-file: the old file changed"
[ "$(ls "$mnt" | tr '\n' ' ')" = "filler sum " ] ||
  fail "--blkhash-file left files behind: $(ls "$mnt")"

# 6. The --resume journal on a full file system: nothing is copied,
# the destination not created, nothing left beside the journal.
fresh_fs 4M
fill
expect_fail "^nbdcp: --resume: journal $mnt/journal: writing $mnt/journal\\.[^ /]+ $enospc" \
  "$NBDCP" --resume="$mnt/journal" "$tmp/src.raw" "$tmp/dst.raw"
[ ! -e "$tmp/dst.raw" ] || fail "--resume: the destination was created"
[ "$(ls "$mnt")" = filler ] || fail "--resume left files behind: $(ls "$mnt")"

# 7. Progress into files on the full file system: the copy goes on.
r=0
timeout --kill-after=5 60 "$NBDCP" --progress=3 --progress-json=4 \
  "$tmp/src.raw" "$tmp/dst.raw" 3>"$mnt/p" 4>"$mnt/pj" 2>"$tmp/err" || r=$?
[ $r -eq 0 ] || { cat "$tmp/err"; fail "progress to a full disk: exit $r"; }
cmp "$tmp/src.raw" "$tmp/dst.raw" || fail "progress to a full disk: copy differs"

# 8. --direct onto a full ext4 file system (O_DIRECT needs a real one).
if command -v mkfs.ext4 >/dev/null &&
   truncate -s 8M "$tmp/ext4.img" &&
   mkfs.ext4 -q -F "$tmp/ext4.img" >/dev/null 2>&1 &&
   mount -o loop "$tmp/ext4.img" "$ext4" 2>"$tmp/mount.err"; then
  head -c $((16 * MiB)) /dev/urandom >"$tmp/big.raw"
  nospace "--direct" write "$NBDCP" --direct --stats=json --progress-json=3 \
    "$tmp/big.raw" "$ext4/dst.raw" 3>"$tmp/pj"
else
  echo "no ext4 on a loop device here: --direct case not run"
fi

# 9. --bitmap onto the previous copy on a full file system: the dirty
# ranges go into its holes, and that fails (the stats name the bitmap's
# dirty bytes, fewer written); with room the same command brings it up
# to date (qemu-img compare with the qcow2).
if command -v qemu-io >/dev/null && command -v "$QEMU_NBD" >/dev/null &&
   command -v "$QEMU_IMG" >/dev/null; then
  fresh_fs 1M
  "$QEMU_IMG" create -q -f qcow2 "$tmp/bm.qcow2" 8M
  "$QEMU_IMG" bitmap --add "$tmp/bm.qcow2" b0
  qemu-io -f qcow2 -c 'write -P 0x5a 1M 2M' -c 'write -P 0x33 6M 512K' \
    "$tmp/bm.qcow2" >/dev/null
  truncate -s 8M "$mnt/prev.raw"
  start_qemu_nbd bm -r -t -f qcow2 -B b0 "$tmp/bm.qcow2"
  bm=$(uri_of "$tmp/bm.sock")
  nospace "--bitmap" write "$NBDCP" --bitmap=b0 --stats=json \
    --progress-json=3 "$bm" "$mnt/prev.raw" 3>"$tmp/pj"
  grep -Eq '"data_bytes": [0-9]+,.*"bitmap": "b0", "dirty_bytes": 2621440,' "$tmp/err" ||
    { cat "$tmp/err"; fail "--bitmap: --stats=json"; }
  mount -o remount,size=32M "$mnt"
  run_nbdcp --bitmap=b0 "$bm" "$mnt/prev.raw"
  "$QEMU_IMG" compare -q -f qcow2 -F raw "$tmp/bm.qcow2" "$mnt/prev.raw" ||
    fail "--bitmap: the copy after making room differs"
else
  echo "no qemu-io, qemu-nbd or qemu-img: --bitmap case not run"
fi
