#!/bin/bash
# The randomized differential test: copies drawn at random over source
# shapes, servers, destinations and options (tests/random-copies.py
# says which), each checked by an oracle independent of nbdcp (cmp or
# qemu-img compare of the bytes, blkhash-ref.py of the hash, the stats
# adding up to the size).  The seed is printed and changes per run, so
# that CI explores over time; SEED=N reproduces a run, SEED=N CASE=K one
# case.  RANDOM_COPIES_BUDGET (seconds, default 60; 30 in a sanitizer
# build, which is slower) bounds the run, RANDOM_COPIES_CASES=N runs N
# cases whatever the time (make check-long runs thousands).
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires "$QEMU_IMG"
requires "$QEMU_NBD"
requires cmp
requires_nbdkit_plugin file
requires_nbdkit_plugin memory
requires_nbdkit_filter extentlist
requires_nbdkit_filter blocksize-policy

if [ "${SANITIZED:-no}" = yes ]; then
  : "${RANDOM_COPIES_BUDGET:=30}"
fi
export NBDCP NBDKIT QEMU_NBD QEMU_IMG RANDOM_COPIES_BUDGET TMPDIR="$tmp"
python3 "${abs_srcdir:-${srcdir:-.}}/tests/random-copies.py"
