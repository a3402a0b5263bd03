#!/bin/bash
# A stream on a socket (standard input or output a Unix socket, read
# with recv and written with send): the data arrives, or is taken, in
# uneven pieces with pauses, so that reads and writes end part way
# through a request; the copy is whole (cmp), both ways.
. "${srcdir:-.}/tests/functions.sh"
requires python3
requires cmp

head -c 3000000 /dev/urandom >"$tmp/src.raw"

python3 - "$NBDCP" "$tmp" <<'PY' || fail "socket streams: see above"
import socket, subprocess, sys, time
nbdcp, tmp = sys.argv[1:3]
data = open(tmp + "/src.raw", "rb").read()
sizes = [300000, 1000, 250000, 77777, 400000, 12345]

# Source: nbdcp reads standard input, a socket we feed piece by piece.
a, b = socket.socketpair()
p = subprocess.Popen([nbdcp, "-", tmp + "/from-socket.raw"], stdin=b)
b.close()
pos, k = 0, 0
while pos < len(data):
    a.sendall(data[pos:pos + sizes[k % len(sizes)]])
    pos += sizes[k % len(sizes)]
    k += 1
    time.sleep(0.05)
a.close()
assert p.wait(timeout=120) == 0, "socket source: nbdcp failed"

# Destination: nbdcp writes standard output, a socket we read slowly.
a, b = socket.socketpair()
p = subprocess.Popen([nbdcp, tmp + "/src.raw", "-"], stdout=b)
b.close()
got, k = [], 0
while True:
    piece = a.recv(sizes[k % len(sizes)])
    if not piece:
        break
    got.append(piece)
    k += 1
    time.sleep(0.02)
assert p.wait(timeout=120) == 0, "socket destination: nbdcp failed"
open(tmp + "/to-socket.raw", "wb").write(b"".join(got))
PY
cmp "$tmp/src.raw" "$tmp/from-socket.raw" || fail "socket source: copy differs"
cmp "$tmp/src.raw" "$tmp/to-socket.raw" || fail "socket destination: copy differs"
exit 0
