#!/usr/bin/env python3
# random-copies.py: the randomized differential test's generator and
# runner (tests/test-random-copies.sh runs it).  Each case is drawn
# from the run's seed and its own number: a source shape (extents of
# data, holes and allocated zeroes, of 512 bytes to 64 MiB, unaligned
# ones, sizes near 512, 4K, the request size and 128 MiB), a server for
# it (nbdkit file with true or listed extents, qemu-nbd raw or qcow2, a
# block-size-constrained nbdkit, a pipe), a destination (nbdkit memory,
# qemu-nbd raw or qcow2, a new or old file full of garbage, null:, a
# pipe) and nbdcp's options.  The oracle is independent of nbdcp: the
# destination's bytes as cmp or qemu-img read them, equal to the
# source file's; the --blkhash line equal to blkhash-ref.py's; the
# --stats=json fields adding up to the size.
#
# Usage: random-copies.py [--seed N] [--budget SECONDS] [--cases N]
#                         [--case K] [--verbose]
# Environment: NBDCP, NBDKIT, QEMU_NBD, QEMU_IMG (the programs), TMPDIR.
# A failed case prints the command that runs it alone (SEED= CASE=)
# and the nbdcp command line it ran.
import argparse
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

KIB = 1024
MIB = 1024 * KIB
SEGMENT = 128 * MIB
HERE = os.path.dirname(os.path.abspath(__file__))
NBDCP = os.environ.get("NBDCP", "nbdcp")
NBDKIT = os.environ.get("NBDKIT", "nbdkit")
QEMU_NBD = os.environ.get("QEMU_NBD", "qemu-nbd")
QEMU_IMG = os.environ.get("QEMU_IMG", "qemu-img")
# Most data any case writes into its source file, so that a case takes
# a second or two and the run's budget sees many of them.
DATA_CAP = 24 * MIB


class CaseFailed(Exception):
    pass


# ---------------------------------------------------------------- drawing


def log_uniform(rng, lo, hi):
    """An integer in [lo, hi], every power of 2 in between as likely."""
    x = rng.uniform(0, 1)
    return int(lo * (hi / lo) ** x)


def draw_size(rng, request_size, multiple):
    """A disk size near the boundaries copies go wrong at."""
    kind = rng.choice(["tiny", "zero", "near512", "near4k", "nearreq",
                       "nearseg", "twoseg", "any", "any"])
    if kind == "zero":
        size = 0
    elif kind == "tiny":
        size = rng.randint(1, 3 * 512)
    elif kind == "near512":
        size = 512 * rng.randint(1, 8) + rng.choice([-1, 0, 1])
    elif kind == "near4k":
        size = 4096 * rng.randint(1, 64) + rng.choice([-512, -1, 0, 1, 512])
    elif kind == "nearreq":
        size = request_size * rng.randint(1, 6) + rng.choice([-512, -1, 0, 1, 512])
    elif kind == "nearseg":
        size = SEGMENT + rng.choice([-4096, -512, -1, 0, 1, 512, 4096, 3 * MIB])
    elif kind == "twoseg":
        size = 2 * SEGMENT + rng.randint(0, SEGMENT // 512) * 512
    else:
        size = log_uniform(rng, 512, 300 * MIB)
    size = max(size, 0)
    return size - size % multiple


def draw_layout(rng, size):
    """A list of (offset, length, kind) covering [0, size): kind is
    'data' (random bytes), 'hole' (never written) or 'zero' (zeroes
    written, so allocated)."""
    shape = rng.choice(["random", "random", "random", "every-other-4k",
                        "unaligned", "all-data", "all-hole", "striped"])
    out = []
    off = 0
    data_left = DATA_CAP
    flip = rng.choice([0, 1])
    while off < size:
        if shape == "every-other-4k":
            length = 4096
            kind = "data" if (off // 4096) % 2 == flip else "hole"
        elif shape == "all-data":
            length = size
            kind = "data"
        elif shape == "striped":
            # Data whose 4K blocks are zero every other one (or every
            # few): zero detection splits a buffer into many runs, more
            # than a buffer has room for at large requests.
            length = min(size, rng.choice([4, 8, 16]) * MIB)
            kind = "striped"
        elif shape == "all-hole":
            length = size
            kind = "hole"
        else:
            if shape == "unaligned":
                length = rng.randint(1, 256 * KIB)
            else:
                length = 512 * log_uniform(rng, 1, 64 * MIB // 512)
            kind = rng.choices(["data", "hole", "zero"], [4, 4, 2])[0]
        length = min(length, size - off)
        if kind in ("data", "striped"):
            if data_left <= 0:
                kind = "hole"
            else:
                length = min(length, data_left) if shape != "every-other-4k" else length
                data_left -= length
        out.append((off, length, kind))
        off += length
    return out


def draw_options(rng, dst_kind, dst_fresh, src_stream):
    opts = []
    request_size = 512 << rng.randint(0, 16)  # 512 to 32M
    if rng.random() < 0.3:
        request_size = 512 << rng.randint(11, 16)  # 1M to 32M, often
    if rng.random() < 0.6:
        opts.append("--request-size=%d" % request_size)
    else:
        request_size = 512 * KIB
    if rng.random() < 0.5:
        opts.append("-S %d" % rng.choice([0, 512, 1024, 4096, 8192, 65536,
                                          512 * rng.randint(1, 2048)]))
    if rng.random() < 0.4:
        q = rng.choice([request_size, request_size * 3,
                        rng.randint(1, 48) * MIB + rng.choice([0, 512, 4096])])
        opts.append("--queue-size=%d" % max(q, request_size))
    if rng.random() < 0.5:
        opts.append("-C %d" % rng.randint(1, 5))
    if rng.random() < 0.5:
        opts.append("-T %d" % rng.randint(1, 4))
    if rng.random() < 0.4:
        opts.append("-R %d" % rng.choice([1, 2, 3, 5, 7, 13, 31, 40]))
    if rng.random() < 0.15:
        opts.append("--allocated")
    if dst_fresh and rng.random() < 0.3:
        opts.append(rng.choice(["--destination-is-zero", "--target-is-zero"]))
    if rng.random() < 0.15:
        opts.append("--no-extents")
    if rng.random() < 0.15:
        opts.append("--no-destination-extents")
    if rng.random() < 0.15:
        opts.append("--synchronous")
    if rng.random() < 0.3:
        algo = rng.choice(["md5", "sha1", "sha256", "sha512"])
        block = rng.choice([None, 4096, 65536, 1 << rng.randint(9, 22)])
        spec = algo if block is None else "%s/%d" % (algo, block)
        opts.append("--blkhash=%s" % spec)
        # Into a file when the copy itself goes to standard output.
        if dst_kind == "pipe" or rng.random() < 0.3:
            opts.append("--blkhash-file=@HASHFILE@")
    if rng.random() < 0.25 and dst_kind not in ("null", "pipe") and not src_stream:
        opts.append(rng.choice(["--verify", "--verify=full"]))
    opts.append("--stats=json")
    return opts, request_size


def draw_case(seed, number):
    rng = random.Random("%s-%d" % (seed, number))
    src_kind = rng.choices(
        ["nbdkit-file", "nbdkit-listed", "nbdkit-constrained",
         "qemu-raw", "qemu-qcow2", "file", "pipe"],
        [4, 3, 2, 2, 2, 2, 1])[0]
    dst_kind = rng.choices(
        ["memory", "memory-constrained", "qemu-raw", "qemu-qcow2",
         "file-new", "file-old", "null", "pipe"],
        [4, 1, 2, 2, 2, 2, 1, 1])[0]
    if src_kind == "pipe" and dst_kind == "pipe":
        dst_kind = "file-new"
    dst_fresh = dst_kind in ("memory", "memory-constrained", "file-new") or (
        dst_kind == "qemu-qcow2" and rng.random() < 0.5)
    opts, request_size = draw_options(rng, dst_kind, dst_fresh,
                                      src_kind == "pipe")
    multiple = 1
    if src_kind.startswith("qemu") or dst_kind.startswith("qemu"):
        multiple = 512  # qemu rounds an image's size up to 512
    minimum = 1
    if src_kind == "nbdkit-constrained" or dst_kind == "memory-constrained":
        minimum = rng.choice([512, 4096, 65536])
        multiple = max(multiple, minimum)
    size = draw_size(rng, request_size, multiple)
    # A request size below a server's minimum block size is refused
    # before anything is copied: the case checks the refusal instead.
    given = any(o.startswith("--request-size") for o in opts)
    refusal = "minimum block size" if given and request_size < minimum else None
    layout = draw_layout(rng, size)
    return {
        "number": number,
        "src": src_kind,
        "dst": dst_kind,
        "dst_fresh": dst_fresh,
        "options": opts,
        "size": size,
        "layout": layout,
        "minimum": minimum,
        "data_seed": rng.getrandbits(32),
        "qemu_shared": rng.choice([1, 8]),
        "refusal": refusal,
    }


# ---------------------------------------------------------------- running


class Servers:
    """The servers of one case, all stopped at the end of it."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []
        self.commands = []

    def start(self, name, argv):
        sock = os.path.join(self.tmp, name + ".sock")
        pid = os.path.join(self.tmp, name + ".pid")
        err = open(os.path.join(self.tmp, name + ".err"), "ab")
        if argv[0] == "qemu-nbd":
            argv = [QEMU_NBD, "-k", sock, "--pid-file", pid] + argv[1:]
        else:
            argv = [NBDKIT, "-f", "--exit-with-parent", "-U", sock,
                    "-P", pid] + argv[1:]
        self.commands.append(" ".join(shlex.quote(a) for a in argv))
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)
        self.procs.append(p)
        # Both servers write the pid file after listen(2); the socket
        # file appears at bind(2), when a connection is still refused.
        deadline = time.monotonic() + 60
        while not (os.path.exists(sock) and os.path.exists(pid) and
                   os.path.getsize(pid) > 0):
            if p.poll() is not None:
                raise CaseFailed("server %s exited at start: %s" %
                                 (name, open(err.name).read()[-500:]))
            if time.monotonic() > deadline:
                raise CaseFailed("server %s did not start" % name)
            time.sleep(0.02)
        return "nbd+unix:///?socket=" + sock

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []


def write_source(path, case):
    """The source file: data extents random, zero extents written as
    zeroes, holes left as holes.  Its extents, as a server told the
    truth about zeroes would report them, go to PATH.extents."""
    rng = random.Random(case["data_seed"])
    with open(path, "wb") as f:
        f.truncate(case["size"])
        for off, length, kind in case["layout"]:
            if kind == "hole":
                continue
            f.seek(off)
            if kind == "zero":
                f.write(bytes(length))
            elif kind == "striped":
                period = rng.choice([2, 2, 3, 5])
                chunk = bytearray(rng.randbytes(length))
                for z in range(0, length, 4096 * period):
                    chunk[z:z + 4096] = bytes(len(chunk[z:z + 4096]))
                f.write(chunk)
            else:
                # Random bytes, but with a zero 4K block now and then for
                # zero detection to find inside data.
                chunk = rng.randbytes(length)
                if length >= 8192 and rng.random() < 0.5:
                    z = rng.randrange(0, length - 4096) & ~511
                    chunk = chunk[:z] + bytes(4096) + chunk[z + 4096:]
                f.write(chunk)
    with open(path + ".extents", "w") as f:
        for off, length, kind in case["layout"]:
            t = {"data": "", "striped": "", "hole": "hole,zero",
                 "zero": "zero"}[kind]
            f.write("%d %d %s\n" % (off, length, t))


def write_garbage(path, size, seed):
    rng = random.Random(seed)
    block = rng.randbytes(MIB) or b""
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n


def policy(minimum):
    """nbdkit arguments after the plugin's name for a server that
    refuses requests outside these block-size constraints (the filter
    itself is --filter=blocksize-policy before the plugin)."""
    return ["blocksize-minimum=%d" % minimum,
            "blocksize-preferred=%d" % max(minimum, 4096),
            "blocksize-maximum=%d" % (32 * MIB),
            "blocksize-error-policy=error"]


def source_endpoint(case, tmp, servers, raw):
    kind = case["src"]
    if kind == "nbdkit-file":
        return servers.start("src", ["nbdkit", "-r", "file", raw])
    if kind == "nbdkit-listed":
        return servers.start("src", ["nbdkit", "-r", "--filter=extentlist",
                                     "file", raw,
                                     "extentlist=" + raw + ".extents"])
    if kind == "nbdkit-constrained":
        return servers.start("src", ["nbdkit", "-r", "--filter=blocksize-policy",
                                     "file", raw] + policy(case["minimum"]))
    if kind == "qemu-raw":
        return servers.start("src", ["qemu-nbd", "-r", "-t", "-f", "raw",
                                     "-e", str(case["qemu_shared"]), raw])
    if kind == "qemu-qcow2":
        q = os.path.join(tmp, "src.qcow2")
        run([QEMU_IMG, "convert", "-q", "-f", "raw", "-O", "qcow2", raw, q])
        return servers.start("src", ["qemu-nbd", "-r", "-t", "-f", "qcow2",
                                     "-e", str(case["qemu_shared"]), q])
    if kind == "file":
        return raw
    return "-"  # pipe


def destination_endpoint(case, tmp, servers):
    """Returns (endpoint, how to check it)."""
    kind, size = case["dst"], case["size"]
    garbage_seed = case["data_seed"] ^ 0x5A5A
    if kind == "memory":
        return servers.start("dst", ["nbdkit", "memory", "size=%d" % size]), "uri"
    if kind == "memory-constrained":
        return servers.start("dst", ["nbdkit", "--filter=blocksize-policy",
                                     "memory", "size=%d" % size] +
                             policy(case["minimum"])), "uri"
    if kind == "qemu-raw":
        path = os.path.join(tmp, "dst.raw")
        write_garbage(path, size, garbage_seed)
        return servers.start("dst", ["qemu-nbd", "-t", "-f", "raw",
                                     "-e", str(case["qemu_shared"]), path]), "uri"
    if kind == "qemu-qcow2":
        path = os.path.join(tmp, "dst.qcow2")
        if case["dst_fresh"]:
            run([QEMU_IMG, "create", "-q", "-f", "qcow2", path, str(size)])
        else:
            g = os.path.join(tmp, "garbage.raw")
            write_garbage(g, size, garbage_seed)
            run([QEMU_IMG, "convert", "-q", "-f", "raw", "-O", "qcow2", g, path])
            os.unlink(g)
        return servers.start("dst", ["qemu-nbd", "-t", "-f", "qcow2",
                                     "-e", str(case["qemu_shared"]), path]), "uri"
    if kind == "file-new":
        return os.path.join(tmp, "dst.img"), "file"
    if kind == "file-old":
        path = os.path.join(tmp, "dst.img")
        write_garbage(path, size, garbage_seed)
        return path, "file"
    if kind == "null":
        return "null:", "none"
    return "-", "pipe"


def run(argv, **kw):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300, **kw)
    if r.returncode != 0:
        raise CaseFailed("%s failed: %s" % (argv[0], r.stderr.decode()[-800:]))
    return r


def same_bytes(a, b):
    """Whether files A and B hold the same bytes (cmp)."""
    return subprocess.run(["cmp", "-s", a, b]).returncode == 0


def check_result(case, raw, dst, how, copy_out, stderr):
    size = case["size"]
    if how == "file" or how == "pipe":
        if os.path.getsize(dst) != size:
            raise CaseFailed("destination has %d bytes, source %d" %
                             (os.path.getsize(dst), size))
        if not same_bytes(raw, dst):
            raise CaseFailed("destination differs from the source (cmp)")
        if how == "file" and "--allocated" in case["options"] and size:
            fd = os.open(dst, os.O_RDONLY)
            hole = os.lseek(fd, 0, os.SEEK_HOLE)
            os.close(fd)
            if hole < size:
                raise CaseFailed("--allocated left a hole at %d in the "
                                 "destination file" % hole)
    elif how == "uri":
        r = subprocess.run([QEMU_IMG, "compare", "-f", "raw", "-F", "raw",
                            raw, dst], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=300)
        if r.returncode != 0:
            raise CaseFailed("destination differs from the source "
                             "(qemu-img compare): " + r.stdout.decode()[-500:])
    stats = None
    for line in stderr.splitlines():
        if line.startswith("{"):
            stats = json.loads(line)
    if stats is None:
        raise CaseFailed("no --stats=json line")
    if not stats["ok"]:
        raise CaseFailed("stats say not ok")
    if case["src"] != "pipe" or True:
        if stats["size"] != size:
            raise CaseFailed("stats size %d, source %d" % (stats["size"], size))
        total = (stats["data_bytes"] + stats["zero_bytes"] +
                 stats["skipped_bytes"] + stats["resumed_bytes"])
        if total != size:
            raise CaseFailed("stats add up to %d, not %d: %s" %
                             (total, size, json.dumps(stats)))
    hashes = [o for o in case["options"] if o.startswith("--blkhash")]
    if hashes:
        spec = hashes[0].partition("=")[2] or "sha256"
        ref = run([sys.executable, os.path.join(HERE, "blkhash-ref.py"),
                   spec, raw]).stdout.decode().split()[0]
        if ref not in copy_out:
            raise CaseFailed("--blkhash printed %r, blkhash-ref.py %s" %
                             (copy_out.strip(), ref))


def run_case(case, tmp, verbose):
    raw = os.path.join(tmp, "src.raw")
    write_source(raw, case)
    servers = Servers(tmp)
    try:
        src = source_endpoint(case, tmp, servers, raw)
        dst, how = destination_endpoint(case, tmp, servers)
        hash_file = os.path.join(tmp, "blkhash")
        argv = [NBDCP] + [a.replace("@HASHFILE@", hash_file) for a in
                          sum((o.split(" ") for o in case["options"]), [])]
        argv += [src, dst]
        line = " ".join(shlex.quote(a) for a in argv)
        stdin = open(raw, "rb") if src == "-" else subprocess.DEVNULL
        stdout_path = os.path.join(tmp, "stdout")
        if how == "pipe":
            line += " > " + shlex.quote(stdout_path)
        elif src == "-":
            line = "cat %s | %s" % (shlex.quote(raw), line)
        case["command"] = line
        case["servers"] = servers.commands
        with open(stdout_path, "wb") as out:
            try:
                r = subprocess.run(argv, stdin=stdin, stdout=out,
                                   stderr=subprocess.PIPE, timeout=180)
            except subprocess.TimeoutExpired:
                raise CaseFailed("nbdcp did not finish in 180 s")
        stderr = r.stderr.decode(errors="replace")
        if case["refusal"]:
            if r.returncode != 1 or case["refusal"] not in stderr:
                raise CaseFailed("expected exit 1 and %r, got exit %d: %s" %
                                 (case["refusal"], r.returncode, stderr[-800:]))
            return
        if r.returncode != 0:
            raise CaseFailed("nbdcp exited %d: %s" % (r.returncode, stderr[-1500:]))
        if "ERROR: AddressSanitizer" in stderr or "runtime error:" in stderr:
            raise CaseFailed("sanitizer report: " + stderr[-3000:])
        copy_out = "" if how == "pipe" else open(stdout_path).read()
        if os.path.exists(hash_file):
            copy_out += open(hash_file).read()
        if how == "pipe":
            dst = stdout_path
        check_result(case, raw, dst, how, copy_out, stderr)
    finally:
        servers.stop()


def describe(case):
    kinds = {}
    for _, length, kind in case["layout"]:
        kinds[kind] = kinds.get(kind, 0) + length
    return "size %d (%d extents: %s) %s -> %s %s" % (
        case["size"], len(case["layout"]),
        ", ".join("%s %d" % kv for kv in sorted(kinds.items())),
        case["src"], case["dst"], " ".join(case["options"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", default=os.environ.get("SEED") or None)
    ap.add_argument("--budget", type=float,
                    default=float(os.environ.get("RANDOM_COPIES_BUDGET", 60)))
    ap.add_argument("--cases", type=int,
                    default=int(os.environ.get("RANDOM_COPIES_CASES", 0)))
    ap.add_argument("--case", type=int,
                    default=int(os.environ["CASE"]) if os.environ.get("CASE") else None)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    seed = args.seed or str(int(time.time() * 1000) % 1000000007)
    print("random-copies: seed %s (SEED=%s reproduces this run)" % (seed, seed),
          flush=True)
    start = time.monotonic()
    numbers = [args.case] if args.case is not None else range(10 ** 9)
    done = failed = 0
    for n in numbers:
        if args.case is None:
            if args.cases and done >= args.cases:
                break
            if not args.cases and time.monotonic() - start > args.budget:
                break
        case = draw_case(seed, n)
        tmp = tempfile.mkdtemp(prefix="nbdcp-random.")
        t0 = time.monotonic()
        try:
            run_case(case, tmp, args.verbose)
            print("case %d ok (%.1f s): %s" % (n, time.monotonic() - t0,
                                              describe(case)), flush=True)
        except (CaseFailed, subprocess.TimeoutExpired) as e:
            failed += 1
            print("case %d FAILED: %s" % (n, describe(case)))
            print("  why: %s" % e)
            for s in case.get("servers", []):
                print("  server: %s" % s)
            print("  nbdcp: %s" % case.get("command", "(not started)"))
            print("  reproduce: SEED=%s CASE=%d tests/test-random-copies.sh"
                  % (seed, n), flush=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        done += 1
    print("random-copies: %d cases, %d failed, %.0f s (seed %s)" %
          (done, failed, time.monotonic() - start, seed))
    return 1 if failed or done == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
