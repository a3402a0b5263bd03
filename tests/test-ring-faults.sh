#!/bin/bash
# A failed io_uring_enter (strace makes the worker's call fail): EIO
# or EPERM ends the copy with exit status 1 and one line naming the worker's
# call and the cause, no offset or length (there is none); EINTR,
# EAGAIN and EBUSY, which the kernel may return any time, are tried
# again and the copy is whole.
. "${srcdir:-.}/tests/functions.sh"
requires strace
requires cmp
# LeakSanitizer cannot work under ptrace (strace): in a sanitizer build
# it would add its own fatal error to nbdcp's one line.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

strace -f -o /dev/null -e trace=io_uring_enter \
  -e inject=io_uring_enter:error=EIO true ||
  skip "strace cannot inject faults here"

head -c $((8 * 1024 * 1024)) /dev/urandom >"$tmp/src.raw"

# ring_fault ERRNO WHEN: the command that copies src.raw to dst.raw with
# the WHEN'th io_uring_enter of each thread failing with ERRNO, in rcmd.
ring_fault ()
{
  rm -f "$tmp/dst.raw"
  rcmd=(strace -f -qq -o /dev/null -e trace=io_uring_enter
        -e inject="io_uring_enter:error=$1:when=$2"
        "$NBDCP" "$tmp/src.raw" "$tmp/dst.raw")
}

for when in 1 2 3; do
  ring_fault EIO $when
  expect_fail '^nbdcp: worker io_uring (wait|submit) failed: Input/output error$' "${rcmd[@]}"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "EIO #$when: more than one line"; }
done
# EPERM is -1, the smallest error.
ring_fault EPERM 1
expect_fail '^nbdcp: worker io_uring (wait|submit) failed: Operation not permitted$' "${rcmd[@]}"

for err in EINTR EAGAIN EBUSY; do
  for when in 1 2; do
    ring_fault $err $when
    timeout --kill-after=10 120 "${rcmd[@]}" 2>"$tmp/err" ||
      { cat "$tmp/err"; fail "$err #$when: the copy failed"; }
    [ ! -s "$tmp/err" ] || { cat "$tmp/err"; fail "$err #$when: said something"; }
    cmp "$tmp/src.raw" "$tmp/dst.raw" || fail "$err #$when: copy differs"
  done
done
exit 0
