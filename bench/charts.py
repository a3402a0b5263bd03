#!/usr/bin/env python3
"""Draw the two charts of docs/performance.md from benchmark results.

    python3 bench/charts.py RESULTS-DIR OUTDIR
    python3 bench/charts.py SUMMARY.tsv OUTDIR

From a bench/run.sh results directory (the one bench/report.py reads:
NAME.meta, NAME.json, NAME.tsv, machine.env) or from a summary TSV
(the one this script writes), writes into OUTDIR:

  bench-ratios.svg   nbdcp's wall time over nbdcopy's and over
                     qemu-img's per workload (ratio of medians; a line
                     at 1.0, below it nbdcp is faster)
  bench-cpu.svg      the copier's CPU seconds (user + sys) per GiB of
                     disk, per tool and CPU row
  bench-summary.tsv  the numbers both charts were drawn from (only when
                     reading a results directory)

The summary TSV has one record per line, fields separated by tabs:
  source  TEXT                                  (the charts' subtitle)
  time    WORKLOAD  NBDCP-S  NBDCOPY-S  QEMU-IMG-S   (medians, "-" if none)
  cpu     ROW       NBDCP    NBDCOPY    QEMU-IMG     (CPU s / GiB, "-")
Lines starting with "#" are comments.  Python 3 standard library only;
the SVG is written by hand.
"""

import json
import os
import re
import statistics
import sys
from xml.sax.saxutils import escape

TOOLS = ["nbdcp", "nbdcopy", "qemu-img"]
PEERS = ["nbdcopy", "qemu-img"]
COLOURS = {"nbdcp": "#4c72b0", "nbdcopy": "#dd8452", "qemu-img": "#55a868"}
GIB = 1024 ** 3


def read_kv(path):
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                k, sep, v = line.rstrip("\n").partition("=")
                if sep and k != "note":
                    out[k] = v
    return out


def natural(name):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def from_results(d):
    """(source, [(workload, {tool: median s})], [(row, {tool: CPU s/GiB})])
    from a results directory."""
    m = read_kv(os.path.join(d, "machine.env"))
    source = "%s, nbdcp git %s, %s CPUs, %s" % (
        m.get("date", "?"), m.get("nbdcp_git", "?"), m.get("host_nproc", "?"),
        m.get("settings", ""))
    metas = [f[:-5] for f in os.listdir(d) if f.endswith(".meta")]
    times = []
    for name in sorted((n for n in metas if re.match(r"w\d", n)), key=natural):
        path = os.path.join(d, name + ".json")
        try:
            with open(path) as f:
                results = json.load(f)["results"]
        except (OSError, ValueError, KeyError):
            continue
        med = {}
        for r in results:
            if not any(c != 0 for c in r.get("exit_codes", [])):
                med[r["command"]] = r["median"]
        if "nbdcp" in med:
            meta = read_kv(os.path.join(d, name + ".meta"))
            times.append((meta.get("label", name), med))
    cpus = []
    for name in sorted((n for n in metas if n.startswith("cpu-")),
                       key=lambda n: (not n[4:5].isdigit(), natural(n))):
        meta = read_kv(os.path.join(d, name + ".meta"))
        size = int(meta.get("size", "0") or 0)
        path = os.path.join(d, name + ".tsv")
        if not size or not os.path.exists(path):
            continue
        runs = {}
        with open(path) as f:
            next(f, None)
            for line in f:
                c = line.rstrip("\n").split("\t")
                # tool, run, elapsed, user, sys, rss, exit code, ...
                if len(c) >= 7 and c[6] == "0" and c[2] != "-":
                    runs.setdefault(c[0], []).append(float(c[3]) + float(c[4]))
        per = dict((t, statistics.median(v) / (size / GIB))
                   for t, v in runs.items() if v)
        if per:
            title = meta.get("title", name)
            cpus.append((re.sub(r"^CPU, ", "", title), per))
    return source, times, cpus


def from_summary(path):
    source, times, cpus = "", [], []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            c = line.split("\t")
            if c[0] == "source":
                source = c[1]
            elif c[0] in ("time", "cpu") and len(c) == 2 + len(TOOLS):
                vals = dict((t, float(v)) for t, v in zip(TOOLS, c[2:])
                            if v not in ("-", ""))
                (times if c[0] == "time" else cpus).append((c[1], vals))
            else:
                sys.exit("%s: cannot parse: %s" % (path, line))
    return source, times, cpus


def write_summary(path, source, times, cpus):
    with open(path, "w") as f:
        f.write("# bench/charts.py summary: kind, label, %s\n" % ", ".join(TOOLS))
        f.write("source\t%s\n" % source)
        for kind, rows in (("time", times), ("cpu", cpus)):
            for label, vals in rows:
                f.write("\t".join([kind, label] + [
                    "%.4g" % vals[t] if t in vals else "-" for t in TOOLS])
                    + "\n")


def fmt_ratio(x):
    return "%.2f" % x if x >= 0.1 else "%.3f" % x


def fmt_cpu(x):
    return "%.3f" % x if x < 1 else "%.3g" % x


def nice_step(top):
    for step in (0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5):
        if top / step <= 8:
            return step
    return 10


def bar_chart(title, subtitle, groups, series, axis_label, fmt, ref=None,
              cap=None):
    """Horizontal grouped bars.  GROUPS: [(label, {series: value})];
    SERIES: [(key, legend text, colour)].  A value above CAP is drawn
    to the edge, its number still printed."""
    longest = max([len(label) for label, _ in groups] + [10])
    label_w, plot_w, right = max(150, int(6.6 * longest) + 16), 420, 90
    bar_h, gap, top_h, axis_h = 14, 12, 70, 58
    width = label_w + plot_w + right
    vals = [v for _, g in groups for k, _, _ in series
            for v in [g.get(k)] if v is not None]
    top = max(vals + [ref or 0]) * 1.08 if vals else 1
    if cap:
        top = min(top, cap)
    step = nice_step(top)
    top = step * -(-top // step)
    group_h = bar_h * len(series) + gap
    height = top_h + group_h * len(groups) + axis_h
    x0 = label_w

    def x(v):
        return x0 + plot_w * min(v, top) / top

    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'viewBox="0 0 %d %d" font-family="DejaVu Sans, Arial, sans-serif" '
         'font-size="12">' % (width, height, width, height),
         '<rect width="100%" height="100%" fill="#ffffff"/>',
         '<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>'
         % (10, escape(title)),
         '<text x="%d" y="40" fill="#555555">%s</text>'
         % (10, escape(subtitle))]
    # Legend.
    lx = 10
    for k, text, colour in series:
        o.append('<rect x="%d" y="50" width="12" height="12" fill="%s"/>'
                 % (lx, colour))
        o.append('<text x="%d" y="60">%s</text>' % (lx + 16, escape(text)))
        lx += 24 + 7 * len(text)
    plot_bottom = top_h + group_h * len(groups)
    # Grid and axis.
    n = int(round(top / step))
    for i in range(n + 1):
        v = step * i
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e0e0e0"/>'
                 % (x(v), top_h - 4, x(v), plot_bottom))
        o.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#333333">'
                 '%s</text>' % (x(v), plot_bottom + 16, "%g" % v))
    o.append('<text x="%d" y="%d" text-anchor="middle">%s</text>'
             % (x0 + plot_w // 2, plot_bottom + 38, escape(axis_label)))
    for gi, (label, g) in enumerate(groups):
        gy = top_h + gi * group_h
        o.append('<text x="%d" y="%.1f" text-anchor="end" '
                 'dominant-baseline="middle">%s</text>'
                 % (x0 - 8, gy + bar_h * len(series) / 2, escape(label)))
        for si, (k, _, colour) in enumerate(series):
            v = g.get(k)
            y = gy + si * bar_h
            if v is None:
                o.append('<text x="%d" y="%d" font-size="10" fill="#888888">'
                         'no result</text>' % (x0 + 4, y + bar_h - 3))
                continue
            o.append('<rect x="%d" y="%d" width="%.1f" height="%d" '
                     'fill="%s"/>' % (x0, y + 1, x(v) - x0, bar_h - 2, colour))
            o.append('<text x="%.1f" y="%d" font-size="10">%s%s</text>'
                     % (x(v) + 3, y + bar_h - 3, fmt(v),
                        " (off the scale)" if v > top else ""))
    o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333333"/>'
             % (x0, top_h - 4, x0, plot_bottom))
    if ref is not None:
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#c44e52" '
                 'stroke-width="2" stroke-dasharray="6,3"/>'
                 % (x(ref), top_h - 8, x(ref), plot_bottom))
        o.append('<text x="%.1f" y="%d" fill="#c44e52" font-size="10">'
                 'same time</text>' % (x(ref) + 4, top_h - 8))
    o.append("</svg>")
    return "\n".join(o) + "\n"


def ratio_chart(source, times):
    groups = []
    for label, med in times:
        a = med.get("nbdcp")
        groups.append((label, dict(
            (p, a / med[p]) for p in PEERS
            if a is not None and med.get(p))))
    return bar_chart(
        "nbdcp's wall time over its peers' (ratio of medians; < 1: nbdcp faster)",
        source, groups,
        [(p, "nbdcp / " + p, COLOURS[p]) for p in PEERS],
        "nbdcp time / peer time", fmt_ratio, ref=1.0, cap=2.5)


def cpu_chart(source, cpus):
    return bar_chart(
        "Copier CPU per GiB of disk (user + sys, servers apart; median)",
        source, cpus, [(t, t, COLOURS[t]) for t in TOOLS],
        "CPU seconds per GiB", fmt_cpu)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: charts.py RESULTS-DIR|SUMMARY.tsv OUTDIR")
    src, outdir = sys.argv[1:]
    if os.path.isdir(src):
        source, times, cpus = from_results(src)
    else:
        source, times, cpus = from_summary(src)
    os.makedirs(outdir, exist_ok=True)
    if os.path.isdir(src):
        write_summary(os.path.join(outdir, "bench-summary.tsv"),
                      source, times, cpus)
    if times:
        with open(os.path.join(outdir, "bench-ratios.svg"), "w") as f:
            f.write(ratio_chart(source, times))
    if cpus:
        with open(os.path.join(outdir, "bench-cpu.svg"), "w") as f:
            f.write(cpu_chart(source, cpus))
    if not times and not cpus:
        sys.exit("charts.py: no timed workload and no CPU row in " + src)


if __name__ == "__main__":
    main()
