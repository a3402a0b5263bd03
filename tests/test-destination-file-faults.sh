#!/bin/bash
# Failed system calls on a destination file (strace makes one fail;
# its writes, zeroes and flushes go through io_uring, which
# test-ring-faults.sh fails): opening an existing file, creating a new
# one, setting its size (ftruncate) before the copy and, for a stream
# source, after it, and the second descriptor --direct opens with
# O_DIRECT (EINVAL: what a file system without O_DIRECT says).  Each
# ends nbdcp with exit status 1 and a message naming the file and the
# cause; an existing file keeps its bytes (compared with a copy made
# before), and a file nbdcp created for a copy that then failed before
# writing is removed.
. "${srcdir:-.}/tests/functions.sh"
requires strace
# LeakSanitizer cannot work under ptrace (strace).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

strace -f -qq -o /dev/null -e trace=openat -e inject=openat:error=EIO:when=1000 \
  true || skip "strace cannot inject faults here"

head -c $((1024 * 1024)) /dev/urandom >"$tmp/src.raw"
head -c $((2 * 1024 * 1024)) /dev/urandom >"$tmp/orig.raw"
mkdir "$tmp/d"
dst="$tmp/d/dst.raw"

# failing CALL ERRNO WHEN PATTERN NBDCP-ARGS...: nbdcp NBDCP-ARGS with
# the WHEN'th CALL on $dst failing with ERRNO exits 1 saying PATTERN.
failing ()
{
  local call=$1 err=$2 when=$3 pattern=$4
  shift 4
  expect_fail "$pattern" strace -f -qq -o /dev/null -P "$dst" \
    -e trace="$call" -e inject="$call:error=$err:when=$when" "$NBDCP" "$@"
}

# existing CALL ERRNO WHEN PATTERN NBDCP-ARGS...: as failing, onto an
# existing destination, which must keep its bytes.
existing ()
{
  cp "$tmp/orig.raw" "$dst"
  failing "$@"
  cmp "$tmp/orig.raw" "$dst" || fail "$1 failing: the existing destination changed"
}

# new CALL ERRNO WHEN PATTERN NBDCP-ARGS...: as failing, with no file
# there before, and none after.
new ()
{
  rm -f "$dst"
  failing "$@"
  [ -z "$(ls -A "$tmp/d")" ] || fail "$1 failing: $(ls -A "$tmp/d") left behind"
}

d=$(printf '%s' "$dst" | sed 's/[.]/\\./g')
existing openat EACCES 1 "^nbdcp: $d: Permission denied$" "$tmp/src.raw" "$dst"
existing ftruncate EIO 1 "^nbdcp: $d: cannot set size to 1048576: Input/output error$" \
  "$tmp/src.raw" "$dst"
existing openat EINVAL 2 "^nbdcp: $d: cannot open with O_DIRECT \(--direct\): Invalid argument$" \
  --direct "$tmp/src.raw" "$dst"

# A new file: the first openat finds nothing, the second creates it,
# the third (--direct) opens it again with O_DIRECT.
new openat ENOSPC 2 "^nbdcp: $d: No space left on device$" "$tmp/src.raw" "$dst"
new ftruncate EFBIG 1 "^nbdcp: $d: cannot set size to 1048576: File too large$" \
  "$tmp/src.raw" "$dst"
new openat EINVAL 3 "^nbdcp: $d: cannot open with O_DIRECT \(--direct\): Invalid argument$" \
  --direct "$tmp/src.raw" "$dst"

# A stream source: the size is set once the stream has ended.  The copy
# has been written by then, so the file stays, but the copy failed.
rm -f "$dst"
expect_fail "^nbdcp: $d: cannot set size to 1048576: Input/output error$" \
  sh -c 'cat "$0" | strace -f -qq -o /dev/null -P "$1" -e trace=ftruncate \
    -e inject=ftruncate:error=EIO "$2" - "$1"' "$tmp/src.raw" "$dst" "$NBDCP"

# The same copies without a fault succeed and are exact.
rm -f "$dst"
run_nbdcp --direct "$tmp/src.raw" "$dst"
cmp "$tmp/src.raw" "$dst" || fail "the copy without a fault differs"
exit 0
