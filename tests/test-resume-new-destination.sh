#!/bin/bash
# --resume's journal holds only for the destination it describes.  A
# file-to-file copy is interrupted once the journal lists a finished
# segment; then the same command is run again with that journal and
#   c. the destination unchanged: the journal's segments are resumed
#      and the copy is exact;
#   d. the destination emptied in place (same inode, as '>' does),
#   e. the journal in the format before the destination was recorded,
#   a. the destination deleted (nbdcp creates it again) and
#   b. replaced by another file of the same size (another inode):
#      the journal is void, nbdcp says so in one line, copies everything
#      and the copy is exact (with the bug, the journalled segments were
#      skipped and read as zeros).
# A file source and destination: no server is left with a client that
# vanished mid-reply.
. "${srcdir:-.}/tests/functions.sh"

requires cmp
"$NBDCP" --resume=x --help >/dev/null

size=$((512 * 1024 * 1024))
seg=$((128 * 1024 * 1024))
src=$tmp/src.raw
dst=$tmp/dst.raw
j=$tmp/copy.journal
# 1 MiB of random data in each of the 4 segments, the rest a hole.
truncate -s $size "$src"
for k in 0 1 2 3; do
  dd if=/dev/urandom of="$src" bs=1M count=1 seek=$((k * 128 + 3 * k + 1)) \
    conv=notrunc status=none
done

# segments_done: how many segments the journal lists as done.
segments_done ()
{
  sed -n 's/^done //p' "$j" 2>/dev/null | tr ',' '\n' |
    awk -F- 'NF == 1 && $1 != "" { n++ } NF == 2 { n += $2 - $1 + 1 }
             END { print n + 0 }'
}

# The interrupted run: 256 KiB/s, so a segment takes 4 seconds and the
# copy 16; it is interrupted once a segment is journalled.
timeout 120 "$NBDCP" -C 1 --rate=256K --checkpoint=128M --resume="$j" \
  "$src" "$dst" 2>"$tmp/err0" &
copy=$!
one_done ()
{
  [ "$(segments_done)" -ge 1 ] || ! kill -0 $copy 2>/dev/null
}
wait_until 60 one_done || :
kill -INT $copy 2>/dev/null || :
r=0
wait $copy || r=$?
[ $r -eq 130 ] || { cat "$tmp/err0" >&2; fail "interrupted run: exit $r"; }
done0=$(segments_done)
echo "interrupted with $done0 segments done"
[ "$done0" -ge 1 ] && [ "$done0" -lt 4 ] ||
  fail "interrupted run: $done0 segments done (expected 1 to 3)"
head -1 "$j" | grep -qx "nbdcp journal 2" || fail "journal: bad first line"
grep -Eq "^destination-file device [0-9]+:[0-9]+ inode [0-9]+ .*size $size\$" "$j" ||
  { cat "$j" >&2; fail "the journal does not record the destination file"; }
cp "$j" "$tmp/saved.journal"

json ()
{
  sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$tmp/err"
}

# rerun WHAT: the same command again (full speed), which must succeed
# and leave the destination equal to the source; the journal is gone.
rerun ()
{
  run_nbdcp -C 1 --checkpoint=128M --resume="$j" --stats=json "$src" "$dst" \
    2>"$tmp/err" || { cat "$tmp/err" >&2; fail "$1: the rerun failed"; }
  cmp "$src" "$dst" || fail "$1: the destination differs from the source"
  [ ! -e "$j" ] || fail "$1: the journal was not removed after success"
}

# rerun_void WHAT WHY: rerun, where the journal must be void because
# WHY (an ERE): one line says so, and nothing is resumed.
rerun_void ()
{
  cp "$tmp/saved.journal" "$j"
  rerun "$1"
  grep -Eqx "nbdcp: --resume: journal $j does not match the destination: \
$2; copying everything" "$tmp/err" ||
    { cat "$tmp/err" >&2; fail "$1: no line saying the journal is void"; }
  [ "$(grep -c 'does not match' "$tmp/err")" -eq 1 ] ||
    fail "$1: more than one line about the journal"
  [ "$(json resumed_bytes)" = 0 ] ||
    fail "$1: $(json resumed_bytes) bytes resumed from a void journal"
}

# c. The destination as the interrupted run left it: resumed.
rerun "unchanged destination"
[ "$(json resumed_bytes)" -eq $((done0 * seg)) ] ||
  fail "unchanged destination: resumed $(json resumed_bytes) bytes, \
expected $((done0 * seg))"
! grep -q "does not match" "$tmp/err" ||
  fail "unchanged destination: the journal was called void"

# d. The same file, emptied (as a shell's '>' does).
: >"$dst"
rerun_void "emptied destination" "size $size, now 0"

# e. A journal of the format before the destination was recorded.
sed -e '1s/.*/nbdcp journal 1/' -e '/^destination-/d' "$tmp/saved.journal" \
  >"$tmp/old.journal"
mv "$tmp/saved.journal" "$tmp/new.journal"
cp "$tmp/old.journal" "$tmp/saved.journal"
truncate -s 0 "$dst"
truncate -s $size "$dst"
rerun_void "old journal" \
  "it was written by an older nbdcp, which did not record the destination"
mv "$tmp/new.journal" "$tmp/saved.journal"

# a. The destination deleted: nbdcp creates it.
rm "$dst"
rerun_void "deleted destination" "$dst did not exist before this run"

# b. Another file of the same size under the name (made before the old
# one goes, so its inode differs).
truncate -s $size "$tmp/other.raw"
mv "$tmp/other.raw" "$dst"
rerun_void "replaced destination" \
  "inode [0-9]+, now [0-9]+(; born [0-9.]+, now [0-9.]+)?"

exit 0
