#!/bin/bash
# --retry tries the first connections again when they could not be made
# or broke (tests/test-retry-first-connection.sh), but a server's answer
# is final: no such export (nbdkit's exportname filter, qemu-nbd -x, on
# the source, with --bitmap, and on a destination of 4 connections),
# TLS required of a
# client without it, TLS refused to a client that requires it.  Each
# copy fails at once with the server's answer, never "connecting again":
# with --retry-delay=30 a retry would take 30 s, and each run must end
# well within that (a bound no load reaches).  A refused connection is
# still retried.
. "${srcdir:-.}/tests/functions.sh"
requires_nbdkit_plugin memory
requires_nbdkit_plugin file
requires_nbdkit_filter exportname
requires "$QEMU_NBD"
requires "$QEMU_IMG"
requires psktool

start_nbdkit strict --filter=exportname memory size=1M \
  exportname-strict=true exportname=good
"$QEMU_IMG" create -q -f raw "$tmp/q.raw" 1M
start_qemu_nbd q -f raw -x good --shared=0 --persistent "$tmp/q.raw"
psktool -u alice -p "$tmp/keys.psk" >/dev/null
start_nbdkit tls --tls=require --tls-psk="$tmp/keys.psk" memory size=1M
start_nbdkit plain --tls=off memory size=1M
head -c 1048576 /dev/urandom >"$tmp/data"

# final WHAT ERE NBDCP-ARGS...: nbdcp --retry=3 --retry-delay=30 fails
# (exit 1) with a message matching ERE, without waiting to try again.
final ()
{
  local what=$1 ere=$2 r=0 t0 t1
  shift 2
  t0=$(date +%s%N)
  timeout --kill-after=5 25 "$NBDCP" --retry=3 --retry-delay=30 "$@" \
    >"$tmp/out" 2>"$tmp/err" || r=$?
  t1=$(date +%s%N)
  [ $r -eq 1 ] || { cat "$tmp/err" >&2; fail "$what: exit $r, not 1"; }
  grep -Eq -- "$ere" "$tmp/err" ||
    { cat "$tmp/err" >&2; fail "$what: message does not match '$ere'"; }
  ! grep -q "connecting again" "$tmp/err" ||
    { cat "$tmp/err" >&2; fail "$what: a server's answer was retried"; }
  [ $(((t1 - t0) / 1000000)) -lt 20000 ] ||
    fail "$what: took $(((t1 - t0) / 1000000)) ms: it waited to retry"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] ||
    { cat "$tmp/err" >&2; fail "$what: more than one line on stderr"; }
}

wrong=nbd+unix:///wrong
wrong_re='nbd\+unix:///wrong'
final "nbdkit, wrong export" \
  "^nbdcp: $wrong_re\\?socket=.*: .*no export named 'wrong'" \
  "$wrong?socket=$tmp/strict.sock" null:
final "qemu-nbd, wrong export" \
  "^nbdcp: $wrong_re\\?socket=.*: .*no export named 'wrong'" \
  "$wrong?socket=$tmp/q.sock" null:
final "qemu-nbd, wrong export, destination of 4 connections" \
  "^nbdcp: $wrong_re\\?socket=.*: .*no export named 'wrong'" \
  -C 4 "$tmp/data" "$wrong?socket=$tmp/q.sock"
truncate -s 1M "$tmp/previous.raw"
final "qemu-nbd, wrong export, --bitmap" \
  "^nbdcp: $wrong_re\\?socket=.*: .*no export named 'wrong'" \
  --bitmap=b0 "$wrong?socket=$tmp/q.sock" "$tmp/previous.raw"
final "TLS required" "^nbdcp: nbd\\+unix://.*: .*server requires TLS" \
  "$(uri_of "$tmp/tls.sock")" null:
final "TLS refused" "^nbdcp: nbds\\+unix://.*: .*server refused TLS" \
  "nbds+unix://alice@/?socket=$tmp/plain.sock&tls-psk-file=$tmp/keys.psk" \
  null:
# Without --retry the message does not point to --retry.
expect_fail "no export named 'wrong'" "$NBDCP" "$wrong?socket=$tmp/q.sock" null:
! grep -q "see --retry" "$tmp/err" ||
  fail "a server's answer is said to be worth a --retry"

# The right names work (the failures above were the answers): the copy
# is exact.
run_nbdcp --retry=3 "$tmp/data" "nbd+unix:///good?socket=$tmp/q.sock"
"$QEMU_IMG" convert -O raw "nbd+unix:///good?socket=$tmp/q.sock" "$tmp/back"
cmp "$tmp/data" "$tmp/back" || fail "the copy to the right export differs"

# A refused connection is retried: nothing listens at the socket until
# nbdcp has said it will connect again.
python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('$tmp/late.sock')"
run_nbdcp --retry=5 --retry-delay=1 "$(uri_of "$tmp/late.sock")" \
  "$tmp/late.out" 2>"$tmp/err" &
copy=$!
wait_for_line "$tmp/err" 'Connection refused; connecting again in' 60 ||
  { cat "$tmp/err" >&2; fail "a refused connection was not retried"; }
rm "$tmp/late.sock"
start_nbdkit late -r file "$tmp/data"
wait $copy || { cat "$tmp/err" >&2; fail "the copy from a late server failed"; }
cmp "$tmp/data" "$tmp/late.out" || fail "the copy from a late server differs"
exit 0
