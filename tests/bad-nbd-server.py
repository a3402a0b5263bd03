#!/usr/bin/env python3
# A small NBD server that breaks the protocol on purpose, one way at a
# time, for the tests of how nbdcp meets a misbehaving server (real
# servers, and nbdkit's filters, tidy most lies before a client sees
# them).  Python 3 standard library only.
#
#   bad-nbd-server.py [--mode=MODE] [--size=BYTES] [--file=PATH]
#                     [--delay=SECONDS] [--chunks=N] [--pidfile=PATH] SOCKET
#
# It listens on the Unix socket SOCKET (which appears only once the
# server accepts connections: it is bound under another name, then
# renamed), speaks the fixed newstyle handshake (NBD_OPT_GO, _INFO,
# _EXPORT_NAME, _LIST, _STRUCTURED_REPLY, _SET/LIST_META_CONTEXT for
# base:allocation and for any qemu:dirty-bitmap:NAME asked for by name)
# and serves READ, WRITE, WRITE_ZEROES, TRIM, FLUSH, BLOCK_STATUS (one
# extent: all data, all dirty) and DISC, to any number of clients, one
# thread each.
#
# The disk: with --file, that file (writable); otherwise --size bytes
# (16 MiB by default) of nbdkit's "pattern" (each 8-byte big-endian
# word holds its own offset), read-only, so `nbdkit pattern size=N`
# serves the same bytes as an independent oracle.
#
# MODE (see MODES below, and tests/README.md) says what it breaks; it
# breaks only transmission, never the handshake, unless the mode says
# otherwise.  A new mode is a Behaviour subclass and a line in MODES.
#
# It ends on SIGTERM, and when its parent dies (PR_SET_PDEATHSIG).

import argparse
import array
import ctypes
import os
import signal
import socket
import struct
import sys
import threading
import time

NBDMAGIC = 0x4E42444D41474943
IHAVEOPT = 0x49484156454F5054
REPLY_MAGIC = 0x0003E889045565A9
REQUEST_MAGIC = 0x25609513
SIMPLE_MAGIC = 0x67446698
STRUCTURED_MAGIC = 0x668E33EF

FLAG_FIXED_NEWSTYLE, FLAG_NO_ZEROES = 1, 2

OPT_EXPORT_NAME, OPT_ABORT, OPT_LIST = 1, 2, 3
OPT_INFO, OPT_GO, OPT_STRUCTURED_REPLY = 6, 7, 8
OPT_LIST_META_CONTEXT, OPT_SET_META_CONTEXT = 9, 10

REP_ACK, REP_SERVER, REP_INFO, REP_META_CONTEXT = 1, 2, 3, 4
REP_ERR_UNSUP, REP_ERR_INVALID = 0x80000001, 0x80000003

INFO_EXPORT = 0

T_HAS_FLAGS, T_READ_ONLY, T_SEND_FLUSH = 1, 2, 4
T_SEND_TRIM, T_SEND_WRITE_ZEROES = 32, 64

CMD_READ, CMD_WRITE, CMD_DISC, CMD_FLUSH = 0, 1, 2, 3
CMD_TRIM, CMD_WRITE_ZEROES, CMD_BLOCK_STATUS = 4, 6, 7

REPLY_FLAG_DONE = 1
REPLY_TYPE_NONE, REPLY_TYPE_OFFSET_DATA = 0, 1
REPLY_TYPE_BLOCK_STATUS = 5

EIO, EINVAL, EPERM = 5, 22, 1

BASE_ALLOCATION = b"base:allocation"
BASE_ALLOCATION_ID = 1
DIRTY_BITMAP = b"qemu:dirty-bitmap:"
DIRTY_BITMAP_ID = 2


def pattern(offset, length):
    """nbdkit's pattern: each 8-byte big-endian word holds its offset."""
    start = offset & ~7
    end = (offset + length + 7) & ~7
    words = array.array("Q", range(start, end, 8))
    if sys.byteorder == "little":
        words.byteswap()
    data = words.tobytes()
    return data[offset - start : offset - start + length]


class Disk:
    def __init__(self, size, path):
        self.lock = threading.Lock()
        self.path = path
        self.fd = os.open(path, os.O_RDWR) if path else -1
        self.size = os.fstat(self.fd).st_size if path else size

    @property
    def read_only(self):
        return self.fd < 0

    def pread(self, offset, length):
        if self.fd < 0:
            return pattern(offset, length)
        data = os.pread(self.fd, length, offset)
        return data + bytes(length - len(data))

    def pwrite(self, offset, data):
        with self.lock:
            os.pwrite(self.fd, data, offset)

    def flush(self):
        if self.fd >= 0:
            os.fsync(self.fd)


class Connection:
    """One client: the handshake's state, and sending to it."""

    def __init__(self, sock, server):
        self.sock = sock
        self.server = server
        self.structured = False
        self.base_allocation = False
        self.dirty_bitmap = None  # the context's name, once set

    def recv(self, n):
        buf = bytearray()
        while len(buf) < n:
            got = self.sock.recv(n - len(buf))
            if not got:
                raise EOFError
            buf += got
        return bytes(buf)

    def send(self, data):
        self.sock.sendall(data)

    def option_reply(self, opt, rtype, data=b""):
        self.send(struct.pack(">QIII", REPLY_MAGIC, opt, rtype, len(data)) + data)

    def simple_reply(self, cookie, error, data=b""):
        return struct.pack(">IIQ", SIMPLE_MAGIC, error, cookie) + data

    def chunk(self, cookie, flags, rtype, payload):
        return (
            struct.pack(">IHHQI", STRUCTURED_MAGIC, flags, rtype, cookie, len(payload))
            + payload
        )

    def data_chunk(self, cookie, offset, data, done):
        return self.chunk(
            cookie,
            REPLY_FLAG_DONE if done else 0,
            REPLY_TYPE_OFFSET_DATA,
            struct.pack(">Q", offset) + data,
        )


class Behaviour:
    """The well-behaved server.  Each mode overrides one thing."""

    def __init__(self, args):
        self.args = args

    def export_size(self, disk):
        return disk.size

    def send_reply(self, conn, data):
        """Every transmission reply goes out through here."""
        conn.send(data)

    def read_reply(self, conn, cookie, offset, length, data):
        """The reply to a good read of DATA, or None to send nothing."""
        if conn.structured:
            return conn.data_chunk(cookie, offset, data, True)
        return conn.simple_reply(cookie, 0, data)

    def block_status_reply(self, conn, cookie, length):
        """The reply to a block status request: one extent of LENGTH
        for each context (data; dirty), or None to send nothing."""
        payloads = []
        if conn.base_allocation:
            payloads.append(struct.pack(">III", BASE_ALLOCATION_ID, length, 0))
        if conn.dirty_bitmap:
            payloads.append(struct.pack(">III", DIRTY_BITMAP_ID, length, 1))
        return b"".join(
            conn.chunk(
                cookie,
                REPLY_FLAG_DONE if i == len(payloads) - 1 else 0,
                REPLY_TYPE_BLOCK_STATUS,
                payload,
            )
            for i, payload in enumerate(payloads)
        )


class Trickle(Behaviour):
    """Every transmission reply one byte at a time, --delay apart."""

    def send_reply(self, conn, data):
        for i in range(len(data)):
            conn.send(data[i : i + 1])
            time.sleep(self.args.delay)


class Silent(Behaviour):
    """Reads are never answered (other commands are)."""

    def read_reply(self, conn, cookie, offset, length, data):
        return None


class SilentBlockStatus(Behaviour):
    """Block status requests are never answered (other commands are)."""

    def block_status_reply(self, conn, cookie, length):
        return None


class HalfRead(Behaviour):
    """A structured read reply: one data chunk for the first half of the
    request, flagged DONE (needs structured replies)."""

    def read_reply(self, conn, cookie, offset, length, data):
        if not conn.structured or length < 2:
            return super().read_reply(conn, cookie, offset, length, data)
        half = length // 2
        return conn.data_chunk(cookie, offset, data[:half], True)


class OverlapRead(Behaviour):
    """A structured read reply of two data chunks that overlap, whose
    lengths add up to the request's: [0, L/2) and [L/4, 3L/4)."""

    def read_reply(self, conn, cookie, offset, length, data):
        if not conn.structured or length < 4:
            return super().read_reply(conn, cookie, offset, length, data)
        q = length // 4
        return conn.data_chunk(cookie, offset, data[: 2 * q], False) + conn.data_chunk(
            cookie, offset + q, data[q : length - q], True
        )


class ShuffledRead(Behaviour):
    """A structured read reply that covers the request exactly once, in
    --chunks pieces (8 by default) sent out of order: the odd-numbered
    pieces first, then the even-numbered ones.  Not a fault: the
    protocol allows it; a client may refuse many pieces out of order."""

    def pieces(self):
        n = self.args.chunks
        return n, list(range(1, n, 2)) + list(range(0, n, 2))

    def read_reply(self, conn, cookie, offset, length, data):
        n, order = self.pieces()
        if not conn.structured or length < n:
            return super().read_reply(conn, cookie, offset, length, data)
        bounds = [length * i // n for i in range(n + 1)]
        return b"".join(
            conn.data_chunk(
                cookie,
                offset + bounds[i],
                data[bounds[i] : bounds[i + 1]],
                k == n - 1,
            )
            for k, i in enumerate(order)
        )


class BridgedRead(ShuffledRead):
    """A structured read reply that covers the request exactly once, in
    9 pieces sent in the order 1 3 5 7 4 0 2 6 8: four pieces kept
    ahead, then one that joins the second and the third of them while
    the fourth is still kept.  Not a fault."""

    def pieces(self):
        return 9, [1, 3, 5, 7, 4, 0, 2, 6, 8]


class BadCookie(Behaviour):
    """Read replies carry a cookie (handle) that no request used."""

    def read_reply(self, conn, cookie, offset, length, data):
        return super().read_reply(conn, cookie ^ 0x5A5A000000000000, offset, length, data)


class Huge(Behaviour):
    """The export claims 2^63-1 bytes."""

    def export_size(self, disk):
        return (1 << 63) - 1


MODES = {
    "good": Behaviour,
    "trickle": Trickle,
    "silent": Silent,
    "silent-block-status": SilentBlockStatus,
    "half-read": HalfRead,
    "overlap-read": OverlapRead,
    "shuffled-read": ShuffledRead,
    "bridged-read": BridgedRead,
    "bad-cookie": BadCookie,
    "huge": Huge,
}


def parse_names(data, pos):
    (n,) = struct.unpack_from(">I", data, pos)
    return data[pos + 4 : pos + 4 + n], pos + 4 + n


def meta_context(conn, opt, data):
    """LIST/SET_META_CONTEXT: base:allocation exists, and so does any
    qemu:dirty-bitmap:NAME that is asked for by name."""
    name, pos = parse_names(data, 0)
    (nq,) = struct.unpack_from(">I", data, pos)
    pos += 4
    queries = []
    for _ in range(nq):
        q, pos = parse_names(data, pos)
        queries.append(q)
    if opt == OPT_SET_META_CONTEXT:
        if not conn.structured:
            conn.option_reply(opt, REP_ERR_INVALID)
            return
        conn.base_allocation = BASE_ALLOCATION in queries
        conn.dirty_bitmap = next(
            (q for q in queries if q.startswith(DIRTY_BITMAP) and q != DIRTY_BITMAP), None
        )
    if (opt == OPT_LIST_META_CONTEXT and (not queries or b"base:" in queries)) or (
        BASE_ALLOCATION in queries
    ):
        conn.option_reply(
            opt, REP_META_CONTEXT, struct.pack(">I", BASE_ALLOCATION_ID) + BASE_ALLOCATION
        )
    for q in queries:
        if q.startswith(DIRTY_BITMAP) and q != DIRTY_BITMAP:
            conn.option_reply(opt, REP_META_CONTEXT, struct.pack(">I", DIRTY_BITMAP_ID) + q)
    conn.option_reply(opt, REP_ACK)


def tflags(disk):
    f = T_HAS_FLAGS | T_SEND_FLUSH
    if disk.read_only:
        f |= T_READ_ONLY
    else:
        f |= T_SEND_TRIM | T_SEND_WRITE_ZEROES
    return f


def handshake(conn, behaviour, disk):
    """The option haggling.  True when transmission starts."""
    conn.send(struct.pack(">QQH", NBDMAGIC, IHAVEOPT, FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES))
    (cflags,) = struct.unpack(">I", conn.recv(4))
    size = behaviour.export_size(disk)
    while True:
        magic, opt, length = struct.unpack(">QII", conn.recv(16))
        if magic != IHAVEOPT:
            return False
        data = conn.recv(length)
        if opt == OPT_EXPORT_NAME:
            reply = struct.pack(">QH", size, tflags(disk))
            if not cflags & FLAG_NO_ZEROES:
                reply += bytes(124)
            conn.send(reply)
            return True
        if opt == OPT_ABORT:
            conn.option_reply(opt, REP_ACK)
            return False
        if opt == OPT_LIST:
            conn.option_reply(opt, REP_SERVER, struct.pack(">I", 0))
            conn.option_reply(opt, REP_ACK)
        elif opt in (OPT_INFO, OPT_GO):
            info = struct.pack(">HQH", INFO_EXPORT, size, tflags(disk))
            conn.option_reply(opt, REP_INFO, info)
            conn.option_reply(opt, REP_ACK)
            if opt == OPT_GO:
                return True
        elif opt == OPT_STRUCTURED_REPLY:
            conn.structured = True
            conn.option_reply(opt, REP_ACK)
        elif opt in (OPT_LIST_META_CONTEXT, OPT_SET_META_CONTEXT):
            meta_context(conn, opt, data)
        else:
            conn.option_reply(opt, REP_ERR_UNSUP)


def simple_or_done(conn, cookie, error):
    """The reply of a command with no data."""
    if conn.structured:
        payload = b""
        if error:
            # NBD_REPLY_TYPE_ERROR: error, empty message.
            return conn.chunk(cookie, REPLY_FLAG_DONE, 0x8001, struct.pack(">IH", error, 0))
        return conn.chunk(cookie, REPLY_FLAG_DONE, REPLY_TYPE_NONE, payload)
    return conn.simple_reply(cookie, error)


def command(conn, behaviour, disk, ctype, cookie, offset, length):
    """One command's reply (bytes), or None for no reply."""
    size = behaviour.export_size(disk)
    if ctype in (CMD_READ, CMD_WRITE, CMD_TRIM, CMD_WRITE_ZEROES, CMD_BLOCK_STATUS):
        if offset + length > size:
            return simple_or_done(conn, cookie, EINVAL)
    if ctype == CMD_READ:
        return behaviour.read_reply(conn, cookie, offset, length, disk.pread(offset, length))
    if ctype in (CMD_WRITE, CMD_TRIM, CMD_WRITE_ZEROES):
        if disk.read_only:
            return simple_or_done(conn, cookie, EPERM)
        if ctype == CMD_WRITE_ZEROES:
            disk.pwrite(offset, bytes(length))
        return simple_or_done(conn, cookie, 0)
    if ctype == CMD_FLUSH:
        disk.flush()
        return simple_or_done(conn, cookie, 0)
    if ctype == CMD_BLOCK_STATUS and (conn.base_allocation or conn.dirty_bitmap):
        return behaviour.block_status_reply(conn, cookie, length)
    return simple_or_done(conn, cookie, EINVAL)


def transmission(conn, behaviour, disk):
    while True:
        magic, flags, ctype, cookie, offset, length = struct.unpack(
            ">IHHQQI", conn.recv(28)
        )
        if magic != REQUEST_MAGIC:
            return
        data = conn.recv(length) if ctype == CMD_WRITE else b""
        if ctype == CMD_DISC:
            return
        if ctype == CMD_WRITE and not disk.read_only:
            disk.pwrite(offset, data)
        reply = command(conn, behaviour, disk, ctype, cookie, offset, length)
        if reply is not None:
            behaviour.send_reply(conn, reply)


def serve(sock, behaviour, disk):
    conn = Connection(sock, None)
    try:
        if handshake(conn, behaviour, disk):
            transmission(conn, behaviour, disk)
    except (EOFError, ConnectionError, BrokenPipeError):
        pass
    finally:
        sock.close()


def die_with_parent():
    """SIGTERM when the parent dies (Linux); and if it already has."""
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        sys.exit(0)


def main():
    p = argparse.ArgumentParser(description="An NBD server that misbehaves on purpose.")
    p.add_argument("socket")
    p.add_argument("--mode", default="good", choices=sorted(MODES))
    p.add_argument("--size", type=int, default=16 << 20)
    p.add_argument("--file")
    p.add_argument("--delay", type=float, default=1.0, help="trickle: seconds per byte")
    p.add_argument("--chunks", type=int, default=8, help="shuffled-read: pieces")
    p.add_argument("--pidfile")
    args = p.parse_args()

    die_with_parent()
    disk = Disk(args.size, args.file)
    behaviour = MODES[args.mode](args)
    tmp = args.socket + ".tmp"

    def stop(signum, frame):
        for path in (args.socket, tmp):
            try:
                os.unlink(path)
            except OSError:
                pass
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(tmp)
    except OSError:
        pass
    listener.bind(tmp)
    listener.listen(16)
    os.rename(tmp, args.socket)  # ready: the socket appears listening
    if args.pidfile:
        with open(args.pidfile + ".tmp", "w") as f:
            f.write("%d\n" % os.getpid())
        os.rename(args.pidfile + ".tmp", args.pidfile)
    print("bad-nbd-server: mode %s on %s" % (args.mode, args.socket), file=sys.stderr)
    sys.stderr.flush()
    while True:
        sock, _ = listener.accept()
        threading.Thread(target=serve, args=(sock, behaviour, disk), daemon=True).start()


if __name__ == "__main__":
    main()
