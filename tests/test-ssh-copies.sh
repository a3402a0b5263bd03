#!/bin/bash
# nbd+ssh://: copies through ssh are exact, from and to the remote
# server, through its Unix socket (?socket=, qemu-nbd) and its TCP port
# on the remote loopback (nbdkit on 127.0.0.1:PORT), with one
# connection and with four, each its own ssh session; ssh runs with
# BatchMode and, where the configuration sets none, a
# ServerAliveInterval.  Before nbd+ssh:// every copy here failed with
# "unknown URI scheme".
. "${srcdir:-.}/tests/functions.sh"
. "${srcdir:-.}/tests/sshd.sh"

requires "$QEMU_IMG"
requires "$QEMU_NBD"
requires_nbdkit_plugin file
start_sshd

# 512 MiB (four 128 MiB segments, so -C 4 opens four connections), with
# random data in each segment and holes between.
size=$((512 << 20))
truncate -s $size "$tmp/src.img"
for off in 3 140 300 500; do
  head -c $((3 << 20)) /dev/urandom |
    dd of="$tmp/src.img" bs=1M seek=$off conv=notrunc status=none
done

# stop NAME...: end the servers started as NAME (not sshd), so that
# their files are closed.
stop ()
{
  local name
  for name in "$@"; do
    kill "${_server_pid[$name]}" 2>/dev/null || :
    _reap "${_server_pid[$name]}"
  done
}

# check C URI-SOURCE URI-DESTINATION WHAT: nbdcp -C C -T C (-T: more
# connections than CPUs) copies, exactly
# (qemu-img compare against src.img), in C ssh sessions.
check ()
{
  local c=$1 from=$2 to=$3 what=$4 sessions
  : >"$tmp/ssh.log"
  run_nbdcp -C "$c" -T "$c" "$from" "$to" 2>"$tmp/err" ||
    { cat "$tmp/err" >&2; fail "$what -C $c: nbdcp failed"; }
  sessions=$(ssh_sessions)
  [ "$sessions" = "$c" ] ||
    { cat "$tmp/ssh.log" >&2; fail "$what -C $c: $sessions ssh sessions"; }
  grep -Eq -- '-T -o BatchMode=yes -o ServerAliveInterval=40 (-l root )?-- 127.0.0.1 nc ' \
    "$tmp/ssh.log" || { cat "$tmp/ssh.log" >&2; fail "$what: ssh's arguments"; }
}

for c in 1 4; do
  # The socket form: qemu-nbd on a Unix socket, read and written.
  cp --sparse=always "$tmp/src.img" "$tmp/q-src.img"
  start_qemu_nbd qsrc -t -e 8 -f raw -r "$tmp/q-src.img"
  rm -f "$tmp/out.img"
  check $c "nbd+ssh://127.0.0.1/?socket=$tmp/qsrc.sock" "$tmp/out.img" \
    "socket form, from"
  cmp "$tmp/src.img" "$tmp/out.img" || fail "socket form, from -C $c: differs"
  truncate -s $size "$tmp/q-dst.img"
  dd if=/dev/urandom of="$tmp/q-dst.img" bs=1M count=2 seek=200 \
    conv=notrunc status=none # old data that must become a hole's zeros
  start_qemu_nbd qdst -t -e 8 -f raw "$tmp/q-dst.img"
  check $c "$tmp/src.img" "nbd+ssh://root@127.0.0.1/?socket=$tmp/qdst.sock" \
    "socket form, to"
  stop qsrc qdst
  cmp "$tmp/src.img" "$tmp/q-dst.img" || fail "socket form, to -C $c: differs"
  rm -f "$tmp"/q*.sock

  # The port form: nbdkit on 127.0.0.1:PORT of the "remote" host, an
  # export name in the URI (nbdkit's file plugin serves any).
  start_nbdkit_tcp nsrc -r file "$tmp/src.img"
  check $c "nbd+ssh://127.0.0.1:$port_nsrc/disk" "$tmp/out2.img" \
    "port form, from"
  cmp "$tmp/src.img" "$tmp/out2.img" || fail "port form, from -C $c: differs"
  rm -f "$tmp/out2.img"
  truncate -s $size "$tmp/n-dst.img"
  start_nbdkit_tcp ndst file "$tmp/n-dst.img"
  check $c "$tmp/src.img" "nbd+ssh://127.0.0.1:$port_ndst/" "port form, to"
  check_same "$tmp/src.img" "nbd://127.0.0.1:$port_ndst/" "port form, to -C $c"
  stop nsrc ndst
  rm -f "$tmp/n-dst.img" "$tmp/out.img"
done

# A user configuration's ServerAliveInterval is left as it is.
echo "  ServerAliveInterval 7" >>"$tmp/ssh_config"
start_qemu_nbd qsrc -t -f raw -r "$tmp/src.img"
: >"$tmp/ssh.log"
run_nbdcp "nbd+ssh://127.0.0.1/?socket=$tmp/qsrc.sock" null: ||
  fail "copy with the user's ServerAliveInterval failed"
grep -q ServerAliveInterval=40 "$tmp/ssh.log" &&
  { cat "$tmp/ssh.log" >&2; fail "the user's ServerAliveInterval was overridden"; }
grep -q -- ' nc -U ' "$tmp/ssh.log" || fail "no ssh session was logged"
exit 0
