#!/bin/bash
# nbd+ssh://: ssh that cannot log in (a key the server does not accept)
# or reaches no server (no such socket) fails the copy at once, exit
# 1, with ssh's own words in nbdcp's message, never a prompt waiting
# for a keyboard (BatchMode); with --retry the failure is retried.
# Before nbd+ssh:// the message was "unknown URI scheme".
. "${srcdir:-.}/tests/functions.sh"
. "${srcdir:-.}/tests/sshd.sh"

requires "$QEMU_NBD"
start_sshd
truncate -s 1M "$tmp/disk.img"
start_qemu_nbd src -t -f raw -r "$tmp/disk.img"
src="nbd+ssh://127.0.0.1/?socket=$tmp/src.sock"

# A key the server does not know; ssh would fall back to a password,
# which no one is there to type.
ssh-keygen -q -t ed25519 -N '' -f "$tmp/other_key" </dev/null
sed -i "s|IdentityFile .*|IdentityFile $tmp/other_key|" "$tmp/ssh_config"
echo "  PasswordAuthentication yes" >>"$tmp/ssh_config"
start=$(date +%s)
expect_fail "^nbdcp: .*: ssh to 127.0.0.1 ended \(exit status 255\): .*Permission denied \(publickey\)" \
  "$NBDCP" "$src" "$tmp/out.img"
[ $(($(date +%s) - start)) -lt 60 ] || fail "the refused key took a minute"
[ ! -e "$tmp/out.img" ] || fail "the failed copy created its destination"
expect_fail "Permission denied .*gave up after 1 retry" \
  "$NBDCP" --retry=1 --retry-delay=0.1 "$tmp/disk.img" "$src"
grep -q "connecting again in .* (retry 1 of 1)" "$tmp/err" ||
  { cat "$tmp/err" >&2; fail "ssh's failure was not retried"; }

# The right key, but no server at the socket: nc's words.
sed -i "s|IdentityFile .*|IdentityFile $tmp/user_key|" "$tmp/ssh_config"
expect_fail "ssh to 127.0.0.1 ended \(exit status 1\): .*none.sock: No such file or directory" \
  "$NBDCP" "nbd+ssh://127.0.0.1/?socket=$tmp/none.sock" null:
exit 0
