#!/bin/bash
# A refused copy leaves a destination file as it was (docs/nbdcp.pod:
# such copies are refused "before anything is written"): an existing
# 8 MiB file of random bytes keeps its bytes, size and modification
# time, and a destination that did not exist is not created (nor
# anything else in its directory).  One case per refusal that a file
# destination can meet: a size that the source's minimum block size
# cannot end on, --request-size below that minimum, --resume of a
# stream, a source too large to copy, the same file on both sides, and
# a new file in a directory that cannot take it (refused first);
# and '-' on a file opened read-write (1<>), which the shell does not
# truncate.  Each exits 1 with its own message.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin memory
requires_nbdkit_plugin null
requires_nbdkit_filter blocksize-policy
requires cmp

head -c $((8 * 1024 * 1024)) /dev/urandom >"$tmp/orig"
mkdir "$tmp/new"

# A minimum block of 4 KiB: 1000000 bytes cannot be read to the end,
# and requests of 512 bytes not at all.
start_nbdkit odd --filter=blocksize-policy memory size=1000000 \
  blocksize-minimum=4096 blocksize-error-policy=error
odd=$(uri_of "$tmp/odd.sock")
start_nbdkit min4k --filter=blocksize-policy memory size=4M \
  blocksize-minimum=4096 blocksize-error-policy=error
min4k=$(uri_of "$tmp/min4k.sock")
# Over 128 TiB, nbdcp's limit.
start_nbdkit huge null size=$((129 * 1024 * 1024 * 1024 * 1024))
huge=$(uri_of "$tmp/huge.sock")

odd_message='^nbdcp: source .* has a minimum block size of 4096 bytes, but the copy.s size, 1000000 bytes, is not a multiple of it: its last 576 bytes cannot be read$'

# check_untouched NAME FILE: FILE, a copy of $tmp/orig made with cp -p,
# still holds its bytes and has its modification time.
check_untouched ()
{
  cmp "$tmp/orig" "$2" || fail "$1: the existing destination was changed"
  [ "$(stat -c %y "$2")" = "$(stat -c %y "$tmp/orig")" ] ||
    fail "$1: the existing destination's modification time changed"
}

# refused NAME PATTERN CMD...: CMD, whose destination is written @DST@,
# exits 1 with a message matching PATTERN, onto an existing file (left
# byte for byte as it was) and onto a name that does not exist (not
# created, nor anything else beside it).
refused ()
{
  local name=$1 pattern=$2 arg existing=() new=()
  shift 2
  for arg in "$@"; do
    existing+=("${arg/@DST@/$tmp/$name.img}")
    new+=("${arg/@DST@/$tmp/new/$name.img}")
  done
  echo "$name: existing destination"
  cp -p "$tmp/orig" "$tmp/$name.img"
  expect_fail "$pattern" "${existing[@]}"
  check_untouched "$name" "$tmp/$name.img"
  echo "$name: new destination"
  expect_fail "$pattern" "${new[@]}"
  if [ -n "$(ls -A "$tmp/new")" ]; then
    ls -lA "$tmp/new" >&2
    fail "$name: the refused copy left a file behind"
  fi
}

refused min-block "$odd_message" "$NBDCP" "$odd" @DST@

refused request-size \
  '^nbdcp: --request-size 512 is smaller than the source.s minimum block size, 4096 bytes$' \
  "$NBDCP" --request-size=512 "$min4k" @DST@

# The journal goes beside the destination: it must not stay either.
refused resume-stream \
  '^nbdcp: --resume: a copy from or to a stream cannot be resumed$' \
  sh -c 'printf data | "$@"' sh "$NBDCP" --resume=@DST@.journal - @DST@

refused too-large '^nbdcp: source .* is too large: ' "$NBDCP" "$huge" @DST@

echo "same file"
cp -p "$tmp/orig" "$tmp/same.img"
expect_fail '^nbdcp: source and destination are the same file: ' \
  "$NBDCP" "$tmp/same.img" "$tmp/same.img"
check_untouched "same file" "$tmp/same.img"

# A new destination in a directory that cannot take it is refused when
# it is opened, before anything else is asked of the source: the
# message is the directory's refusal, not the odd source's that a later
# check would give (chattr +i stops root too; chmod stops other users).
echo "unwritable directory"
mkdir "$tmp/frozen"
if [ "$(id -u)" -ne 0 ]; then
  chmod 555 "$tmp/frozen"
  frozen_message="^nbdcp: $tmp/frozen/x.img: Permission denied$"
elif chattr +i "$tmp/frozen" 2>/dev/null; then
  trap 'chattr -i "$tmp/frozen" 2>/dev/null; _cleanup' EXIT
  frozen_message="^nbdcp: $tmp/frozen/x.img: Operation not permitted$"
else
  frozen_message=
  echo "chattr +i does not work here: unwritable directory not checked"
fi
if [ -n "$frozen_message" ]; then
  expect_fail "$frozen_message" "$NBDCP" "$odd" "$tmp/frozen/x.img"
  [ -z "$(ls -A "$tmp/frozen")" ] || fail "something was made in the unwritable directory"
fi

# '-' on a file that the shell opened without truncating it.
echo "standard output, read-write"
cp -p "$tmp/orig" "$tmp/stdout.img"
expect_fail "$odd_message" \
  sh -c 'exec "$@" 1<>"$0"' "$tmp/stdout.img" "$NBDCP" "$odd" -
check_untouched "standard output" "$tmp/stdout.img"

# The same copies that are not refused do create and fill the file.
run_nbdcp "$min4k" "$tmp/new/ok.img"
cmp "$tmp/new/ok.img" <(head -c $((4 * 1024 * 1024)) /dev/zero) ||
  fail "the copy that is not refused did not make its destination"
