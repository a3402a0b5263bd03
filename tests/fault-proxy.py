#!/usr/bin/env python3
# A proxy between an NBD client and server that breaks chosen
# connections on purpose: for the Nth connection it accepts, in one
# direction, it forwards a given number of bytes and then cuts the
# connection (closes both sides), resets it (an RST to the client) or
# stalls it (stops forwarding that way, keeping the sockets open).
# Other connections pass through untouched.  It knows nothing of NBD:
# byte counts are of the stream.  See tests/README.md.
#
#   fault-proxy.py --listen ADDR --upstream ADDR [--fault N:DIR:ACTION:BYTES]...
#                  [--log FILE]
#
# ADDR is unix:PATH or tcp:HOST:PORT (port 0 for --listen: any free port,
# named in the log).  DIR is "down" (server to client) or "up" (client
# to server).  ACTION is cut, reset or stall.  The log (stderr by
# default) has one line per event, flushed at once:
#   listening on ADDR
#   connection N: accepted
#   connection N: upstream ADDR: ERROR      (the client is then closed)
#   connection N: DIR: ACTION after BYTES bytes
#   connection N: closed
import argparse
import os
import socket
import struct
import sys
import threading

log_lock = threading.Lock()
log_file = sys.stderr


def log(msg):
    with log_lock:
        log_file.write(msg + "\n")
        log_file.flush()


def parse_addr(text):
    kind, _, rest = text.partition(":")
    if kind == "unix" and rest:
        return socket.AF_UNIX, rest
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        if host and port.isdigit():
            return socket.AF_INET, (host, int(port))
    raise argparse.ArgumentTypeError(
        "%r: expected unix:PATH or tcp:HOST:PORT" % text)


def parse_fault(text):
    parts = text.split(":")
    if (len(parts) != 4 or not parts[0].isdigit() or int(parts[0]) < 1
            or parts[1] not in ("up", "down")
            or parts[2] not in ("cut", "reset", "stall")
            or not parts[3].isdigit()):
        raise argparse.ArgumentTypeError(
            "%r: expected N:up|down:cut|reset|stall:BYTES" % text)
    return int(parts[0]), parts[1], parts[2], int(parts[3])


def show(family, addr):
    if family == socket.AF_UNIX:
        return "unix:" + addr
    return "tcp:%s:%d" % addr


class Connection:
    def __init__(self, number, client, upstream, faults):
        self.number = number
        self.client = client
        self.upstream = upstream
        self.faults = faults  # direction -> (action, bytes)
        self.lock = threading.Lock()
        self.closed = False

    def close(self, reset=False):
        with self.lock:
            if self.closed:
                return
            self.closed = True
            if reset:
                self.client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            for s in (self.client, self.upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def pump(self, direction, src, dst):
        action, limit = self.faults.get(direction, (None, None))
        done = 0
        try:
            while True:
                want = 65536 if limit is None else min(65536, limit - done)
                if want == 0:
                    log("connection %d: %s: %s after %d bytes"
                        % (self.number, direction, action, done))
                    if action == "stall":
                        return  # the sockets stay open
                    self.close(reset=(action == "reset"))
                    return
                data = src.recv(want)
                if not data:
                    break
                dst.sendall(data)
                done += len(data)
        except OSError:
            pass
        # One side ended: end the other too.
        self.close()

    def run(self):
        threads = [
            threading.Thread(target=self.pump,
                             args=("up", self.client, self.upstream),
                             daemon=True),
            threading.Thread(target=self.pump,
                             args=("down", self.upstream, self.client),
                             daemon=True),
        ]
        for t in threads:
            t.start()
        # A stalled direction's thread ends at once; the other ends
        # when either side closes, and closes both.
        for t in threads:
            t.join()
        self.close()
        log("connection %d: closed" % self.number)


def serve(args):
    family, addr = args.listen
    listener = socket.socket(family, socket.SOCK_STREAM)
    if family == socket.AF_UNIX:
        try:
            os.unlink(addr)
        except FileNotFoundError:
            pass
    else:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(addr)
    listener.listen(64)
    log("listening on %s" % show(family, listener.getsockname()))
    faults = {}
    for number, direction, action, count in args.fault:
        faults.setdefault(number, {})[direction] = (action, count)
    up_family, up_addr = args.upstream
    number = 0
    while True:
        client, _ = listener.accept()
        number += 1
        log("connection %d: accepted" % number)
        upstream = socket.socket(up_family, socket.SOCK_STREAM)
        try:
            upstream.connect(up_addr)
        except OSError as e:
            log("connection %d: upstream %s: %s"
                % (number, show(up_family, up_addr), e.strerror))
            upstream.close()
            client.close()
            continue
        c = Connection(number, client, upstream, faults.get(number, {}))
        threading.Thread(target=c.run, daemon=True).start()


def main():
    global log_file
    p = argparse.ArgumentParser(description="A proxy that breaks chosen "
                                "connections at chosen byte counts.")
    p.add_argument("--listen", type=parse_addr, required=True)
    p.add_argument("--upstream", type=parse_addr, required=True)
    p.add_argument("--fault", type=parse_fault, action="append", default=[],
                   help="N:DIR:ACTION:BYTES")
    p.add_argument("--log", help="log file (default stderr)")
    args = p.parse_args()
    if args.log:
        log_file = open(args.log, "a")
    try:
        serve(args)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
