#!/bin/bash
# Failed system calls on the files nbdcp replaces (the --blkhash-file
# and the --resume journal, both written through a temporary file
# beside them, fdatasync'd, renamed over the old one and made durable by
# an fsync of their directory): strace makes each call fail in turn
# (openat of the temporary file, write, fdatasync, rename, the fsync of
# the directory).  Each failure ends the copy with exit status 1 and a
# message naming the call, the file and the cause; the old file is
# left as it was (but for the directory fsync, which comes after the
# rename), and no temporary file is left behind.  A closed standard
# descriptor that /dev/null cannot fill ends nbdcp with a message too.
. "${srcdir:-.}/tests/functions.sh"
requires strace
# LeakSanitizer cannot work under ptrace (strace): in a sanitizer build
# it would add its own fatal error to nbdcp's one line.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
requires python3
ref="${abs_srcdir:-$PWD}/tests/blkhash-ref.py"

strace -f -o /dev/null -e trace=fsync -e inject=fsync:error=EIO true ||
  skip "strace cannot inject faults here"

head -c $((1024 * 1024)) /dev/urandom >"$tmp/src.raw"
want=$(python3 "$ref" sha256 "$tmp/src.raw")
[ ${#want} -eq 64 ] || fail "blkhash-ref.py gave '$want'"
mkdir "$tmp/d"

# faulty CALL ERRNO WHEN: the command that runs nbdcp with its WHEN'th
# CALL (counted in each thread) failing with ERRNO, in array fcmd.
faulty ()
{
  fcmd=(strace -f -qq -o /dev/null -e trace="$1" -e inject="$1:error=$2:when=$3" "$NBDCP")
}

# nth_open NAME ARGS...: which openat call of nbdcp ARGS's first thread
# opens a file whose name starts with NAME.
nth_open ()
{
  local name=$1
  shift
  strace -f -qq -o "$tmp/open.trace" -e trace=openat "$NBDCP" "$@" >"$tmp/out" 2>"$tmp/err"
  grep -n -F "\"$name" "$tmp/open.trace" | head -1 | cut -d: -f1
}

# no_temporary WHAT: nothing but the expected files in $tmp/d.
no_temporary ()
{
  local left
  left=$(cd "$tmp/d" && ls -A | grep -v -x -e old.sum -e journal -e dst.raw || true)
  [ -z "$left" ] || fail "$1: left behind: $left"
}

# 1. --blkhash-file over an old file.
blkhash_case ()
{
  local call=$1 err=$2 when=$3 pattern=$4 keeps=${5:-old}
  echo "old contents" >"$tmp/d/old.sum"
  faulty "$call" "$err" "$when"
  expect_fail "$pattern" "${fcmd[@]}" --blkhash-file="$tmp/d/old.sum" "$tmp/src.raw" null:
  if [ "$keeps" = old ]; then
    [ "$(cat "$tmp/d/old.sum")" = "old contents" ] ||
      fail "--blkhash-file, $call failing: the old file now holds '$(cat "$tmp/d/old.sum")'"
  else
    [ "$(cat "$tmp/d/old.sum")" = "$want" ] ||
      fail "--blkhash-file, $call failing: holds '$(cat "$tmp/d/old.sum")', not the new sum"
  fi
  no_temporary "--blkhash-file, $call failing"
}
d="$tmp/d/old\.sum"
echo "old contents" >"$tmp/d/old.sum"
n=$(nth_open "$tmp/d/old.sum." --blkhash-file="$tmp/d/old.sum" "$tmp/src.raw" null:)
[ -n "$n" ] || fail "no openat of a temporary file beside the --blkhash-file"
blkhash_case openat EACCES "$n" \
  "^nbdcp: .*$d: Permission denied \(creating a temporary file beside it\)"
blkhash_case write ENOSPC 1 "^nbdcp: .*writing $d\.[A-Za-z0-9]{6}.*No space left on device"
blkhash_case fdatasync EIO 1 "^nbdcp: .*fdatasync of $d\.[A-Za-z0-9]{6}.*Input/output error"
blkhash_case rename EXDEV 1 "^nbdcp: .*renaming $d\.[A-Za-z0-9]{6} to $d failed: Invalid cross-device link"
blkhash_case fsync EIO 1 "^nbdcp: .*fsync of directory $tmp/d.*Input/output error" new

# 2. The --resume journal: the first save (before the copy) and the
# second (after it: the old journal, the first one, must stay).
journal_case ()
{
  local call=$1 err=$2 when=$3 pattern=$4 keeps=$5
  rm -f "$tmp/d/journal" "$tmp/d/dst.raw"
  faulty "$call" "$err" "$when"
  expect_fail "$pattern" "${fcmd[@]}" --resume="$tmp/d/journal" "$tmp/src.raw" "$tmp/d/dst.raw"
  case $keeps in
  none) [ ! -e "$tmp/d/journal" ] || fail "journal, $call #$when failing: a journal was left" ;;
  first) grep -q '^nbdcp journal' "$tmp/d/journal" ||
           fail "journal, $call #$when failing: the first journal is gone" ;;
  esac
  no_temporary "journal, $call #$when failing"
}
j="$tmp/d/journal"
journal_case write ENOSPC 1 "^nbdcp: --resume: journal $j: writing $j\.[A-Za-z0-9]{6}.*No space left on device" none
journal_case fdatasync EIO 1 "^nbdcp: --resume: journal $j: fdatasync of $j\.[A-Za-z0-9]{6}.*Input/output error" none
journal_case rename EIO 1 "^nbdcp: --resume: journal $j: renaming $j\.[A-Za-z0-9]{6} to $j failed: Input/output error" none
journal_case rename EIO 2 "^nbdcp: --resume: journal $j: renaming $j\.[A-Za-z0-9]{6} to $j failed: Input/output error" first
journal_case fsync EIO 1 "^nbdcp: --resume: journal $j: fsync of directory $tmp/d.*Input/output error" any

# 3. A closed standard descriptor is filled with /dev/null (so that no
# file nbdcp opens takes its number); if that fails, nbdcp says so.
rm -f "$tmp/d/dst.raw"
expect_fail '^nbdcp: cannot open /dev/null: Too many open files$' \
  strace -qq -o /dev/null -P /dev/null -e trace=openat \
  -e inject=openat:error=EMFILE "$NBDCP" "$tmp/src.raw" "$tmp/d/dst.raw" <&-
[ ! -e "$tmp/d/dst.raw" ] || fail "closed stdin, /dev/null refused: a destination was created"
