#!/bin/bash
# A write that takes only part of what it was given is continued from
# where it stopped, for every writer that loops on write(2): the
# --blkhash-file written to a descriptor (/dev/fd/5), the one replaced
# atomically by name, and a stream destination (a FIFO).  strace makes
# the first write to the file return N without writing anything, so
# the file must hold exactly what comes after the first N bytes: a
# writer that started again from the beginning, or that skipped more
# or less than N, leaves something else (blkhash-ref.py and the source
# file are the oracles, not nbdcp).
. "${srcdir:-.}/tests/functions.sh"
requires strace
requires python3
# LeakSanitizer cannot work under ptrace (strace).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"

strace -f -qq -o /dev/null -e trace=write -e inject=write:retval=1:when=1 \
  true >/dev/null || skip "strace cannot inject return values here"

head -c $((1024 * 1024)) /dev/urandom >"$tmp/src.raw"
line="$(python3 "$ref" sha256 "$tmp/src.raw")"
[ ${#line} -eq 64 ] || fail "blkhash-ref.py gave '$line'"

# short_first_write PATH N CMD...: run CMD with the first write to PATH
# faked as writing N bytes (strace -P follows PATH's descriptors too).
short_first_write ()
{
  local path=$1 n=$2
  shift 2
  strace -f -qq -o /dev/null -P "$path" -e trace=write \
    -e inject="write:retval=$n:when=1" "$@" 2>"$tmp/err" ||
    fail "$* with a short first write to $path: exit $?: $(cat "$tmp/err")"
}

# 1. --blkhash-file to a descriptor: the digest line, less 10 bytes.
: >"$tmp/fd.sum"
short_first_write "$tmp/fd.sum" 10 \
  "$NBDCP" --blkhash-file=/dev/fd/5 "$tmp/src.raw" null: 5>"$tmp/fd.sum"
expect_equal "--blkhash-file=/dev/fd/5 after a write of 10 bytes" \
  "${line:10}" "$(cat "$tmp/fd.sum")"

# 2. --blkhash-file by name (a temporary file renamed over the name):
# strace does not know the temporary file's name, and nbdcp writes
# nothing else, so its first write is the file's.
mkdir "$tmp/d"
strace -f -qq -o /dev/null -e trace=write -e inject=write:retval=7:when=1 \
  "$NBDCP" --blkhash-file="$tmp/d/x.sum" "$tmp/src.raw" null: 2>"$tmp/err" ||
  fail "--blkhash-file by name, short first write: $(cat "$tmp/err")"
expect_equal "--blkhash-file by name after a write of 7 bytes" \
  "${line:7}" "$(cat "$tmp/d/x.sum")"

# 3. A stream destination: the source less its first 4096 bytes.
mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/out.raw" &
reader=$!
short_first_write "$tmp/fifo" 4096 "$NBDCP" "$tmp/src.raw" - >"$tmp/fifo"
wait $reader
tail -c +4097 "$tmp/src.raw" | cmp - "$tmp/out.raw" ||
  fail "stream destination: not the source after its first 4096 bytes"
exit 0
