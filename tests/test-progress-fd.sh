#!/bin/bash
# --progress=FD writes "N/100" lines, only going up, ending with 100/100,
# for NBD, file and stream copies: the format virt-v2v parses.  With a
# stream source (no size) it is 0/100 until 100/100 at the end.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_filter delay
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"

check_progress ()
{
  local file=$1 what=$2
  [ -s "$file" ] || fail "$what: no progress written"
  if grep -Evq '^[0-9]+/100$' "$file"; then
    cat "$file" >&2
    fail "$what: a progress line is not N/100"
  fi
  sed 's,/100,,' "$file" |
    awk '$1 < last || $1 > 100 { bad = 1 } { last = $1 } END { exit bad }' ||
    fail "$what: progress went backwards or past 100: $(tr '\n' ' ' <"$file")"
  [ "$(tail -n 1 "$file")" = "100/100" ] || fail "$what: last line is not 100/100"
  [ "$(grep -c '^100/100$' "$file")" -eq 1 ] || fail "$what: 100/100 more than once"
}

# NBD to NBD, slowed down so that several lines are written.  The
# source's twin without the delay serves the same bytes, for qemu-img
# to compare with.
start_slow_twin src ref 20ms sparse-random size=256M percent=100 seed=3
ref=$(uri_of "$tmp/ref.sock")
start_nbdkit dst memory size=256M
run_nbdcp --progress=3 -C 2 -T 2 -R 2 "$(uri_of "$tmp/src.sock")" \
  "$(uri_of "$tmp/dst.sock")" 3>"$tmp/p1"
check_progress "$tmp/p1" "nbd -> nbd"
[ "$(wc -l <"$tmp/p1")" -ge 3 ] || fail "nbd -> nbd: expected several lines"
# The values move during the copy: a progress stuck at 0/100 until the
# end, then 100/100, would pass the checks above.  The copy takes at
# least 2.5 s (512 reads delayed 20 ms, 4 at a time), looked at every
# 200 ms or so: two values strictly between 0 and 100 at least.
middle=$(grep -Ev '^(0|100)/100$' "$tmp/p1" | sort -u | wc -l)
[ "$middle" -ge 2 ] ||
  fail "nbd -> nbd: $middle values between 0 and 100: $(tr '\n' ' ' <"$tmp/p1")"
check_same "$ref" "$(uri_of "$tmp/dst.sock")" "nbd -> nbd"

# NBD to a file, and the file to a stream.
run_nbdcp --progress=5 "$(uri_of "$tmp/dst.sock")" "$tmp/disk.raw" 5>"$tmp/p2"
check_progress "$tmp/p2" "nbd -> file"
check_same "$ref" "$tmp/disk.raw" "nbd -> file"
run_nbdcp --progress=4 "$tmp/disk.raw" - 4>"$tmp/p3" | cmp - "$tmp/disk.raw"
check_progress "$tmp/p3" "file -> stream"
# A stream source has no size: 0/100 until the end, then 100/100
# (nothing in between can be measured), as with nbdcopy.  Slowed down
# so that it takes several progress updates; the copy is checked.
run_nbdcp "$(uri_of "$tmp/src.sock")" - |
  run_nbdcp --progress=3 - "$tmp/fromstream" 3>"$tmp/p4"
check_progress "$tmp/p4" "stream -> file"
[ "$(grep -vcx '0/100' "$tmp/p4")" -eq 1 ] ||
  fail "stream -> file: lines other than 0/100 before the end: $(tr '\n' ' ' <"$tmp/p4")"
"$QEMU_IMG" compare -q -f raw -F raw "$(uri_of "$tmp/src.sock")" "$tmp/fromstream" ||
  fail "stream -> file: the copy differs from the source"

# A failed copy never claims 100/100.
expect_fail 'read-only' "$NBDCP" --progress=3 "$tmp/disk.raw" \
  "$(uri_of "$tmp/src.sock")" 3>"$tmp/p5"
! grep -q '^100/100$' "$tmp/p5" || fail "failed copy wrote 100/100"
