#!/bin/bash
# --direct with each other option that a file-to-file copy can take:
# every copy is compared with the source (cmp), and its --stats=json is
# checked against what the test knows of the source: ok, the size, the
# data bytes (the source's non-zero 4 KiB blocks, counted by the test)
# where the option does not change what is data, and data + zero +
# skipped + resumed = size.  The files are in a directory that takes
# O_DIRECT (not tmpfs).
. "${srcdir:-.}/tests/functions.sh"
requires python3

direct_dir

# A sparse 16 MiB + 4 KiB source: random runs of whole 4 KiB blocks at
# random block offsets, one across the 8 MiB mark, and the last block.
size=$((16 * 1024 * 1024 + 4096))
truncate -s $size "$dir/src"
for i in $(seq 1 12); do
  blocks=$((1 + RANDOM % 40))
  dd if=/dev/urandom of="$dir/src" bs=4096 seek=$((RANDOM % 4000)) \
    count=$blocks conv=notrunc status=none
done
dd if=/dev/urandom of="$dir/src" bs=4096 seek=2040 count=16 conv=notrunc status=none
dd if=/dev/urandom of="$dir/src" bs=4096 seek=$((size / 4096 - 1)) count=1 \
  conv=notrunc status=none
data=$(python3 -c '
import sys
n = 0
with open(sys.argv[1], "rb") as f:
    while True:
        b = f.read(4096)
        if not b:
            break
        n += len(b) if b.count(0) != len(b) else 0
print(n)' "$dir/src")

# pair NAME DATA OPTION...: copy src to a new file with --direct and
# OPTION..., compare, and check the stats; DATA is the data_bytes
# expected, or "any" where the option makes other blocks data.
pair ()
{
  local name=$1 want=$2 r
  shift 2
  rm -f "$dir/dst" "$dir/journal" "$dir/sum"
  "$NBDCP" --direct --stats=json "$@" "$dir/src" "$dir/dst" \
    2>"$tmp/$name.err" 3>"$tmp/$name.json3" ||
    { r=$?; cat "$tmp/$name.err" >&2; fail "--direct $*: exit $r"; }
  cmp "$dir/src" "$dir/dst" || fail "--direct $*: the copy differs"
  python3 - "$tmp/$name.err" "$size" "$want" "$*" <<'PY' ||
import json, sys
stats = None
for line in open(sys.argv[1]):
    if line.startswith('{"ok"'):
        stats = json.loads(line)
assert stats, "no --stats=json line"
size, want, opts = int(sys.argv[2]), sys.argv[3], sys.argv[4]
assert stats["ok"] is True, stats
assert stats["size"] == size, stats
total = (stats["data_bytes"] + stats["zero_bytes"] + stats["skipped_bytes"]
         + stats["resumed_bytes"])
assert total == size, "data + zero + skipped + resumed = %d, not %d" % (total, size)
if want != "any":
    assert stats["data_bytes"] == int(want), \
        "data_bytes %d, the source has %s" % (stats["data_bytes"], want)
print("--direct %s: ok, data %d, zero %d, skipped %d"
      % (opts, stats["data_bytes"], stats["zero_bytes"], stats["skipped_bytes"]))
PY
    fail "--direct $*: wrong --stats=json: $(grep '^{"ok"' "$tmp/$name.err")"
}

pair plain "$data"
pair flush "$data" --flush
pair conns "$data" -C 2 -T 2 --queue-size=1M
pair sync "$data" --synchronous
pair no-extents "$data" --no-extents
pair small-requests any --request-size=64K -S 64K
pair no-sparse any -S 0
pair allocated any --allocated
pair dest-zero "$data" --destination-is-zero
pair blkhash "$data" --blkhash
pair blkhash-file "$data" --blkhash-file="$dir/sum"
python3 "${abs_srcdir:-$PWD}/tests/blkhash-ref.py" sha256 "$dir/src" >"$tmp/sum.ref"
[ "$(cat "$dir/sum")" = "$(cat "$tmp/sum.ref")" ] ||
  fail "--direct --blkhash-file wrote $(cat "$dir/sum"), not $(cat "$tmp/sum.ref")"
pair verify "$data" --verify
pair verify-full "$data" --verify=full
pair resume "$data" --resume="$dir/journal"
[ ! -e "$dir/journal" ] || fail "--direct --resume: the journal of a finished copy is left"
pair progress "$data" -p
pair progress-json "$data" --progress-json=3
grep -q '"status": "ok"' "$tmp/progress-json.json3" ||
  fail "--direct --progress-json: no ok end line"
exit 0
