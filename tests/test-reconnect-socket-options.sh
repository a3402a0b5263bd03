#!/bin/bash
# A connection that --retry makes again gets every socket option the
# first one got: TCP keep-alive (SO_KEEPALIVE, TCP_KEEPIDLE,
# TCP_KEEPINTVL, TCP_KEEPCNT, TCP_USER_TIMEOUT) on a TCP source, the
# larger send buffer on a Unix-socket destination.  tests/fault-proxy.py
# cuts each side's first connection in mid-copy; strace records every
# connect and setsockopt of nbdcp's threads, and for each connection
# to a proxy the options set on its socket must be those of the first
# (which must have them).  The copy is compared with the source.
# Servers: qemu-nbd, which outlives a client that vanishes mid-reply
# (nbdkit 1.32 aborts).
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires strace
requires "$QEMU_NBD"
# LeakSanitizer cannot work under ptrace (strace).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

size=$((8 * 1024 * 1024))
head -c $size /dev/urandom >"$tmp/data"
truncate -s $size "$tmp/dst.img"
start_qemu_nbd src -r -t -e 4 -f raw "$tmp/data"
start_qemu_nbd dst -t -e 4 -f raw "$tmp/dst.img"

# The source through a proxy on a TCP port; its first connection is cut
# after 1 MB from the server, the destination's after 2 MB to it.
start_fault_proxy tsrc "unix:$tmp/src.sock" --listen tcp:127.0.0.1:0 \
  --fault 1:down:cut:1000000
port=$(sed -n 's/^listening on tcp:127\.0\.0\.1:\([0-9]*\)$/\1/p' "$tmp/tsrc.log")
[ -n "$port" ] || { cat "$tmp/tsrc.log" >&2; fail "the TCP proxy names no port"; }
start_fault_proxy udst "unix:$tmp/dst.sock" --fault 1:up:cut:2000000

mkdir "$tmp/trace"
strace -f -ff -qq -o "$tmp/trace/t" -e trace=connect,setsockopt \
  "$NBDCP" --retry=3 --retry-delay=0.2 -C 1 -T 1 --request-size=256K \
  "nbd://127.0.0.1:$port" "$(uri_of "$tmp/udst.sock")" 2>"$tmp/err" ||
  { cat "$tmp/err" >&2; fail "the copy across two cut connections failed"; }
cmp "$tmp/data" "$tmp/dst.img" || fail "the copy across two cut connections differs"
grep -q 'connection 1: down: cut after' "$tmp/tsrc.log" ||
  { cat "$tmp/tsrc.log" >&2; fail "the source's first connection was not cut"; }
grep -q 'connection 1: up: cut after' "$tmp/udst.log" ||
  { cat "$tmp/udst.log" >&2; fail "the destination's first connection was not cut"; }

# In each thread's trace, a connect to ADDRESS starts a connection on
# its descriptor; the setsockopt calls on that descriptor after it are
# the connection's options.
python3 - "$tmp/trace" "htons($port)" "$tmp/udst.sock" <<'PY'
import os, re, sys
tdir, tcp_mark, unix_path = sys.argv[1:]
conns = {"tcp": [], "unix": []}
for name in sorted(os.listdir(tdir)):
    current = {}
    for line in open(os.path.join(tdir, name)):
        m = re.match(r'connect\((\d+), (.*)', line)
        if m:
            fd, rest = m.groups()
            kind = ("tcp" if tcp_mark in rest else
                    "unix" if '"%s"' % unix_path in rest else None)
            current.pop(fd, None)
            if kind:
                opts = []
                conns[kind].append(opts)
                current[fd] = opts
            continue
        m = re.match(r'setsockopt\((\d+), (\w+), (\w+), (\[\d+\])', line)
        if m and m.group(1) in current:
            current[m.group(1)].append(" ".join(m.groups()[1:]))
want = {"tcp": "SO_KEEPALIVE", "unix": "SO_SNDBUF"}
ok = True
for kind, lst in conns.items():
    print("%s: %d connections; options of each: %s"
          % (kind, len(lst), [sorted(o) for o in lst]))
    if len(lst) < 2:
        print("FAIL: %s: no connection made again" % kind); ok = False
        continue
    if not any(want[kind] in o for o in lst[0]):
        print("FAIL: %s: the first connection has no %s" % (kind, want[kind])); ok = False
    for i, o in enumerate(lst[1:], 2):
        if sorted(o) != sorted(lst[0]):
            print("FAIL: %s: connection %d has %s, the first %s"
                  % (kind, i, sorted(o), sorted(lst[0]))); ok = False
sys.exit(0 if ok else 1)
PY
[ $? -eq 0 ] || fail "a connection made again lacks an option of the first"
exit 0
