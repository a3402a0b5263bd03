#!/bin/bash
# Workload "ssh": what nbd+ssh:// costs.  The same copy (nbdkit
# sparse-random SIZE percent=100 on 127.0.0.1:PORT -> null:) by nbdcp
# over TCP, by nbdcopy over TCP, and by nbdcp through ssh to this host
# (its own sshd on a loopback port, as tests/sshd.sh starts it) with
# nc localhost PORT, with 1 and 4 connections, each connection its own
# ssh session or all sharing one ControlMaster.  Prints a Markdown
# table: wall time (best of RUNS), and the CPU time of nbdcp and of
# the ssh clients (nbdcp's children) together.
#   bench/ssh.sh [SIZE [RUNS]]      (default 1G 3)
# Needs nbdkit, sshd (openssh-server), nc (netcat-openbsd), nbdcopy.
set -e
size=${1:-1G}
runs=${2:-3}
nbdcp=${NBDCP:-$PWD/build/default/copy/nbdcp}
tmp=$(mktemp -d /tmp/nbdcp-bench-ssh.XXXXXX)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; ssh -O exit 127.0.0.1 >/dev/null 2>&1; rm -rf "$tmp"' EXIT

mkdir -p /run/sshd
ssh-keygen -q -t ed25519 -N '' -f "$tmp/host_key" </dev/null
ssh-keygen -q -t ed25519 -N '' -f "$tmp/user_key" </dev/null
cp "$tmp/user_key.pub" "$tmp/authorized_keys"
cat >"$tmp/sshd_config" <<EOF
HostKey $tmp/host_key
ListenAddress 127.0.0.1
AuthorizedKeysFile $tmp/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin yes
PasswordAuthentication no
PidFile none
EOF
sport=$((20000 + RANDOM % 20000))
/usr/sbin/sshd -D -f "$tmp/sshd_config" -p $sport 2>"$tmp/sshd.err" &
pids+=($!)
nport=$((20000 + RANDOM % 20000))
nbdkit -f -r -i 127.0.0.1 -p $nport sparse-random "$size" percent=100 seed=1 &
pids+=($!)
echo "[127.0.0.1]:$sport $(cat "$tmp/host_key.pub")" >"$tmp/known_hosts"
write_config ()
{
  {
    echo "Host *"
    echo "  Port $sport"
    echo "  IdentityFile $tmp/user_key"
    echo "  UserKnownHostsFile $tmp/known_hosts"
    echo "  LogLevel ERROR"
    if [ "$1" = cm ]; then
      echo "  ControlMaster auto"
      echo "  ControlPath $tmp/cm-%r@%h:%p"
      echo "  ControlPersist 60"
    fi
  } >"$tmp/ssh_config"
}
mkdir "$tmp/bin"
real_ssh=$(command -v ssh)
printf '#!/bin/bash\nexec %s -F %s "$@"\n' "$real_ssh" "$tmp/ssh_config" \
  >"$tmp/bin/ssh"
chmod +x "$tmp/bin/ssh"
export PATH=$tmp/bin:$PATH
write_config plain
sleep 1 # sshd and nbdkit: bench only, not a test

# row NAME CMD...: best wall time and the CPU (user+sys of the command
# and its children, the ssh clients) of that run, out of RUNS.
row ()
{
  local name=$1 best= cpu= i t c
  shift
  for i in $(seq 1 "$runs"); do
    /usr/bin/time -f '%e %U %S' -o "$tmp/t" "$@" >/dev/null
    read -r t u s <"$tmp/t"
    c=$(echo "$u + $s" | bc)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then
      best=$t cpu=$c
    fi
  done
  echo "| $name | $best | $cpu |"
}

tcp="nbd://127.0.0.1:$nport/"
ssh_uri="nbd+ssh://127.0.0.1:$nport/"
echo "| copy of sparse-random $size (all data) -> null: | wall s | CPU s (nbdcp + ssh) |"
echo "| --- | ---: | ---: |"
for c in 1 4; do
  row "nbdcp TCP -C $c" "$nbdcp" -C $c -T $c "$tcp" null:
  row "nbdcopy TCP -C $c" nbdcopy -C $c -T $c "$tcp" null:
  row "nbdcp nbd+ssh -C $c (one session each)" "$nbdcp" -C $c -T $c "$ssh_uri" null:
done
write_config cm
ssh -MNf 127.0.0.1
for c in 1 4; do
  row "nbdcp nbd+ssh -C $c (ControlMaster)" "$nbdcp" -C $c -T $c "$ssh_uri" null:
done
echo "(ControlMaster rows: the master ssh's CPU is not counted: it runs apart)"
