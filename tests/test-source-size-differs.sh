#!/bin/bash
# A source whose connections report different sizes (a server that
# changed the disk between handshakes, or serves each client its own)
# is refused before anything is written: exit 1, a message naming the
# connections and their sizes, and no write on the destination (its
# log).  The server is nbdkit's eval plugin, whose size depends on the
# connection: the first gets 200 MiB (two segments, so a second
# connection is opened), the others 150 MiB.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin eval
requires_nbdkit_plugin memory
requires_nbdkit_filter log

M=$((1024 * 1024))
# Each connection's handle is its number, from a counter in the
# plugin's $tmpdir (the first connection handshakes alone).  The whole
# disk is a hole, so that a copy that went ahead would only zero.
# Multi-conn is advertised, so that nbdcp waits for the second
# connection's greeting however slow the shell is (without it, a
# greeting late by 50 ms drops the connection, and the copy goes on
# with one).
start_nbdkit src eval \
  open='n=$(( $(cat $tmpdir/n 2>/dev/null || echo 0) + 1 )); echo $n >$tmpdir/n; echo $n' \
  get_size='if [ "$2" = 1 ]; then echo 200M; else echo 150M; fi' \
  pread='head -c $3 /dev/zero' \
  can_extents='exit 0' \
  extents='echo $4 $3 hole,zero' \
  can_zero='exit 3' can_write='exit 3' can_multi_conn='exit 0'
start_nbdkit dst --filter=log memory 300M logfile="$tmp/dst.log"

expect_fail "source .*: connection 2 has $((150 * M)) bytes, connection 1 $((200 * M))" \
  "$NBDCP" -C 2 "$(uri_of "$tmp/src.sock")" "$(uri_of "$tmp/dst.sock")"
! grep -Eq ' (Write|Zero|Trim) ' "$tmp/dst.log" ||
  fail "a source of two sizes was copied (in part)"
