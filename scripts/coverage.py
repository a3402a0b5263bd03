#!/usr/bin/env python3
"""Reduce gcov's JSON output to per-test coverage, and report on it.

  coverage.py capture NAME < gcov-json-lines > NAME.json
      gcov --json-format --stdout prints one JSON document per .gcda
      (or .gcno) file; keep what concerns copy/ and lib/: each line's
      count, each line's branch counts, each function's count.
  coverage.py report BUILDDIR
      merge BUILDDIR/per-test/*.json (and per-test/.all.json, every
      instrumented line with a count of 0) into summary.txt,
      line-tests.tsv (every line with code and the tests that execute
      it, an empty list for none), unreached-functions.txt and
      coverage.info.
Used by scripts/coverage.sh (make coverage); standard library only.
"""
import json
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIRS = ("copy/", "lib/")


def source_path(cwd, name):
    path = os.path.normpath(os.path.join(cwd, name))
    rel = os.path.relpath(path, TOP)
    return rel if rel.startswith(DIRS) else None


def capture(name):
    lines, branches, functions = {}, {}, {}
    for text in sys.stdin:
        if not text.strip():
            continue
        doc = json.loads(text)
        cwd = doc.get("current_working_directory", ".")
        unit = doc.get("data_file", "")
        for f in doc["files"]:
            src = source_path(cwd, f["file"])
            if src is None:
                continue
            fl = lines.setdefault(src, {})
            fb = branches.setdefault(src, {})
            for ln in f["lines"]:
                key = str(ln["line_number"])
                fl[key] = fl.get(key, 0) + ln["count"]
                if ln["branches"]:
                    fb[key + "@" + unit] = [b["count"] for b in ln["branches"]]
            ff = functions.setdefault(src, {})
            for fn in f["functions"]:
                old = ff.get(fn["name"], [fn["start_line"], 0])
                ff[fn["name"]] = [old[0], old[1] + fn["execution_count"]]
    json.dump({"test": name, "lines": lines, "branches": branches,
               "functions": functions}, sys.stdout, sort_keys=True)


def merge_into(total, part):
    for src, fl in part["lines"].items():
        tl = total["lines"].setdefault(src, {})
        for k, c in fl.items():
            tl[k] = tl.get(k, 0) + c
    for src, fb in part["branches"].items():
        tb = total["branches"].setdefault(src, {})
        for k, cs in fb.items():
            old = tb.get(k)
            if old is None or len(old) != len(cs):
                tb[k] = list(cs)
            else:
                tb[k] = [a + b for a, b in zip(old, cs)]
    for src, ff in part["functions"].items():
        tf = total["functions"].setdefault(src, {})
        for n, (start, c) in ff.items():
            old = tf.get(n, [start, 0])
            tf[n] = [old[0], old[1] + c]


def pct(hit, n):
    return "%5.1f%%" % (100.0 * hit / n) if n else "    -"


def report(build):
    per = os.path.join(build, "per-test")
    total = {"lines": {}, "branches": {}, "functions": {}}
    with open(os.path.join(per, ".all.json")) as f:
        merge_into(total, json.load(f))
    line_tests = {}
    for fn in sorted(os.listdir(per)):
        if fn.startswith(".") or not fn.endswith(".json"):
            continue
        with open(os.path.join(per, fn)) as f:
            part = json.load(f)
        merge_into(total, part)
        for src, fl in part["lines"].items():
            for k, c in fl.items():
                if c > 0:
                    line_tests.setdefault((src, int(k)), []).append(part["test"])

    # Every line that has code, with the tests that execute it (none:
    # an empty list); lines without code are not listed.
    with open(os.path.join(build, "line-tests.tsv"), "w") as out:
        every = {(src, int(k)) for src, fl in total["lines"].items() for k in fl}
        for (src, ln) in sorted(every):
            out.write("%s:%d\t%s\n" % (src, ln, " ".join(line_tests.get((src, ln), []))))

    # A header's line has branches in every unit that includes it: one
    # set of branches per line, the units' counts added up.
    for src, fb in total["branches"].items():
        merged = {}
        for k, cs in fb.items():
            ln = k.split("@")[0]
            old = merged.get(ln)
            if old is None:
                merged[ln] = list(cs)
            elif len(old) == len(cs):
                merged[ln] = [a + b for a, b in zip(old, cs)]
            else:
                merged[k] = list(cs)
        total["branches"][src] = merged

    rows, sums = [], {}
    for src in sorted(total["lines"]):
        fl = total["lines"][src]
        lh = sum(1 for c in fl.values() if c > 0)
        bs = [c for cs in total["branches"].get(src, {}).values() for c in cs]
        bh = sum(1 for c in bs if c > 0)
        rows.append((src, lh, len(fl), bh, len(bs)))
        d = src.split("/")[0]
        s = sums.setdefault(d, [0, 0, 0, 0])
        for i, v in enumerate((lh, len(fl), bh, len(bs))):
            s[i] += v
    with open(os.path.join(build, "summary.txt"), "w") as out:
        out.write("%-28s %13s %7s %13s %7s\n" % ("file", "lines", "", "branches", ""))
        for src, lh, ln, bh, bn in rows:
            out.write("%-28s %6d/%-6d %7s %6d/%-6d %7s\n"
                      % (src, lh, ln, pct(lh, ln), bh, bn, pct(bh, bn)))
        allv = [0, 0, 0, 0]
        for d in sorted(sums):
            lh, ln, bh, bn = sums[d]
            out.write("%-28s %6d/%-6d %7s %6d/%-6d %7s\n"
                      % ("total " + d + "/", lh, ln, pct(lh, ln), bh, bn, pct(bh, bn)))
            allv = [a + b for a, b in zip(allv, sums[d])]
        lh, ln, bh, bn = allv
        out.write("%-28s %6d/%-6d %7s %6d/%-6d %7s\n"
                  % ("total", lh, ln, pct(lh, ln), bh, bn, pct(bh, bn)))

    with open(os.path.join(build, "unreached-functions.txt"), "w") as out:
        for src in sorted(total["functions"]):
            for n, (start, c) in sorted(total["functions"][src].items(),
                                        key=lambda kv: kv[1][0]):
                if c == 0:
                    out.write("%s:%d\t%s\n" % (src, start, n))

    with open(os.path.join(build, "coverage.info"), "w") as out:
        for src in sorted(total["lines"]):
            out.write("TN:\nSF:%s\n" % os.path.join(TOP, src))
            ff = total["functions"].get(src, {})
            for n, (start, c) in sorted(ff.items(), key=lambda kv: kv[1][0]):
                out.write("FN:%d,%s\n" % (start, n))
            for n, (start, c) in sorted(ff.items(), key=lambda kv: kv[1][0]):
                out.write("FNDA:%d,%s\n" % (c, n))
            out.write("FNF:%d\nFNH:%d\n" % (len(ff), sum(1 for v in ff.values() if v[1])))
            fb = total["branches"].get(src, {})
            nb = hb = 0
            for block, k in enumerate(sorted(fb, key=lambda k: int(k.split("@")[0]))):
                for i, c in enumerate(fb[k]):
                    out.write("BRDA:%s,%d,%d,%d\n" % (k.split("@")[0], block, i, c))
                    nb += 1
                    hb += c > 0
            out.write("BRF:%d\nBRH:%d\n" % (nb, hb))
            fl = total["lines"][src]
            for k in sorted(fl, key=int):
                out.write("DA:%s,%d\n" % (k, fl[k]))
            out.write("LF:%d\nLH:%d\nend_of_record\n"
                      % (len(fl), sum(1 for c in fl.values() if c > 0)))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "capture":
        capture(sys.argv[2])
    elif len(sys.argv) == 3 and sys.argv[1] == "report":
        report(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
