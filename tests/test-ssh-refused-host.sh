#!/bin/bash
# nbd+ssh://: a host or user that ssh would read as an option (the
# libnbd CVE's nbd+ssh://-oProxyCommand=...), or that holds what a
# shell would run, and a socket path the remote shell would expand,
# are refused before anything runs: the command the URI smuggles never
# runs, and ssh (a wrapper first on PATH that logs every run) is never
# started.  Before nbd+ssh:// these failed as "unknown URI scheme",
# which names no refusal.
. "${srcdir:-.}/tests/functions.sh"

mkdir "$tmp/bin"
cat >"$tmp/bin/ssh" <<EOF
#!/bin/bash
printf '%s\n' "\$*" >>"$tmp/ssh.log"
exit 255
EOF
chmod +x "$tmp/bin/ssh"
export PATH=$tmp/bin:$PATH
: >"$tmp/ssh.log"
truncate -s 1M "$tmp/disk.img"
cd "$tmp"

# refused URI WHAT: nbdcp refuses URI, as source and as destination,
# with a message naming WHAT, and nothing ran.
refused ()
{
  expect_fail "^nbdcp: .*refused: the $2" "$NBDCP" "$1" null:
  expect_fail "^nbdcp: .*refused: the $2" "$NBDCP" "$tmp/disk.img" "$1"
}

refused 'nbd+ssh://-oProxyCommand=touch%20X/' host
refused 'nbd+ssh://%2DoProxyCommand=touch%20X/' host
refused 'nbd+ssh://-oProxyCommand=touch%20X@localhost/' "user name"
refused 'nbd+ssh://localhost;touch%20X/' host
refused 'nbd+ssh://$(touch%20X)/' host
refused 'nbd+ssh://localhost/?socket=/s;touch%20X' "socket path"
refused 'nbd+ssh://localhost/?socket=`touch%20X`' "socket path"
refused 'nbd+ssh://localhost/?socket=-e/bin/sh' "socket path"

[ ! -e "$tmp/X" ] || fail "a command in a refused URI ran"
[ ! -s "$tmp/ssh.log" ] ||
  { cat "$tmp/ssh.log" >&2; fail "ssh was started for a refused URI"; }
exit 0
