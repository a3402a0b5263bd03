#!/bin/bash
# --blkhash-file writes where nbdcopy does: into one of nbdcp's own
# descriptors named /dev/stdout, /dev/fd/N or /proc/self/fd/N (a file
# there is written at the descriptor's position, '>>' appends), a
# process substitution, a FIFO with a reader and a character device,
# each holding the checksum that blkhash-ref.py computes.  A FIFO that
# nobody reads fails at once (no hang), as does one that another user
# owns.  What it must not write is refused: a symbolic link at the
# name (to a file, a device or a FIFO), a closed or read-only
# descriptor, and the destination itself ('-' and /dev/stdout, a
# descriptor on the same file, the same file name).
. "${srcdir:-.}/tests/functions.sh"
requires python3
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"

# 3 MiB: 1 MiB of random data, then a hole.
head -c $((1024 * 1024)) /dev/urandom >"$tmp/src.raw"
truncate -s $((3 * 1024 * 1024)) "$tmp/src.raw"
src=$tmp/src.raw
want=$(python3 "$ref" sha256 "$src")
[ ${#want} -eq 64 ] || fail "blkhash-ref.py gave '$want'"

# expect_sum WHAT FILE: FILE holds the checksum line and nothing else.
expect_sum ()
{
  [ "$(cat "$2")" = "$want" ] ||
    fail "$1: holds '$(head -c 200 "$2")', expected $want"
}

# 1. /dev/stdout, captured; '>>' appends after what the file held.
run_nbdcp --blkhash-file=/dev/stdout "$src" null: >"$tmp/stdout.sum"
expect_sum "/dev/stdout" "$tmp/stdout.sum"
echo before >"$tmp/append.sum"
run_nbdcp --blkhash-file=/dev/stdout "$src" null: >>"$tmp/append.sum"
[ "$(cat "$tmp/append.sum")" = "before
$want" ] || fail "/dev/stdout >>: holds '$(cat "$tmp/append.sum")'"

# 2. /dev/fd/3 and /proc/self/fd/3 on a file; stdout stays empty.
run_nbdcp --blkhash-file=/dev/fd/3 "$src" null: 3>"$tmp/fd3.sum" \
  >"$tmp/fd3.out"
expect_sum "/dev/fd/3" "$tmp/fd3.sum"
[ ! -s "$tmp/fd3.out" ] || fail "/dev/fd/3: the checksum went to stdout too"
run_nbdcp --blkhash-file=/proc/self/fd/3 "$src" null: 3>"$tmp/proc3.sum"
expect_sum "/proc/self/fd/3" "$tmp/proc3.sum"

# 3. A process substitution (a pipe, /dev/fd/63 or so).
run_nbdcp --blkhash-file=>(cat >"$tmp/procsub.sum") "$src" null:
wait_for_line "$tmp/procsub.sum" '^[0-9a-f]{64}$' 60 ||
  fail "process substitution: nothing arrived"
expect_sum "process substitution" "$tmp/procsub.sum"

# 4. A FIFO with a reader: head opens it read-write (which does not
# wait for a writer), so that it is a reader before nbdcp starts.
mkfifo "$tmp/fifo"
head -n 1 0<>"$tmp/fifo" >"$tmp/fifo.sum" &
reader=$!
reader_ready ()
{
  [ "$(readlink "/proc/$reader/fd/0" 2>/dev/null)" = "$tmp/fifo" ]
}
wait_until 60 reader_ready || { kill $reader; fail "head did not open the FIFO"; }
run_nbdcp --blkhash-file="$tmp/fifo" "$src" null: ||
  { kill $reader; fail "the copy into the FIFO failed"; }
wait_for_line "$tmp/fifo.sum" '^[0-9a-f]{64}$' 60 ||
  { kill $reader; fail "FIFO: nothing arrived"; }
wait $reader
expect_sum "FIFO" "$tmp/fifo.sum"

# 5. A FIFO nobody reads: refused at once, before the destination is
# made (expect_fail's time limit would end a hang with status 124).
expect_fail "^nbdcp: --blkhash-file: $tmp/fifo is a FIFO that nobody is reading" \
  "$NBDCP" --blkhash-file="$tmp/fifo" "$src" "$tmp/nobody.raw"
[ ! -e "$tmp/nobody.raw" ] || fail "the refused copy made its destination"
if [ "$(id -u)" = 0 ]; then
  mkfifo "$tmp/other.fifo"
  chown 65534 "$tmp/other.fifo"
  expect_fail "other.fifo is a FIFO that belongs to user 65534, not to this user" \
    "$NBDCP" --blkhash-file="$tmp/other.fifo" "$src" null:
fi

# 6. Character devices: written directly (/dev/full says so).
run_nbdcp --blkhash-file=/dev/null "$src" null:
expect_fail '^nbdcp: --blkhash-file: writing to /dev/full failed: No space left on device$' \
  "$NBDCP" --blkhash-file=/dev/full "$src" null:
# The checksum is written after the copy's --stats, whose "ok" is the
# copy's (the man page says so): "ok": true, then the failure, exit 1.
rm -f "$tmp/full.copy"
expect_fail '^nbdcp: --blkhash-file: writing to /dev/full failed: No space left on device$' \
  "$NBDCP" --stats=json --blkhash-file=/dev/full "$src" "$tmp/full.copy"
grep -q '^{"ok": true, ' "$tmp/err" ||
  fail "--blkhash-file=/dev/full: --stats=json: $(cat "$tmp/err")"
[ "$(tail -1 "$tmp/err")" = "nbdcp: --blkhash-file: writing to /dev/full failed: No space left on device" ] ||
  fail "--blkhash-file=/dev/full: the failure is not the last line"
cmp "$src" "$tmp/full.copy" || fail "--blkhash-file=/dev/full: the copy differs"

# 7. Symbolic links at the name are never followed, whatever they lead
# to; the file behind the first is untouched.
printf 'precious\n' >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/to-file.sum"
ln -s /dev/null "$tmp/to-device.sum"
ln -s "$tmp/fifo" "$tmp/to-fifo.sum"
for l in to-file to-device to-fifo; do
  expect_fail "^nbdcp: --blkhash-file: $tmp/$l.sum is a symbolic link: refused" \
    "$NBDCP" --blkhash-file="$tmp/$l.sum" "$src" null:
  [ -L "$tmp/$l.sum" ] || fail "$l: the link was replaced"
done
[ "$(cat "$tmp/victim")" = precious ] || fail "the link's target was written"

# 8. Descriptors that cannot take it.
expect_fail '^nbdcp: --blkhash-file: /dev/fd/7: descriptor 7 is not open$' \
  "$NBDCP" --blkhash-file=/dev/fd/7 "$src" null:
expect_fail '^nbdcp: --blkhash-file: /dev/stdout: descriptor 1 is not open$' \
  sh -c 'exec "$@" >&-' sh "$NBDCP" --blkhash-file=/dev/stdout "$src" null:
expect_fail '^nbdcp: --blkhash-file: /dev/stdin: descriptor 0 is not open for writing$' \
  "$NBDCP" --blkhash-file=/dev/stdin "$src" null: <"$src"

# 9. The destination itself: '-' with /dev/stdout (as --blkhash alone
# is refused with '-'), with a descriptor on the same file, and the
# destination file's own name (which the checksum would replace).
expect_fail "^nbdcp: --blkhash-file: /dev/stdout is also the destination \(standard output, '-'\): " \
  "$NBDCP" --blkhash-file=/dev/stdout "$src" -
[ ! -s "$tmp/out" ] || fail "'-' with /dev/stdout: something was copied"
expect_fail "^nbdcp: --blkhash-file: /dev/fd/3 is also the destination \(standard output, '-'\): " \
  sh -c 'exec "$@" 3>&1' sh "$NBDCP" --blkhash-file=/dev/fd/3 "$src" -
[ ! -s "$tmp/out" ] || fail "'-' with /dev/fd/3: something was copied"
cp "$src" "$tmp/same.raw"
expect_fail "^nbdcp: --blkhash-file: $tmp/same.raw is also the destination: " \
  "$NBDCP" --blkhash-file="$tmp/same.raw" "$src" "$tmp/same.raw"
cmp -s "$src" "$tmp/same.raw" || fail "the destination named twice was changed"
expect_fail "^nbdcp: --blkhash-file: $tmp/new.raw is also the destination: " \
  "$NBDCP" --blkhash-file="$tmp/new.raw" "$src" "$tmp/new.raw"
[ ! -e "$tmp/new.raw" ] || fail "the destination named twice was created"

# 10. The source itself: the checksum would replace (or be appended to)
# the very disk being copied.
cp "$src" "$tmp/src-copy.raw"
expect_fail "^nbdcp: --blkhash-file: $tmp/src-copy.raw is also the source: " \
  "$NBDCP" --blkhash-file="$tmp/src-copy.raw" "$tmp/src-copy.raw" "$tmp/n1.raw"
expect_fail "^nbdcp: --blkhash-file: /dev/fd/5 is also the source: " \
  sh -c 'exec "$@" 5>>"$0"' "$tmp/src-copy.raw" "$NBDCP" \
  --blkhash-file=/dev/fd/5 "$tmp/src-copy.raw" "$tmp/n2.raw"
cmp "$src" "$tmp/src-copy.raw" || fail "the source named as --blkhash-file changed"
[ ! -e "$tmp/n1.raw" ] && [ ! -e "$tmp/n2.raw" ] ||
  fail "a copy refused for its --blkhash-file created its destination"
