#!/bin/bash
# The fault matrix: for each operation that can fail (the destination's
# connect, the source's block status and read, the destination's
# write, zero, flush and --verify read-back), each point of a copy
# (the first request, the first in the second 128 MiB segment, the
# second connection, the final flush, a --checkpoint flush, the first
# write after one) and each way (an EIO reply, or the server killing
# itself at that very request and losing its unflushed writes),
# crossed with plain, --retry, --resume, --blkhash, --verify, --bitmap,
# --retry --blkhash, --resume --retry and --bitmap --retry, pruned
# where meaningless (tests/fault-matrix.py has the table, the pruning
# rules and the runner).  Each case asserts the exit status (0 only
# when --retry can reconnect), the message (operation, side, and the
# offset and length the server failed), the data (cmp with the source),
# the --stats=json sums, the --blkhash checksum (blkhash-ref.py), and
# after a failed --resume copy that the journal lists only flushed
# segments and that the same command then finishes the copy exactly.
#   CASE=write/mid/die/retry+blkhash  runs one case (a prefix such as
#                                     CASE=flush or CASE=write/mid runs
#                                     those that start so; --list in
#                                     fault-matrix.py names them all)
#   FAULT_MATRIX_BUDGET=S             seconds before no new case starts
#                                     (default 90; 0: no limit); the
#                                     cases left out are counted
#   FAULT_MATRIX_JOBS=N               cases run at once (default 2)
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires cmp
requires qemu-io
requires "$QEMU_IMG"
requires "$QEMU_NBD"
requires_nbdkit_plugin sh
requires_nbdkit_plugin file
"$NBDCP" --retry=1 --resume=x --blkhash --help >/dev/null

export NBDCP NBDKIT QEMU_NBD QEMU_IMG FAULT_MATRIX_BUDGET FAULT_MATRIX_JOBS \
  CASE TMPDIR="$tmp"
python3 "${abs_srcdir:-${srcdir:-.}}/tests/fault-matrix.py"
