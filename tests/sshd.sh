# The nbd+ssh:// tests' own sshd.  Source it after functions.sh, then
# call start_sshd.  Skips the test (77), saying why, where sshd cannot
# start or be logged in to.
#
# start_sshd: an sshd (openssh-server) on a free port of 127.0.0.1,
# with a host key and an authorized key made in $tmp, killed when the
# test ends.  A wrapper $tmp/bin/ssh, first on PATH from then on, runs
# the real ssh with -F $tmp/ssh_config (the port, the key, the known
# host) and appends its arguments to $tmp/ssh.log, one line per run.
# ssh_port is the port.  start_sshd SSH-CONFIG-LINES... adds lines to
# the configuration (ServerAliveInterval 5, say).

SSHD=${SSHD:-/usr/sbin/sshd}

start_sshd ()
{
  local port i real_ssh
  requires ssh
  requires ssh-keygen
  requires nc
  [ -x "$SSHD" ] || skip "$SSHD is not installed (openssh-server)"
  nc -h 2>&1 | grep -q -- '-U' ||
    skip "nc cannot reach Unix sockets (install netcat-openbsd)"
  real_ssh=$(command -v ssh)
  # Privilege separation needs this directory, which the package's
  # service creates at boot.
  [ -d /run/sshd ] || mkdir -p /run/sshd 2>/dev/null ||
    skip "sshd needs /run/sshd, which cannot be made"
  ssh-keygen -q -t ed25519 -N '' -f "$tmp/host_key" </dev/null
  ssh-keygen -q -t ed25519 -N '' -f "$tmp/user_key" </dev/null
  cp "$tmp/user_key.pub" "$tmp/authorized_keys"
  # StrictModes would refuse $tmp's files; CI runs as root.
  cat >"$tmp/sshd_config" <<EOF
HostKey $tmp/host_key
ListenAddress 127.0.0.1
AuthorizedKeysFile $tmp/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PidFile none
EOF
  for i in $(seq 1 10); do
    port=$((20000 + RANDOM % 20000))
    : >"$tmp/sshd.err"
    "$SSHD" -D -e -f "$tmp/sshd_config" -p $port 2>>"$tmp/sshd.err" &
    _pids+=($!)
    _track_server $! sshd
    if wait_for_line "$tmp/sshd.err" "^Server listening on 127.0.0.1 port $port" 10; then
      break
    fi
    kill "${_pids[-1]}" 2>/dev/null || :
    port=
  done
  [ -n "$port" ] || skip "sshd cannot start: $(tail -1 "$tmp/sshd.err")"
  ssh_port=$port
  echo "[127.0.0.1]:$port $(cat "$tmp/host_key.pub")" >"$tmp/known_hosts"
  {
    echo "Host *"
    echo "  Port $port"
    echo "  IdentityFile $tmp/user_key"
    echo "  IdentitiesOnly yes"
    echo "  UserKnownHostsFile $tmp/known_hosts"
    echo "  StrictHostKeyChecking yes"
    echo "  LogLevel ERROR"
    for i in "$@"; do echo "  $i"; done
  } >"$tmp/ssh_config"
  mkdir -p "$tmp/bin"
  cat >"$tmp/bin/ssh" <<EOF
#!/bin/bash
printf '%s\n' "\$*" >>"$tmp/ssh.log"
exec "$real_ssh" -F "$tmp/ssh_config" "\$@"
EOF
  chmod +x "$tmp/bin/ssh"
  PATH=$tmp/bin:$PATH
  export PATH
  ssh -o BatchMode=yes 127.0.0.1 true </dev/null 2>"$tmp/ssh-check.err" ||
    skip "cannot log in to the test's sshd: $(tail -1 "$tmp/ssh-check.err")"
  : >"$tmp/ssh.log"
}

# ssh_sessions: how many ssh sessions (runs that relay with nc) the
# wrapper has logged.
ssh_sessions ()
{
  grep -c ' nc ' "$tmp/ssh.log" || :
}
