#!/usr/bin/env python3
# fault-matrix.py: the fault matrix's table, generator and runner
# (tests/test-fault-matrix.sh runs it).  Each case is one row of the
# cross product of
#   OPERATION  the request that fails: connect (the destination's
#              handshake), extents (the source's block status), read
#              (the source's; with --verify also the destination's
#              read-back), write, zero, flush (the destination's);
#   POINT      where in the copy: the first such request, mid (the
#              first one in the second 128 MiB segment), all (every
#              connection) or second (the second connection only),
#              final (the last flush), checkpoint
#              (a --checkpoint=128M flush), after-checkpoint (the first
#              write after a checkpoint flush), verify (the read-back);
#   WAY        error (the server answers EIO) or die (the server kills
#              itself with SIGKILL at that very request: no reply, every
#              connection broken, its unflushed writes lost);
#   FEATURES   plain, --retry, --resume, --blkhash, --verify, --bitmap,
#              --retry --blkhash, --resume --retry, --bitmap --retry;
# pruned by prune() (the rules are written there).  The servers are
# nbdkit's sh plugin running a script written here (FAULT_SCRIPT): it
# serves a file, fails or dies at the chosen request and, as the
# destination, keeps every write and zero aside until the connection
# that sent it flushes: the file holds exactly what was flushed, so a
# destination that dies (or is stopped) loses what was not.  A server
# that died comes back on the same socket when the features include
# --retry.  The oracles, independent of nbdcp (expect(), check_*()):
#   - the exit status: 0 only where the feature promises to survive
#     (--retry, and a server that died and came back; or a connection
#     that could not be made while another was), else 1; never a
#     signal or a hang;
#   - the message: the operation and side, and for an error reply the
#     very offset and length the server failed;
#   - on exit 0 the destination file equals the source (cmp), the
#     --blkhash line equals blkhash-ref.py's, --stats=json is "ok": true
#     with data+zero+skipped+resumed = size; on exit 1 "ok": false and
#     no checksum printed;
#   - after a failed --resume copy, every segment the journal lists is
#     in the file (which holds only flushed data), and the same command
#     against healthy servers then succeeds, leaves the destination
#     exact and removes the journal.
#
# Usage: fault-matrix.py [--list] [--case NAME] [--budget SECONDS]
#                        [--jobs N]
# Environment: NBDCP, NBDKIT, QEMU_NBD, QEMU_IMG, TMPDIR; CASE (a case
# name such as write/mid/die/retry+blkhash, or a prefix of names:
# "write/mid" runs the cases that start so), FAULT_MATRIX_BUDGET
# (seconds, default 90: past it no case starts, and the run says how
# many were left out; each run starts at another place in the table;
# 0: no limit), FAULT_MATRIX_JOBS (cases at once, default 2).
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

MIB = 1024 * 1024
SEGMENT = 128 * MIB
SIZE = 260 * MIB  # two full segments and a short third
HERE = os.path.dirname(os.path.abspath(__file__))
NBDCP = os.environ.get("NBDCP", "nbdcp")
NBDKIT = os.environ.get("NBDKIT", "nbdkit")
QEMU_NBD = os.environ.get("QEMU_NBD", "qemu-nbd")
QEMU_IMG = os.environ.get("QEMU_IMG", "qemu-img")
NBDCP_TIMEOUT = 90  # a copy of a few MiB taking this long has hung

# ------------------------------------------------------------ the table

OPERATIONS = {
    # operation: (side, points)
    "connect": ("dst", ["all", "second"]),
    "extents": ("src", ["first", "mid"]),
    "read": ("src", ["first", "mid", "verify"]),
    "write": ("dst", ["first", "mid", "after-checkpoint"]),
    "zero": ("dst", ["first", "mid"]),
    "flush": ("dst", ["final", "checkpoint"]),
}
WAYS = ["error", "die"]
FEATURES = {
    "plain": [],
    "retry": ["--retry=5", "--retry-delay=0.2"],
    "resume": ["--resume=@JOURNAL@"],
    "blkhash": ["--blkhash"],
    "verify": ["--verify"],
    "bitmap": ["--bitmap=b0"],
    "retry+blkhash": ["--retry=5", "--retry-delay=0.2", "--blkhash"],
    "resume+retry": ["--resume=@JOURNAL@", "--retry=5", "--retry-delay=0.2"],
    "bitmap+retry": ["--bitmap=b0", "--retry=5", "--retry-delay=0.2"],
}
COMMON = ["-C", "2", "-T", "2", "--request-size=2M", "--stats=json"]

# Cases whose failure is a known nbdcp defect, not yet fixed: the case
# stays in the table and runs; it is reported as a known failure (and
# does not fail the run), and if it starts passing the run says so.
KNOWN_FAILURES = {
}


def prune(op, point, way, features):
    """Why the combination is meaningless (a string), or None."""
    if point in ("checkpoint", "after-checkpoint") and not (
            "retry" in features or "resume" in features):
        return "--checkpoint only acts with --retry or --resume"
    if point == "verify" and features != "verify":
        return "only --verify reads the destination back"
    if features in ("blkhash", "verify") and point not in (
            "first", "all", "final", "verify"):
        return ("without --retry any fault fails a --blkhash or --verify "
                "copy (no checksum printed or checked), wherever it falls: "
                "a plain copy is crossed with every point, these with the "
                "first")
    if way == "error" and "+" in features and "retry" in features:
        return ("an error reply is never retried: --retry's pairs would "
                "repeat the error rows of --retry, --resume and --bitmap")
    if features.startswith("bitmap") and OPERATIONS[op][0] == "src":
        return ("the --bitmap source is qemu-nbd (nbdkit serves no dirty "
                "bitmap): no fault can be placed in it")
    return None


def cases():
    out = []
    for features in FEATURES:
        for op, (side, points) in OPERATIONS.items():
            for point in points:
                for way in WAYS:
                    if prune(op, point, way, features) is None:
                        out.append({"op": op, "point": point, "way": way,
                                    "features": features,
                                    "side": "dst" if point == "verify" else side,
                                    "name": "%s/%s/%s/%s" % (op, point, way,
                                                             features)})
    return out


def expect(case):
    """What must happen: (the exit statuses allowed, whether the copy
    survives by reconnecting)."""
    retry = "retry" in case["features"]
    if case["op"] == "connect":
        if case["point"] == "all":
            # Not a reconnection: the copy cannot start.
            return {1}, False
        if case["way"] == "error":
            # A connection that cannot be made is dropped, the copy goes
            # on with the others (nbd_connect.c: fatal only if none works).
            return {0}, False
        # The server dies at the second handshake: whether the first was
        # complete by then is timing.  If it was, --retry reconnects it.
        return ({0, 1} if retry else {1}), retry
    if case["way"] == "die" and retry:
        # A broken connection is made again and the copy goes on.
        return {0}, True
    return {1}, False


# ------------------------------------------------------------ the servers

# The fault server, for nbdkit's sh plugin.  @...@ are filled in.  All
# requests are serialized, so the state files need no locks.  As the
# destination, a connection's writes and zeroes wait in its own
# directory (named by the server's pid: a server started again does
# not see them) and reach the file in order when it flushes.
FAULT_SCRIPT = r'''#!/bin/sh
img='@IMG@' state='@STATE@' role=@ROLE@ fop=@OP@ point=@POINT@ way=@WAY@
# fire OP OFFSET LENGTH: whether this request is the one to fail; if
# so, fail it (error) or kill the server (die) and say what it was.
fire () {
  [ "$1" = "$fop" ] || return 0
  case $point in
  mid) [ "$2" -ge 134217728 ] || return 0 ;;
  second) n=0; [ -e "$state/opens" ] && read -r n <"$state/opens"
          n=$((n + 1)); echo $n >"$state/opens"; [ $n -ge 2 ] || return 0 ;;
  after-checkpoint) [ -e "$state/flushed" ] || return 0 ;;
  esac
  if [ $point = all ]; then mkdir -p "$state/fired"
  else mkdir "$state/fired" 2>/dev/null || return 0; fi
  echo "$1 $2 $3" >"$state/fired/what"
  if [ $way = die ]; then
    kill -9 $PPID
    exit 1
  fi
  echo "EIO injected $1 failure" >&2
  exit 1
}
case "$1" in
thread_model) echo serialize_all_requests ;;
get_size) echo @SIZE@ ;;
open)
  fire connect 0 0
  d="$state/pending.$PPID.$(date +%s%N)" && mkdir "$d" && echo 0 >"$d/seq" &&
    echo "$d" ;;
close) ;;
can_extents) [ $role = src ] || exit 3 ;;
can_write | can_zero | can_trim | can_flush) [ $role = dst ] || exit 3 ;;
can_multi_conn) exit 3 ;;
pread)
  fire read "$4" "$3"
  exec dd if="$img" iflag=skip_bytes,count_bytes skip="$4" count="$3" \
    bs=1M status=none ;;
extents)
  fire extents "$4" "$3"
  exec awk -v o="$4" -v l="$3" '$1 + $2 > o && $1 < o + l' "$img.extents" ;;
pwrite | zero | trim)
  op=$1; [ $op = pwrite ] && op=write; [ $op = trim ] && op=zero
  fire $op "$4" "$3"
  read -r n <"$2/seq"; n=$((n + 1)); echo $n >"$2/seq"
  if [ $op = write ]; then exec cat >"$2/$n.$4.w"; fi
  : >"$2/$n.$4.$3" ;;
flush)
  fire flush 0 0
  @PYTHON@ '@RUNNER@' --apply "$2" "$img" && : >"$state/flushed" ;;
*) exit 2 ;;
esac
'''


def punch_hole(fd, offset, length):
    """fallocate(PUNCH_HOLE | KEEP_SIZE): 0 if done."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                               ctypes.c_int64]
    return libc.fallocate(fd, 3, offset, length)


def apply_pending(pending, img):
    """A flush of the fault server: the connection's writes ("N.OFFSET.w",
    the data) and zeroes ("N.OFFSET.LENGTH", empty) in PENDING reach the
    file IMG in the order they were sent, and are forgotten."""
    names = [n for n in os.listdir(pending) if n != "seq"]
    names.sort(key=lambda n: int(n.split(".")[0]))
    fd = os.open(img, os.O_WRONLY)
    try:
        for n in names:
            f = n.split(".")
            path = os.path.join(pending, n)
            if f[2] == "w":
                with open(path, "rb") as w:
                    os.pwrite(fd, w.read(), int(f[1]))
            elif punch_hole(fd, int(f[1]), int(f[2])) != 0:
                off, length = int(f[1]), int(f[2])
                while length > 0:
                    k = min(length, 16 * MIB)
                    os.pwrite(fd, bytes(k), off)
                    off += k
                    length -= k
            os.unlink(path)
    finally:
        os.close(fd)


class Failed(Exception):
    pass


def listening(sock, pid):
    """A server started with a pid file listens on SOCK once PID holds
    its number."""
    return os.path.exists(sock) and os.path.exists(pid) and \
        os.path.getsize(pid) > 0


class Server:
    def __init__(self, tmp, name, argv):
        self.sock = os.path.join(tmp, name + ".sock")
        self.pid = os.path.join(tmp, name + ".pid")
        self.err = os.path.join(tmp, name + ".err")
        self.name = name
        self.argv = argv
        self.proc = None

    def start(self, argv=None):
        argv = argv or self.argv
        for path in (self.sock, self.pid):
            if os.path.exists(path):
                os.unlink(path)
        if argv[0] == "qemu-nbd":
            full = [QEMU_NBD, "-k", self.sock, "--pid-file", self.pid] + \
                argv[1:]
        else:
            full = [NBDKIT, "-f", "--exit-with-parent", "-U", self.sock,
                    "-P", self.pid] + argv
        with open(self.err, "ab") as err:
            self.proc = subprocess.Popen(full, stdout=subprocess.DEVNULL,
                                         stderr=err)
        # Both servers write the pid file after listen(2); the socket
        # file appears at bind(2), when a connection is still refused.
        deadline = time.monotonic() + 60
        while not listening(self.sock, self.pid):
            if self.proc.poll() is not None:
                raise Failed("server %s exited at start: %s" %
                             (self.name, open(self.err).read()[-500:]))
            if time.monotonic() > deadline:
                raise Failed("server %s did not start" % self.name)
            time.sleep(0.01)

    def uri(self):
        return "nbd+unix:///?socket=" + self.sock

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.proc:
            self.proc.wait()


def fault_server(tmp, name, role, img, case, faulty):
    """nbdkit's sh plugin serving IMG as ROLE, with CASE's fault when
    FAULTY (otherwise none).  Its healthy twin (healthy_argv) is what
    comes back after it died."""
    state = os.path.join(tmp, name + ".state")
    os.makedirs(state, exist_ok=True)
    argvs = []
    for bad in (faulty, False):
        fill = {"@IMG@": img, "@STATE@": state, "@ROLE@": role,
                "@SIZE@": str(SIZE), "@PYTHON@": sys.executable,
                "@RUNNER@": os.path.abspath(__file__),
                "@OP@": case["op"] if bad else "none",
                "@POINT@": case["point"], "@WAY@": case["way"]}
        text = FAULT_SCRIPT
        for k, v in fill.items():
            text = text.replace(k, v)
        script = os.path.join(tmp, "%s-%s.sh" % (name, "fault" if bad else "ok"))
        with open(script, "w") as f:
            f.write(text)
        os.chmod(script, 0o755)
        argvs.append((["-r"] if role == "src" else []) + ["sh", script])
    s = Server(tmp, name, argvs[0])
    s.healthy_argv = argvs[1]
    return s, state


# ------------------------------------------------------------ the disks


def write_at(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def pseudo_random(n, seed):
    """N bytes that are not zero and differ by seed (cheap to make)."""
    import hashlib
    block = b"".join(hashlib.sha256(b"%d-%d" % (seed, i)).digest()
                     for i in range(4096))  # 128 KiB
    return (block * (n // len(block) + 1))[:n]


# The source's data extents (offset, length): at both ends of every
# segment (a copy broken early in a segment has data left to hash
# again at its end); the rest is holes.
DATA = [(1 * MIB, 4 * MIB), (120 * MIB, 4 * MIB), (130 * MIB, 4 * MIB),
        (250 * MIB, 4 * MIB), (257 * MIB, 2 * MIB),
        (259 * MIB + 512 * 1024, 512 * 1024)]
# Garbage in the destination's first state, where the source has holes,
# so that a zero request never sent shows.
GARBAGE = [64 * MIB, 200 * MIB]


def new_disk(path, patches):
    """A sparse SIZE-byte file holding PATCHES, (offset, bytes) pairs."""
    with open(path, "wb") as f:
        f.truncate(SIZE)
        for off, data in patches:
            f.seek(off)
            f.write(data)


def make_fixtures(work):
    """The source file and its extents, the destination's first state,
    and the --bitmap source and what the destination must hold after
    it was copied."""
    fx = {}
    src = os.path.join(work, "src.raw")
    fx["src_patches"] = [(off, pseudo_random(n, i))
                         for i, (off, n) in enumerate(DATA)]
    new_disk(src, fx["src_patches"])
    with open(src + ".extents", "w") as f:
        pos = 0
        for off, n in DATA:
            if off > pos:
                f.write("%d %d hole,zero\n" % (pos, off - pos))
            f.write("%d %d data\n" % (off, n))
            pos = off + n
        if pos < SIZE:
            f.write("%d %d hole,zero\n" % (pos, SIZE - pos))
    fx["src"] = src
    fx["dst_patches"] = [(off, pseudo_random(MIB, 100 + i))
                         for i, off in enumerate(GARBAGE)]
    fx["hash"] = subprocess.run(
        [sys.executable, os.path.join(HERE, "blkhash-ref.py"), src],
        check=True, stdout=subprocess.PIPE).stdout.decode().split()[0]

    # --bitmap: a qcow2 image of the source, whose full copy (the
    # source's bytes) is the destination's first state; then data and
    # zeroes dirty the bitmap in every segment.
    q = os.path.join(work, "bitmap.qcow2")
    run([QEMU_IMG, "convert", "-q", "-f", "raw", "-O", "qcow2", src, q])
    run([QEMU_IMG, "bitmap", "--add", "--enable", "-g", "64K", q, "b0"])
    run(["qemu-io", "-f", "qcow2",
         "-c", "write -P 0x55 %d %d" % (2 * MIB, MIB),
         "-c", "write -z %d %d" % (4 * MIB, MIB),
         "-c", "write -P 0x66 %d %d" % (131 * MIB, MIB),
         "-c", "write -z %d %d" % (132 * MIB, MIB),
         "-c", "write -P 0x77 %d %d" % (257 * MIB + 512 * 1024, MIB),
         "-c", "write -z %d %d" % (259 * MIB + 512 * 1024, 512 * 1024), q])
    want = os.path.join(work, "bitmap-want.img")
    run([QEMU_IMG, "convert", "-q", "-f", "qcow2", "-O", "raw", q, want])
    fx["bitmap_qcow2"], fx["bitmap_want"] = q, want
    return fx


def run(argv):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    if r.returncode != 0:
        raise Failed("%s failed: %s" % (" ".join(argv), r.stderr.decode()))
    return r


def same_range(a, b, offset, length):
    """Whether files A and B hold the same bytes in [offset, +length)
    (cmp)."""
    return subprocess.run(["cmp", "-s", "-i", "%d:%d" % (offset, offset),
                           "-n", str(length), a, b]).returncode == 0


# ------------------------------------------------------------ one case


def journal_done(path):
    """The segments a journal lists as done."""
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        if line.startswith("done "):
            for part in line[5:].strip().split(","):
                if "-" in part:
                    a, b = part.split("-")
                    out += range(int(a), int(b) + 1)
                elif part:
                    out.append(int(part))
    return out


def parse_stats(stderr):
    stats = None
    for line in stderr.splitlines():
        if line.startswith("{"):
            stats = json.loads(line)
    if stats is None:
        raise Failed("no --stats=json line")
    return stats


def check_success(case, fx, dst, want, out, stderr):
    if not same_range(want, dst, 0, SIZE) or os.path.getsize(dst) != SIZE:
        raise Failed("exit 0 but the destination differs from the source")
    stats = parse_stats(stderr)
    total = (stats["data_bytes"] + stats["zero_bytes"] +
             stats["skipped_bytes"] + stats["resumed_bytes"])
    if not stats["ok"] or stats["size"] != SIZE or total != SIZE:
        raise Failed("exit 0 but the stats are wrong (ok, and data + zero + "
                     "skipped + resumed = %d): %s" % (SIZE, json.dumps(stats)))
    if "blkhash" in case["features"]:
        if out.strip() != fx["hash"]:
            raise Failed("--blkhash printed %r, blkhash-ref.py says %s" %
                         (out.strip(), fx["hash"]))


def check_failure(case, what, out, stderr):
    # A copy that could not connect ends before it started: no stats.
    if case["op"] == "connect" and "{" not in stderr:
        stats = {"ok": False}
    else:
        stats = parse_stats(stderr)
    if case["point"] == "verify":
        # The stats are the copy's, printed before --verify reads the
        # destination back (main.c, run_copy): the copy had succeeded.
        if not stats["ok"]:
            raise Failed("the copy succeeded, its stats say \"ok\": false")
    elif stats["ok"]:
        raise Failed("exit 1 but the stats say \"ok\": true")
    if out.strip():
        raise Failed("exit 1 but something was printed: %r" % out[:200])
    op, side = case["op"], case["side"]
    lines = [l for l in stderr.splitlines() if l.startswith("nbdcp: ")
             and "reconnecting" not in l]
    msg = "\n".join(lines)
    sidename = {"src": "source", "dst": "destination"}[side]
    if op == "connect":
        pat = r"nbdcp: .*(destination|socket=[^ ]*dst\.sock).*"
    elif case["way"] == "error":
        o, length = what[1], what[2]
        opname = {"extents": r"extents \(block status\)"}.get(op, op)
        if op == "flush":
            pat = r"^nbdcp: destination flush failed: Input/output error$"
        else:
            pat = (r"^nbdcp: %s %s at offset %s length %s failed: "
                   r"Input/output error$" % (sidename, opname, o, length))
    else:
        # Every request in flight fails when the server dies: the
        # message names the side, and one of its operations.
        ops = {"src": r"(read|extents \(block status\))",
               "dst": r"(write|zero|flush|read)"}[side]
        pat = r"^nbdcp: (%s connection [0-9]+: )?%s %s( at offset [0-9]+ " \
              r"length [0-9]+)? failed: .+" % (sidename, sidename, ops)
        if "retry" in case["features"]:
            pat = r"^nbdcp: .*%s.*" % sidename
    if case["point"] == "verify":
        # Said of --verify's read-back, which also asks for extents.
        pat = pat.replace("^nbdcp: ", "^nbdcp: --verify: reading the "
                          "destination back: ", 1)
        pat = pat.replace("|read)", r"|read|extents \(block status\))")
    if not re.search(pat, msg, re.M):
        raise Failed("the message does not match %r: %r" % (pat, msg))


def no_sanitizer_report(stderr):
    if re.search(r"ERROR: AddressSanitizer|runtime error:|"
                 r"WARNING: ThreadSanitizer", stderr):
        raise Failed("sanitizer report: " + stderr[-2000:])


class Case:
    def __init__(self, case, fx, tmp):
        self.c, self.fx, self.tmp = case, fx, tmp
        self.notes = []

    def servers(self, faulty):
        """The source and destination servers (FAULTY: with the fault)."""
        c, fx, tmp = self.c, self.fx, self.tmp
        if c["features"].startswith("bitmap"):
            src = Server(tmp, "src", ["qemu-nbd", "-r", "-t", "-e", "4", "-f",
                                      "qcow2", "-B", "b0", fx["bitmap_qcow2"]])
        elif c["side"] == "src":
            src, self.src_state = fault_server(tmp, "src", "src", fx["src"], c,
                                               faulty)
        else:
            src = Server(tmp, "src", ["-r", "file", fx["src"]])
        dst, self.dst_state = fault_server(tmp, "dst", "dst", self.dst, c,
                                           faulty and c["side"] == "dst")
        return src, dst

    def command(self, src, dst):
        opts = [o.replace("@JOURNAL@", self.journal)
                for o in FEATURES[self.c["features"]]]
        if self.c["point"] in ("checkpoint", "after-checkpoint"):
            opts.append("--checkpoint=128M")
        return [NBDCP] + COMMON + opts + [src.uri(), dst.uri()]

    def copy(self, argv, servers, restart):
        """Run nbdcp; a server that dies is started again (healthy) if
        RESTART.  Returns (exit status, stdout, stderr, fault)."""
        p = subprocess.Popen(argv, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        outs = {}

        def reader(name, f):
            outs[name] = f.read().decode(errors="replace")
        ts = [threading.Thread(target=reader, args=(n, f))
              for n, f in (("out", p.stdout), ("err", p.stderr))]
        for t in ts:
            t.start()
        deadline = time.monotonic() + NBDCP_TIMEOUT
        while p.poll() is None:
            if time.monotonic() > deadline:
                p.kill()
                p.wait()
                raise Failed("nbdcp did not end in %d s (a hang)" %
                             NBDCP_TIMEOUT)
            for s in servers:
                if restart and s.proc.poll() is not None and \
                        hasattr(s, "healthy_argv"):
                    # It died at its fault: it comes back, healthy.
                    s.start(s.healthy_argv)
                    self.notes.append("%s restarted" % s.name)
            time.sleep(0.01)
        for t in ts:
            t.join()
        return p.returncode, outs["out"], outs["err"]

    def fired(self):
        state = self.src_state if self.c["side"] == "src" else self.dst_state
        path = os.path.join(state, "fired", "what")
        return open(path).read().split() if os.path.exists(path) else None

    def run(self):
        c, fx, tmp = self.c, self.fx, self.tmp
        self.dst = os.path.join(tmp, "dst.img")
        bitmap = c["features"].startswith("bitmap")
        new_disk(self.dst, fx["src_patches"] if bitmap else fx["dst_patches"])
        want = fx["bitmap_want"] if bitmap else fx["src"]
        self.journal = os.path.join(tmp, "journal")
        self.src_state = self.dst_state = None
        src, dst = self.servers(True)
        servers = [src, dst]
        try:
            for s in servers:
                s.start()
            argv = self.command(src, dst)
            self.line = " ".join(shlex.quote(a) for a in argv)
            statuses, want_survive = expect(c)
            t0 = time.monotonic()
            r, out, err = self.copy(argv, servers, want_survive)
            self.notes.append("nbdcp %.1f s" % (time.monotonic() - t0))
            if os.environ.get("FAULT_MATRIX_VERBOSE"):
                self.notes.append("stderr: " + err)
            what = self.fired()
            if what is None:
                raise Failed("the fault never fired (the case proves nothing); "
                             "exit %d: %s" % (r, err[-500:]))
            no_sanitizer_report(err)
            if r not in statuses:
                raise Failed("exit %d, expected %s: %s" % (
                    r, " or ".join(map(str, sorted(statuses))), err[-800:]))
            if r == 0 and want_survive and c["op"] != "connect" and \
                    "reconnecting in" not in err:
                raise Failed("exit 0 without a reconnection logged")
        finally:
            for s in servers:
                s.stop()
        if r == 0:
            check_success(c, fx, self.dst, want, out, err)
            if os.path.exists(self.journal):
                raise Failed("the journal was not removed after success")
            return
        check_failure(c, what, out, err)
        if c["point"] == "verify" and not same_range(want, self.dst, 0, SIZE):
            raise Failed("the read-back failed after a complete copy, but "
                         "the destination differs from the source")
        if "resume" in c["features"]:
            self.resume(want)

    def resume(self, want):
        """After a failed --resume copy: what the journal claims is in
        the file (which holds only flushed writes), and the same command
        against healthy servers finishes the copy."""
        done = journal_done(self.journal)
        for s in done:
            n = min(SEGMENT, SIZE - s * SEGMENT)
            if not same_range(want, self.dst, s * SEGMENT, n):
                raise Failed("the journal lists segment %d, whose data was "
                             "never flushed to the destination" % s)
        self.notes.append("journal: %s" % (done or "none"))
        # Healthy servers on the same sockets (the journal names the
        # endpoints): nbdkit's file plugin, quicker than the sh plugin.
        src = Server(self.tmp, "src", ["-r", "file", self.fx["src"]])
        dst = Server(self.tmp, "dst", ["file", self.dst])
        try:
            for s in (src, dst):
                s.start()
            argv = self.command(src, dst)
            r, out, err = self.copy(argv, [src, dst], False)
            no_sanitizer_report(err)
            if r != 0:
                raise Failed("the resumed run failed, exit %d: %s" %
                             (r, err[-800:]))
        finally:
            src.stop()
            dst.stop()
        check_success(self.c, self.fx, self.dst, want, out, err)
        resumed = parse_stats(err)["resumed_bytes"]
        claimed = sum(min(SEGMENT, SIZE - s * SEGMENT) for s in done)
        if resumed != claimed:
            raise Failed("the resumed run skipped %d bytes, the journal "
                         "listed %d" % (resumed, claimed))
        if os.path.exists(self.journal):
            raise Failed("the journal was not removed after the resumed run")


def run_case(case, fx):
    tmp = tempfile.mkdtemp(prefix="fault.")
    t0 = time.monotonic()
    k = Case(case, fx, tmp)
    try:
        k.run()
        return case, None, time.monotonic() - t0, k
    except (Failed, subprocess.TimeoutExpired) as e:
        return case, str(e), time.monotonic() - t0, k
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--case", default=os.environ.get("CASE") or None)
    ap.add_argument("--budget", type=float,
                    default=float(os.environ.get("FAULT_MATRIX_BUDGET") or 90))
    ap.add_argument("--jobs", type=int,
                    default=int(os.environ.get("FAULT_MATRIX_JOBS", 2)))
    ap.add_argument("--apply", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.apply:
        apply_pending(*args.apply)
        return 0
    todo = cases()
    if args.list:
        for c in todo:
            print(c["name"] + ("  (known failure)" if c["name"] in
                               KNOWN_FAILURES else ""))
        return 0
    if args.case:
        todo = [c for c in todo if c["name"] == args.case or
                c["name"].startswith(args.case.rstrip("/") + "/")]
        if not todo:
            print("fault-matrix: no case is named %s (--list)" % args.case)
            return 1
    elif args.budget:
        # Past the budget no case starts: each run starts elsewhere in
        # the table, so that runs on a slow machine cover it over time.
        k = int(time.time()) % len(todo)
        todo = todo[k:] + todo[:k]
        print("fault-matrix: starting at case %d of %d, %s" %
              (k + 1, len(todo), todo[0]["name"]))
    start = time.monotonic()
    work = tempfile.mkdtemp(prefix="fault-matrix.")
    try:
        fx = make_fixtures(work)
        print("fault-matrix: %d cases (%.1f s to prepare)" %
              (len(todo), time.monotonic() - start), flush=True)
        failed, known, fixed, left = [], [], [], 0
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = []
            for c in todo:
                futures.append(pool.submit(
                    lambda c=c: run_case(c, fx)
                    if not args.budget or time.monotonic() - start < args.budget
                    else (c, "skip", 0, None)))
            for f in futures:
                c, why, secs, k = f.result()
                if why == "skip":
                    left += 1
                    continue
                notes = ("; " + ", ".join(k.notes)) if k and k.notes else ""
                if why is None:
                    if c["name"] in KNOWN_FAILURES:
                        fixed.append(c["name"])
                    print("ok   %s (%.1f s%s)" % (c["name"], secs, notes),
                          flush=True)
                    continue
                if c["name"] in KNOWN_FAILURES:
                    known.append(c["name"])
                    print("KNOWN %s: %s (%s)" % (c["name"], why,
                                                KNOWN_FAILURES[c["name"]]))
                    continue
                failed.append(c["name"])
                print("FAIL %s: %s" % (c["name"], why))
                if k and getattr(k, "line", None):
                    print("  nbdcp: %s" % k.line)
                print("  reproduce: CASE=%s tests/test-fault-matrix.sh" %
                      c["name"], flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ran = len(todo) - left
    print("fault-matrix: %d cases run, %d failed, %d known failures, %d not "
          "run (budget %.0f s), %.0f s" % (ran, len(failed), len(known), left,
                                          args.budget,
                                          time.monotonic() - start))
    for n in fixed:
        print("fault-matrix: %s is listed as a known failure but passed" % n)
    if left:
        print("fault-matrix: the budget ran out: %d cases not run "
              "(FAULT_MATRIX_BUDGET=0 runs them all)" % left)
    return 1 if failed or fixed or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
