#!/usr/bin/env python3
"""Mutants made by rule: does a one-point change in copy/ or lib/ fail a test?

  make mutants SEED=1 N=200          (or: scripts/mutants.py --seed 1 -n 200)
  scripts/mutants.py --list          every candidate mutant, one a line
  scripts/mutants.py --only ID,...   these mutants (ids from --list)

Candidates are enumerated deterministically from copy/*.c and lib/*.c
(comments, strings, character constants, preprocessor lines and code
outside function bodies are left alone), one change each:

  rel     a relational or equality operator swapped (< <=, > >=, == !=)
  logic   && and || swapped
  not     a ! dropped
  const   an integer constant plus or minus one
  arith   a binary + - swapped, * / swapped
  stmt    a whole statement line `call (...);` removed
  assign  a whole assignment line `x = ...;` (or +=, |=, ++ ...) removed
  return  `return X;` made `return 0;`, `return -1;`, or a boolean flipped
  flag    a flag bit cleared: `a | FLAG` -> `a`

SEED and N draw a sample (random.Random(SEED).sample).  Each mutant is
written into a scratch copy of the tree (build/mutants/src: the files
git knows, tracked or untracked and not ignored), built incrementally in
build/mutants/build (plain configure, no -Werror): a mutant that does
not compile is reported as such and left out of the ratio; one whose
stripped programs are identical to the unmutated ones is "same-binary"
(equivalent by construction).  The others run the tests that execute
the mutated line, from build/coverage/line-tests.tsv (make coverage),
quickest first (build/coverage/test-times.tsv), and stop at the first
that fails: killed.  A line no test executes makes the mutant
"uncovered", without a run.  A test that runs past its time limit
(MUTANTS_TIMEOUT, default 120 s, or four times its time in the coverage
run if longer) counts as killing the mutant, and is marked "timeout".
Tests that failed or skipped in the coverage run are not used.

Output, in build/mutants: results.tsv (one line a mutant), survivors.patch
(every survivor and uncovered mutant as a unified diff), and a table of
killed / survived / uncovered / not compiled per file and in all.
Standard library only.
"""
import argparse
import difflib
import hashlib
import os
import queue
import random
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import sys
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TYPE_WORDS = {
    "int", "unsigned", "signed", "char", "short", "long", "float", "double",
    "void", "bool", "const", "static", "struct", "enum", "union", "volatile",
    "size_t", "ssize_t", "off_t", "uint8_t", "uint16_t", "uint32_t",
    "uint64_t", "int8_t", "int16_t", "int32_t", "int64_t", "uintptr_t",
    "_Atomic", "register", "extern", "typedef", "auto",
}
KEYWORDS = {"return", "if", "else", "while", "for", "do", "switch", "case",
            "default", "break", "continue", "goto", "sizeof"}


def mask_source(text):
    """The text with comments, strings and character constants blanked
    (same length, newlines kept), and preprocessor lines blanked."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            # Preprocessor line, with its continuations.
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out[i] = " "
                    i += 2
                    continue
                out[i] = " "
                i += 1
            continue
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t":
            i += 1
            continue
        line_start = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                out[i] = " "
                i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            for k in range(i, min(j + 1, n)):
                out[k] = " "
            # Keep the quotes, so that a blanked string is still an operand.
            out[i] = c
            if j < n:
                out[j] = c
            i = j + 1
        else:
            i += 1
    return "".join(out)


def function_lines(masked_lines):
    """For each line, whether it lies inside a function body."""
    inside = []
    depth = 0
    func = False
    prev = ""
    for line in masked_lines:
        here = depth > 0 and func
        for ch in line:
            if ch == "{":
                if depth == 0:
                    func = prev.rstrip().endswith(")")
                depth += 1
            elif ch == "}":
                depth = max(0, depth - 1)
        inside.append(here and depth > 0 or (here and line.strip() == "}"))
        if line.strip():
            prev = line
    return inside


def is_declaration(code):
    m = re.match(r"\s*([A-Za-z_]\w*)", code)
    if not m:
        return False
    if m.group(1) in TYPE_WORDS:
        return True
    if m.group(1) in KEYWORDS:
        return False
    # `type name`, `type *name`: two identifiers in a row.
    return re.match(r"\s*[A-Za-z_]\w*\s+\**\s*[A-Za-z_]\w*\s*(=|;|\[|,)", code) is not None


def int_value(tok):
    return int(tok, 16) if tok.lower().startswith("0x") else int(tok, 8 if len(tok) > 1 and tok.startswith("0") else 10)


def candidates_for_line(orig, code, prev_code):
    """(col, end, replacement, op) for one line; code is the masked line."""
    out = []
    if not code.strip():
        return out
    for m in re.finditer(r"(?<![<>=!\-])(<=|>=|==|!=|<|>)(?![<>=])", code):
        rep = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}[m.group(1)]
        out.append((m.start(1), m.end(1), rep, "rel"))
    for m in re.finditer(r"&&|\|\|", code):
        out.append((m.start(), m.end(), "||" if m.group() == "&&" else "&&", "logic"))
    for m in re.finditer(r"!(?!=)", code):
        out.append((m.start(), m.end(), "", "not"))
    for m in re.finditer(r"(?<![\w.\-])(0[xX][0-9a-fA-F]+|\d+)([uUlL]*)(?![\w.])", code):
        # (A negative constant, -1, is changed by its return mutant only.) of declarations, not in a case label.
        if re.match(r"\s*case\b", code) or is_declaration(code) and "[" in code[:m.start()]:
            continue
        v = int_value(m.group(1))
        for d in (1, -1):
            w = v + d
            rep = str(w) + m.group(2) if w >= 0 else "(-1)"
            out.append((m.start(), m.end(), rep, "const"))
    for m in re.finditer(r"(?<=[\w)\]]) ([-+*/]) (?=[\w(!~])", code):
        rep = {"+": "-", "-": "+", "*": "/", "/": "*"}[m.group(1)]
        out.append((m.start(1), m.end(1), rep, "arith"))
    for m in re.finditer(r"(?<=[\w)\]]) ([-+*/])= ", code):
        rep = {"+": "-", "-": "+", "*": "/", "/": "*"}[m.group(1)]
        out.append((m.start(1), m.end(1), rep, "arith"))
    for m in re.finditer(r" \| ([A-Z][A-Z0-9_]*)\b", code):
        out.append((m.start(), m.end(), "", "flag"))
    for m in re.finditer(r"\b([A-Z][A-Z0-9_]*) \| (?=[\w(])", code):
        out.append((m.start(), m.end(), "", "flag"))
    stripped = code.strip()
    m = re.match(r"(\s*)return (.+);\s*$", code)
    if m:
        val = orig[m.start(2):m.end(2)].strip()
        if re.match(r"\d+$", val):
            val = "NULL"  # the constant's own mutants change it
        reps = {"0": ["-1"], "-1": ["0"], "true": ["false"], "false": ["true"],
                "NULL": []}.get(val, ["0", "-1"])
        for r in reps:
            out.append((m.start(2), m.end(2), r, "return"))
    # A whole statement on one line, started on this line.
    if (stripped.endswith(";") and prev_code.rstrip()[-1:] in (";", "{", "}", ":", ")", "")
            and stripped.count("(") == stripped.count(")")
            and not is_declaration(code)
            and not re.match(r"(return|break|continue|goto|case|default|else|do|if|for|while|switch)\b", stripped)
            and re.match(r"[\w*(]", stripped)):
        col = len(code) - len(code.lstrip())
        end = len(code.rstrip())
        if re.match(r"[\w*().\->\[\] ]+\s*([-+*/|&^]|<<|>>)?=[^=]|[\w.\->]+(\+\+|--);$|(\+\+|--)", stripped):
            out.append((col, end, ";", "assign"))
        elif "(" in stripped:
            out.append((col, end, ";", "stmt"))
    return out


def enumerate_mutants(top):
    files = []
    for d in ("copy", "lib"):
        for f in sorted(os.listdir(os.path.join(top, d))):
            if f.endswith(".c"):
                files.append(d + "/" + f)
    mutants = []
    for rel in files:
        with open(os.path.join(top, rel)) as f:
            text = f.read()
        lines = text.split("\n")
        mlines = mask_source(text).split("\n")
        inside = function_lines(mlines)
        prev = ""
        for i, (orig, code) in enumerate(zip(lines, mlines)):
            if inside[i]:
                cands = candidates_for_line(orig, code, prev)
                seen = set()
                for col, end, rep, op in sorted(cands, key=lambda c: (c[0], c[3], c[2])):
                    new = orig[:col] + rep + orig[end:]
                    if new == orig or new in seen:
                        continue
                    seen.add(new)
                    mutants.append({"id": "%s:%d:%d:%s:%d" % (rel, i + 1, col + 1, op, len(seen)),
                                    "file": rel, "line": i + 1, "op": op,
                                    "old": orig, "new": new})
            if code.strip():
                prev = code
    return mutants


def load_line_tests(cov):
    lt = {}
    with open(os.path.join(cov, "line-tests.tsv")) as f:
        for row in f:
            key, _, tests = row.rstrip("\n").partition("\t")
            lt[key] = tests.split()
    times = {}
    with open(os.path.join(cov, "test-times.tsv")) as f:
        for row in f:
            name, result, secs = row.rstrip("\n").split("\t")
            times[name] = (result, float(secs))
    return lt, times


def tests_for(m, lt, times):
    """Tests executing the mutant's line (a line gcov does not list, e.g.
    the continuation of a statement, takes its statement's first line)."""
    for ln in range(m["line"], max(0, m["line"] - 8), -1):
        key = "%s:%d" % (m["file"], ln)
        if key in lt:
            usable = [t for t in lt[key] if times.get(t, ("", 0))[0] == "PASS"]
            return sorted(usable, key=lambda t: (times[t][1], t))
    return []


RUNNING = set()


def descendants(pid):
    """PID's descendants, from /proc (a test's servers and the programs
    it runs under timeout(1) are in process groups of their own)."""
    children = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def kill_tree(pid):
    for p in [pid] + descendants(pid):
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


def stop(signum, frame):
    for pid in list(RUNNING):
        kill_tree(pid)
    os._exit(128 + signum)


def run(cmd, cwd, timeout=None, log=None):
    """The exit status, or None after a timeout (the command's whole
    process group, servers included, is killed then)."""
    with open(log or os.devnull, "w") as out:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        RUNNING.add(p.pid)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_tree(p.pid)
            p.wait()
            return None
        finally:
            RUNNING.discard(p.pid)


def git_files(top):
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"],
                         cwd=top, capture_output=True, check=True).stdout
    return [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(top, f))]


def prepare(top, work):
    src = os.path.join(work, "src")
    bld = os.path.join(work, "build")
    if os.path.isdir(src):
        shutil.rmtree(src)
    for rel in git_files(top):
        dst = os.path.join(src, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(os.path.join(top, rel), dst)
    os.makedirs(os.path.join(src, "m4"), exist_ok=True)
    if run(["autoreconf", "-fi"], src, log=os.path.join(work, "autoreconf.log")) != 0:
        sys.exit("mutants: autoreconf failed, see %s/autoreconf.log" % work)
    os.makedirs(bld, exist_ok=True)
    if not os.path.exists(os.path.join(bld, "Makefile")):
        if run([os.path.join(src, "configure")], bld, log=os.path.join(work, "configure.log")) != 0:
            sys.exit("mutants: configure failed, see %s/configure.log" % work)
    return src, bld


def build(bld, log):
    return (run(["make", "-j2"], bld, log=log) == 0
            and run(["make", "-j2", "check", "TESTS="], bld, log=log + ".check") == 0)


PROGRAMS = ["copy/nbdcp", "tests/test-human-size", "tests/test-sparse-runs",
            "tests/test-extent-align", "tests/test-window", "tests/test-nbd-failure"]


def binaries_hash(bld):
    h = hashlib.sha256()
    for p in PROGRAMS:
        path = os.path.join(bld, p)
        if os.path.exists(path):
            tmp = os.path.join(bld, ".stripped")
            subprocess.run(["strip", "-o", tmp, path], check=True)
            with open(tmp, "rb") as f:
                h.update(f.read())
            os.unlink(tmp)
    return h.hexdigest()


def tests_environment(bld):
    """make check's TESTS_ENVIRONMENT, as a dict."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-f", "Makefile", "-f", "-",
                          "print-env"], cwd=bld, capture_output=True, check=True,
                         input=b"print-env:\n\t@echo $(TESTS_ENVIRONMENT)\n").stdout
    env = dict(os.environ)
    for word in shlex.split(out.decode()):
        k, _, v = word.partition("=")
        env[k] = v
    return env


def unmount_under(path):
    """Detach whatever a killed test left mounted under PATH (the tests
    that mount file systems unmount them in their trap, which SIGKILL
    skips), deepest first."""
    with open("/proc/mounts") as f:
        points = [l.split()[1] for l in f]
    for point in sorted((p for p in points if p.startswith(path + "/")),
                        key=len, reverse=True):
        subprocess.run(["umount", "-l", point], stderr=subprocess.DEVNULL)


def run_test(bld, env, test, limit, log):
    """'pass' (or skip), 'fail' or 'timeout': the test run as make check
    runs it (same environment, from the build directory), without make."""
    if test.endswith(".sh"):
        cmd = ["bash", os.path.join(env["srcdir"], "tests", test)]
    else:
        cmd = [os.path.join(bld, "tests", test)]
    # A test killed at its time limit leaves its temporary directory,
    # and a mutant can fill one without end (one left 46 GiB in /tmp):
    # each test gets a directory of its own, removed after it.
    scratch = tempfile.mkdtemp(prefix="mutant-test.", dir=bld)
    env = dict(env, TMPDIR=scratch)
    try:
        with open(log, "w") as out:
            p = subprocess.Popen(cmd, cwd=bld, env=env, stdout=out,
                                 stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)
            RUNNING.add(p.pid)
            try:
                rc = p.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                kill_tree(p.pid)
                p.wait()
                return "timeout"
            finally:
                RUNNING.discard(p.pid)
    finally:
        unmount_under(scratch)
        shutil.rmtree(scratch, ignore_errors=True)
    return "pass" if rc in (0, 77) else "fail"


def diff_of(m):
    old = m["old"] + "\n"
    new = m["new"] + "\n"
    path = m["file"]
    with open(os.path.join(TOP, path)) as f:
        lines = f.read().split("\n")
    a = [l + "\n" for l in lines]
    b = list(a)
    b[m["line"] - 1] = new
    assert a[m["line"] - 1] == old
    return "".join(difflib.unified_diff(a, b, "a/" + path, "b/" + path, n=2))


def main():
    ap = argparse.ArgumentParser(description="mutants made by rule")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SEED", "1")))
    ap.add_argument("-n", type=int, default=int(os.environ.get("N", "200")))
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--only", default=os.environ.get("MUTANTS_ONLY", ""))
    ap.add_argument("--coverage", default=os.path.join(TOP, "build", "coverage"))
    ap.add_argument("--continue", dest="cont", action="store_true",
                    default=bool(os.environ.get("MUTANTS_CONTINUE")))
    ap.add_argument("-j", "--jobs", type=int, default=int(os.environ.get("MUTANTS_JOBS", "2")))
    ap.add_argument("--work", default=os.path.join(TOP, "build", "mutants"))
    args = ap.parse_args()
    limit_min = float(os.environ.get("MUTANTS_TIMEOUT", "120"))
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    allm = enumerate_mutants(TOP)
    if args.list:
        for m in allm:
            print("%s\t%s" % (m["id"], m["new"].strip()))
        return 0
    if args.only:
        want = args.only.split(",")
        byid = {m["id"]: m for m in allm}
        chosen = [byid[w] for w in want]
    else:
        chosen = random.Random(args.seed).sample(allm, min(args.n, len(allm)))
    lt, times = load_line_tests(args.coverage)
    work = args.work
    os.makedirs(work, exist_ok=True)
    print("mutants: %d candidates, %d chosen (seed %d)" % (len(allm), len(chosen), args.seed),
          flush=True)
    started = time.time()
    # One scratch tree and build per job; each job takes the next mutant.
    workers = []
    for j in range(args.jobs):
        wdir = work if args.jobs == 1 else os.path.join(work, "job%d" % j)
        os.makedirs(wdir, exist_ok=True)
        src, bld = prepare(TOP, wdir)
        if not build(bld, os.path.join(wdir, "build.log")):
            sys.exit("mutants: the unmutated tree does not build, see %s/build.log" % wdir)
        workers.append({"dir": wdir, "src": src, "bld": bld, "hash": binaries_hash(bld),
                        "env": tests_environment(bld)})
    kills = {}
    lock = threading.Lock()
    os.makedirs(os.path.join(work, "logs"), exist_ok=True)
    results = [None] * len(chosen)
    # --continue: keep the results of an earlier, interrupted run.
    earlier = {}
    tsv_path = os.path.join(work, "results.tsv")
    if args.cont and os.path.exists(tsv_path):
        with open(tsv_path) as f:
            for row in f.read().splitlines()[1:]:
                cells = row.split("\t")
                if len(cells) >= 9:
                    earlier[cells[0]] = row
    todo = queue.Queue()
    done = [0]
    tsv = open(tsv_path, "w")
    tsv.write("id\tfile\tline\top\tstatus\ttest\ttests_run\tseconds\tmutated line\n")
    for k, m in enumerate(chosen):
        if m["id"] in earlier:
            cells = earlier[m["id"]].split("\t")
            results[k] = (m, cells[4], cells[5])
            tsv.write(earlier[m["id"]] + "\n")
            done[0] += 1
        else:
            todo.put((k, m))
    tsv.flush()
    if earlier:
        print("mutants: %d results kept from the earlier run" % done[0], flush=True)

    def one(w, m):
        tests = tests_for(m, lt, times)
        status, killer, nrun = "", "", 0
        if not tests:
            return "uncovered", "", 0
        path = os.path.join(w["src"], m["file"])
        with open(path) as f:
            original = f.read()
        lines = original.split("\n")
        lines[m["line"] - 1] = m["new"]
        with open(path, "w") as f:
            f.write("\n".join(lines))
        try:
            if not build(w["bld"], os.path.join(w["dir"], "mutant.log")):
                return "not-compiled", "", 0
            if binaries_hash(w["bld"]) == w["hash"]:
                return "same-binary", "", 0
            status = "survived"
            # Quickest first, tests that have killed before sooner.
            with lock:
                tests.sort(key=lambda t: (times[t][1] / (1 + kills.get(t, 0)), t))
            log = os.path.join(w["dir"], "test.log")
            for t in tests:
                nrun += 1
                limit = max(limit_min, 4 * times[t][1])
                r = run_test(w["bld"], w["env"], t, limit, log)
                if r != "pass":
                    status = "killed" if r == "fail" else "killed-timeout"
                    killer = t
                    with lock:
                        kills[t] = kills.get(t, 0) + 1
                    shutil.copy(log, os.path.join(work, "logs",
                                                  m["id"].replace("/", "_") + ".log"))
                    break
        finally:
            with open(path, "w") as f:
                f.write(original)
        return status, killer, nrun

    def worker(w):
        while True:
            try:
                k, m = todo.get_nowait()
            except queue.Empty:
                return
            t0 = time.time()
            status, killer, nrun = one(w, m)
            secs = time.time() - t0
            with lock:
                results[k] = (m, status, killer)
                done[0] += 1
                tsv.write("%s\t%s\t%d\t%s\t%s\t%s\t%d\t%.0f\t%s\n"
                          % (m["id"], m["file"], m["line"], m["op"], status, killer, nrun,
                             secs, m["new"].strip()))
                tsv.flush()
                print("[%d/%d] %-50s %-14s %s (%d tests, %.0fs)"
                      % (done[0], len(chosen), m["id"], status, killer, nrun, secs),
                      flush=True)

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    tsv.close()
    # Leave the scratch builds as the unmutated tree.
    for w in workers:
        build(w["bld"], os.path.join(w["dir"], "build.log"))

    with open(os.path.join(work, "survivors.patch"), "w") as out:
        for m, status, _ in results:
            if status in ("survived", "uncovered"):
                out.write("# %s (%s)\n" % (m["id"], status))
                out.write(diff_of(m))
    cols = ["killed", "survived", "uncovered", "not-compiled", "same-binary"]
    table = {}
    for m, status, _ in results:
        s = "killed" if status.startswith("killed") else status
        for key in (m["file"], "all"):
            table.setdefault(key, dict.fromkeys(cols, 0))[s] += 1
    print("\n%-26s %7s %9s %10s %13s %12s" % ("file", *cols))
    for key in sorted(table, key=lambda k: (k == "all", k)):
        print("%-26s %7d %9d %10d %13d %12d" % (key, *(table[key][c] for c in cols)))
    a = table.get("all", dict.fromkeys(cols, 0))
    denom = a["killed"] + a["survived"] + a["uncovered"]
    print("\nkilled %d of %d compiled, not equivalent by binary: %.1f%% (seed %d, N %d)"
          % (a["killed"], denom, 100.0 * a["killed"] / denom if denom else 0.0,
             args.seed, len(chosen)))
    print("wall time %.0f s; results %s/results.tsv, survivors %s/survivors.patch"
          % (time.time() - started, work, work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
