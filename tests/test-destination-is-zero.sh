#!/bin/bash
# --destination-is-zero sends no zero or trim requests at all, writes only non-zero blocks, and the copy is right.
. "${srcdir:-.}/tests/functions.sh"

requires_nbdkit_plugin data
requires_nbdkit_plugin memory
requires_nbdkit_filter log
requires "$QEMU_IMG"

# copy NAME NBDCP-OPTIONS...: copy the source with big holes and zero
# blocks in its data (functions.sh: with -S 4096, 16K of non-zero 4K
# blocks) to a fresh memory disk with -S 4096, and compare the two
# afterwards; the copy's requests are in $tmp/NAME.copy.log.
copy ()
{
  local name=$1
  shift
  copy_zero_blocks "$name" memory size=$ZERO_BLOCKS_SIZE -- -S 4096 "$@"
}

# A fresh memory disk reads as zero, so the option tells the truth.
copy dz --destination-is-zero
if grep -E ' (Zero|Trim) id=' "$tmp/dz.copy.log"; then
  fail "--destination-is-zero: zero or trim requests were sent"
fi
[ "$(written_bytes "$tmp/dz.copy.log")" -eq 16384 ] ||
  fail "--destination-is-zero: wrote $(written_bytes "$tmp/dz.copy.log") bytes, not the 16384 non-zero ones"
grep -q ' Flush id=' "$tmp/dz.copy.log" ||
  fail "--destination-is-zero: the destination was not flushed"

# --target-is-zero is the same option.
copy tz --target-is-zero
if grep -E ' (Zero|Trim) id=' "$tmp/tz.copy.log"; then
  fail "--target-is-zero: zero or trim requests were sent"
fi

# Without the option (nor the destination's say: nbdcopy's requests) the
# holes and the zero blocks are zeroed, so the checks above can fail.
copy plain --no-destination-extents
grep -q ' Zero id=' "$tmp/plain.copy.log" ||
  fail "without --destination-is-zero no zero request was sent"
[ "$(written_bytes "$tmp/plain.copy.log")" -eq 16384 ] ||
  fail "without --destination-is-zero: wrote $(written_bytes "$tmp/plain.copy.log") bytes, not 16384"

# --stats says why bytes were skipped: the option when it was given, a
# new file when nbdcp made one (the option implied, not given), and
# never the option's name when it was not given.
start_nbdkit zsrc data "$ZERO_BLOCKS_DATA" size=$ZERO_BLOCKS_SIZE
start_nbdkit zdst memory size=$ZERO_BLOCKS_SIZE
run_nbdcp --stats --destination-is-zero "$(uri_of "$tmp/zsrc.sock")" \
  "$(uri_of "$tmp/zdst.sock")" 2>"$tmp/given.stats"
grep -E '^  skipped .*, --destination-is-zero\)$' "$tmp/given.stats" ||
  fail "--stats with --destination-is-zero: $(cat "$tmp/given.stats")"
run_nbdcp --stats "$(uri_of "$tmp/zsrc.sock")" "$tmp/new.raw" 2>"$tmp/new.stats"
check_same "$(uri_of "$tmp/zsrc.sock")" "$tmp/new.raw" "new file"
grep -E '^  skipped .*, the destination is new: it read as zero\)$' "$tmp/new.stats" ||
  fail "--stats onto a new file: $(cat "$tmp/new.stats")"
if grep -q -- '--destination-is-zero' "$tmp/new.stats"; then
  fail "--stats names --destination-is-zero, which was not given: $(cat "$tmp/new.stats")"
fi
