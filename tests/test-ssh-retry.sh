#!/bin/bash
# nbd+ssh:// with --retry: the ssh process of a connection, killed in
# the middle of a copy (from the remote server, then to it), is
# replaced by a new ssh session, the copy ends exactly (cmp), and
# nbdcp says how the old ssh ended.  qemu-nbd serves, since nbdkit
# 1.32 aborts when a client vanishes.  Before nbd+ssh:// the copy failed
# with "unknown URI scheme".
. "${srcdir:-.}/tests/functions.sh"
. "${srcdir:-.}/tests/sshd.sh"

requires "$QEMU_NBD"
requires pgrep
start_sshd

# 48 MiB of data read at 12 MB/s (--rate): about four seconds, of which
# the kill takes the first quarter.
head -c $((48 << 20)) /dev/urandom >"$tmp/src.img"

# ssh_of SOCKET: the pid of the ssh client relaying to SOCKET (the
# wrapper execs it with -F; the remote nc has no -F).
ssh_of ()
{
  pgrep -f -- "-F $tmp/ssh_config .* nc -U $1\$"
}

# bytes_done_at_least FILE N: the last --progress-json line of FILE says
# N bytes or more are done.
bytes_done_at_least ()
{
  local done
  done=$(grep -o '"bytes_done": [0-9]*' "$1" 2>/dev/null | tail -1 |
    grep -o '[0-9]*$') || return 1
  [ "${done:-0}" -ge "$2" ]
}

# copy_killing WHAT SOCKET SOURCE DESTINATION: nbdcp --retry copies
# SOURCE to DESTINATION; once 12 MiB are done the ssh relaying to
# SOCKET is killed; the copy must still succeed.
copy_killing ()
{
  local what=$1 sock=$2 pid r=0 victim
  : >"$tmp/ssh.log"
  : >"$tmp/progress"
  run_nbdcp --retry=3 --retry-delay=0.1 --rate=12M --progress-json=3 \
    "$3" "$4" 3>"$tmp/progress" 2>"$tmp/err" &
  pid=$!
  wait_until 60 bytes_done_at_least "$tmp/progress" $((12 << 20)) ||
    fail "$what: the copy did not get under way"
  victim=$(ssh_of "$sock") || fail "$what: no ssh process for $sock"
  [ "$(echo "$victim" | wc -l)" = 1 ] || fail "$what: ssh processes: $victim"
  kill -9 "$victim"
  wait $pid || r=$?
  [ $r = 0 ] || { cat "$tmp/err" >&2; fail "$what: exit $r"; }
  bytes_done_at_least "$tmp/progress" $((40 << 20)) ||
    fail "$what: the kill came after the copy"
  grep -q "reconnecting in .* (retry 1 of 3)" "$tmp/err" ||
    { cat "$tmp/err" >&2; fail "$what: no reconnection"; }
  grep -q "ssh to 127.0.0.1 ended (killed by signal 9)" "$tmp/err" ||
    { cat "$tmp/err" >&2; fail "$what: how ssh ended was not said"; }
  [ "$(ssh_sessions)" = 2 ] ||
    { cat "$tmp/ssh.log" >&2; fail "$what: not two ssh sessions"; }
}

start_qemu_nbd src -t -f raw -r "$tmp/src.img"
copy_killing "from" "$tmp/src.sock" \
  "nbd+ssh://127.0.0.1/?socket=$tmp/src.sock" "$tmp/out.img"
cmp "$tmp/src.img" "$tmp/out.img" || fail "from: the copy differs"

truncate -s $((48 << 20)) "$tmp/dst.img"
start_qemu_nbd dst -t -f raw "$tmp/dst.img"
copy_killing "to" "$tmp/dst.sock" "$tmp/src.img" \
  "nbd+ssh://127.0.0.1/?socket=$tmp/dst.sock"
kill "${_server_pid[dst]}"
_reap "${_server_pid[dst]}"
cmp "$tmp/src.img" "$tmp/dst.img" || fail "to: the copy differs"
exit 0
