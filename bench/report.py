#!/usr/bin/env python3
"""Turn a bench/run.sh results directory into a Markdown report.

    python3 bench/report.py RESULTS-DIR > report.md

Reads, for each result NAME: NAME.meta (key=value lines: title, size,
data_percent, note, param), NAME.cmds (TOOL<TAB>COMMAND lines),
NAME.json (hyperfine --export-json) or NAME.tsv (/usr/bin/time rows
of the CPU runs), and machine.env.  Python 3 standard library only.
"""

import json
import re
import os
import statistics
import sys

TOOLS = ["nbdcp", "nbdcopy", "qemu-img"]
PEERS = ["nbdcopy", "qemu-img"]
GIB = 1024 ** 3


def read_kv(path):
    out = {}
    notes = []
    if not os.path.exists(path):
        return out, notes
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if "=" not in line:
                continue
            k, v = line.split("=", 1)
            if k == "note":
                notes.append(v)
            else:
                out[k] = v
    return out, notes


def read_cmds(path):
    cmds = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.rstrip("\n")
                if "\t" in line:
                    cmds.append(tuple(line.split("\t", 1)))
    return cmds


def fmt_s(x):
    if x is None:
        return "-"
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    if x >= 1:
        return "%.2f" % x
    return "%.3f" % x


def fmt_rate(size, secs):
    if not size or not secs:
        return "-"
    r = size / GIB / secs
    if r >= 100:
        return "%.0f" % r
    if r >= 10:
        return "%.1f" % r
    return "%.2f" % r


def fmt_ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    return "%.2f" % (a / b)


class Report:
    def __init__(self, d):
        self.d = d
        self.machine, _ = read_kv(os.path.join(d, "machine.env"))
        self.scratch = self.machine.get("scratch", "")
        self.nbdcp_path = self.machine.get("nbdcp_path", "")
        self.out = []
        self.summary = []  # (title, {tool: median or None/'FAILED'})
        self.req_summary = []    # (name, {tool: requests}, GiB)
        self.floor_summary = []  # (name, title, tool, floor, ratio, worst, n)
        self.cpu_summary = []    # (name, {tool: CPU s / GiB})

    def p(self, s=""):
        self.out.append(s)

    def short(self, cmd):
        """Commands as a person would type them."""
        if self.nbdcp_path:
            cmd = cmd.replace(self.nbdcp_path, "nbdcp")
        if self.scratch:
            cmd = cmd.replace(self.scratch, "$SCRATCH")
        return " ".join(cmd.split())

    def names(self, prefix):
        return sorted(f[:-5] for f in os.listdir(self.d)
                      if f.startswith(prefix) and f.endswith(".meta"))

    def commands(self, name):
        cmds = read_cmds(os.path.join(self.d, name + ".cmds"))
        if cmds:
            self.p("```sh")
            for tool, cmd in cmds:
                self.p("# %s" % tool)
                self.p(self.short(cmd))
            self.p("```")
            self.p()

    def notes(self, notes):
        for n in notes:
            self.p("- " + n)
        if notes:
            self.p()

    def load_json(self, name):
        path = os.path.join(self.d, name + ".json")
        if not os.path.exists(path):
            return None
        try:
            with open(path) as f:
                return json.load(f)["results"]
        except (ValueError, KeyError):
            return None  # hyperfine did not finish (or is still running)

    # ------------------------------------------------------- workloads
    def workload(self, name):
        meta, notes = read_kv(os.path.join(self.d, name + ".meta"))
        title = meta.get("title", name)
        size = int(meta.get("size", "0") or 0)
        self.p("### " + title)
        self.p()
        results = self.load_json(name)
        if not results:
            self.p("No result (hyperfine did not finish).")
            self.p()
            self.summary.append((meta.get("label", title), {}))
            return
        med = {}
        failed = {}
        for r in results:
            bad = sum(1 for c in r.get("exit_codes", []) if c != 0)
            if bad:
                failed[r["command"]] = "%d of %d runs failed" % (
                    bad, len(r.get("exit_codes", [])))
            else:
                med[r["command"]] = r["median"]
        self.p("| tool | median s | min s | max s | runs | GiB/s (virtual) "
               "| nbdcp / tool |")
        self.p("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        base = med.get("nbdcp")
        for r in results:
            tool = r["command"]
            if tool in failed:
                self.p("| %s | FAILED: %s | %s | %s | %d | - | - |" % (
                    tool, failed[tool], fmt_s(r["min"]), fmt_s(r["max"]),
                    len(r["times"])))
                continue
            self.p("| %s | %s | %s | %s | %d | %s | %s |" % (
                tool, fmt_s(r["median"]), fmt_s(r["min"]), fmt_s(r["max"]),
                len(r["times"]), fmt_rate(size, r["median"]),
                "1" if tool == "nbdcp" else fmt_ratio(base, med.get(tool))))
        self.p()
        self.notes(notes)
        self.requests(name, size)
        self.commands(name)
        s = {}
        for r in results:
            s[r["command"]] = "FAILED" if r["command"] in failed \
                else r["median"]
        self.summary.append((meta.get("label", title), s))

    # ------------------------------------------------------- requests
    def requests(self, name, size):
        """The requests each tool sent the source in a counting run."""
        path = os.path.join(self.d, name + ".requests.tsv")
        if not os.path.exists(path):
            return
        rows = []
        with open(path) as f:
            next(f)
            for line in f:
                c = line.rstrip("\n").split("\t")
                if len(c) >= 4:
                    rows.append((c[0], int(c[1]), int(c[2]), int(c[3])))
        if not rows:
            return
        base = dict((r[0], r[1]) for r in rows).get("nbdcp--no-extents")
        gib = size / GIB if size else 0
        self.p("Requests to the source, from one more run of each tool "
               "with `--filter=stats` on the server (not timed):")
        self.p()
        self.p("| tool | requests | reads | block status | requests / GiB "
               "| / nbdcp --no-extents |")
        self.p("| --- | ---: | ---: | ---: | ---: | ---: |")
        for tool, total, reads, ext in rows:
            self.p("| %s | %d | %d | %d | %s | %s |" % (
                tool.replace("--", " --"), total, reads, ext,
                "%.0f" % (total / gib) if gib else "-",
                fmt_ratio(total, base)))
        self.p()
        self.req_summary.append((name, dict((r[0], r[1]) for r in rows),
                                 gib))

    # ------------------------------------------------------- CPU
    def floor_of(self, meta):
        """A fixed floor in seconds (workload 4a: the disk row's median
        wall time in the same suite run), or None."""
        fl = meta.get("floor", "")
        if ":" not in fl:
            return None
        wname, row = fl.split(":", 1)
        for r in self.load_json(wname) or []:
            if r["command"] == row:
                return r["median"]
        return None

    def cpu(self, name):
        meta, notes = read_kv(os.path.join(self.d, name + ".meta"))
        title = meta.get("title", name)
        size = int(meta.get("size", "0") or 0)
        pct = float(meta.get("data_percent", "100") or 100)
        nreq = int(meta.get("requests", "0") or 0)
        flush = float(meta.get("flush_s", "0") or 0)
        fixed = self.floor_of(meta)
        path = os.path.join(self.d, name + ".tsv")
        self.p("### " + title)
        self.p()
        if not os.path.exists(path):
            self.p("No result.")
            self.p()
            return
        rows = {}
        with open(path) as f:
            next(f)
            for line in f:
                cols = line.rstrip("\n").split("\t")
                # Older results have no server_cpu column.
                server = cols[7] if len(cols) > 7 else "-"
                rows.setdefault(cols[0], []).append(
                    tuple(cols[2:7]) + (server,))
        nproc = int(self.machine.get("host_nproc", "0") or 0)
        has_server = any(r[5] not in ("-", "")
                         for rs in rows.values() for r in rs)
        has_floor = fixed is not None or (has_server and nproc > 0)
        self.p("| tool | runs | failed | elapsed s | user s | sys s "
               "| CPU s / GiB (virtual) | CPU s / GiB of data | peak RSS MiB |"
               + (" server CPU s | copier + server CPU s / CPUs |"
                  if has_server else "")
               + (" floor s | elapsed / floor | worst |" if has_floor else "")
               + (" copier CPU us / request |" if nreq else ""))
        self.p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
               + (" ---: | ---: |" if has_server else "")
               + (" ---: | ---: | ---: |" if has_floor else "")
               + (" ---: |" if nreq else ""))
        cpus = {}
        for tool, rs in rows.items():
            ok = [r for r in rs if r[4] == "0" and r[0] != "-"]
            bad = len(rs) - len(ok)
            if not ok:
                self.p("| %s | %d | %d | - | - | - | - | - | - |%s%s%s" % (
                    tool, len(rs), bad, " - | - |" if has_server else "",
                    " - | - | - |" if has_floor else "",
                    " - |" if nreq else ""))
                continue
            el = statistics.median(float(r[0]) for r in ok)
            us = statistics.median(float(r[1]) for r in ok)
            sy = statistics.median(float(r[2]) for r in ok)
            cpu = statistics.median(float(r[1]) + float(r[2]) for r in ok)
            rss = statistics.median(int(r[3]) for r in ok) / 1024
            gib = size / GIB if size else 0
            data_gib = gib * pct / 100
            cpus[tool] = cpu / gib if gib else None
            extra = ""
            if has_server:
                srv = statistics.median(float(r[5]) for r in ok)
                both = statistics.median(
                    float(r[1]) + float(r[2]) + float(r[5]) for r in ok)
                extra = " %s | %s |" % (
                    fmt_s(srv), fmt_s(both / nproc) if nproc else "-")
            if has_floor:
                # Each run against its own floor: the CPU time copier
                # and servers used in that run over the CPUs, plus the
                # final flush; or the fixed floor (the disk row).
                if fixed is not None:
                    floors = [fixed for r in ok]
                else:
                    floors = [(float(r[1]) + float(r[2]) + float(r[5]))
                              / nproc + flush for r in ok]
                ratios = [float(r[0]) / fl for r, fl in zip(ok, floors)
                          if fl > 0]
                if ratios:
                    extra += " %s | %.2f | %.2f |" % (
                        fmt_s(statistics.median(floors)),
                        statistics.median(ratios), max(ratios))
                    self.floor_summary.append(
                        (name, meta.get("title", name), tool,
                         statistics.median(floors),
                         statistics.median(ratios), max(ratios), len(ok)))
                else:
                    extra += " - | - | - |"
            if nreq:
                extra += " %.2f |" % (cpu / nreq * 1e6)
            self.p("| %s | %d | %d | %s | %s | %s | %s | %s | %.0f |%s" % (
                tool, len(rs), bad, fmt_s(el), fmt_s(us), fmt_s(sy),
                ("%.3f" % (cpu / gib)) if gib else "-",
                ("%.3f" % (cpu / data_gib)) if data_gib else "-", rss, extra))
        self.cpu_summary.append((name, cpus))
        if has_server:
            self.p()
            self.p("Copier and server share the %s CPUs, so copier + server "
                   "CPU over the CPUs is the least wall time the two could "
                   "take together." % (nproc or "machine's"))
        if has_floor:
            self.p("The floor of each run is %s; elapsed / floor is the "
                   "median over the runs, worst the largest." % (
                       "the median wall time of the `%s` row of %s" % (
                           meta["floor"].split(":", 1)[1],
                           meta["floor"].split(":", 1)[0])
                       if fixed is not None else
                       "that run's copier + server CPU over the CPUs"
                       + (" plus the final flush (%.2f s)" % flush
                          if flush else "")))
        self.p()
        self.notes(notes)
        self.commands(name)

    # ------------------------------------------------------- sweeps
    def sweep(self, name):
        meta, notes = read_kv(os.path.join(self.d, name + ".meta"))
        title = meta.get("title", name)
        size = int(meta.get("size", "0") or 0)
        param = meta.get("param", "")
        self.p("### " + title)
        self.p()
        results = self.load_json(name)
        if not results:
            self.p("No result.")
            self.p()
            return
        good = [r for r in results
                if not any(c != 0 for c in r.get("exit_codes", []))]
        best = min(good, key=lambda r: r["median"]) if good else None
        self.p("| nbdcp %s | median s | min s | max s | runs | GiB/s | |" %
               meta.get("option", param))
        self.p("| --- | ---: | ---: | ---: | ---: | ---: | --- |")
        for r in results:
            v = r.get("parameters", {}).get(param, r["command"])
            bad = sum(1 for c in r.get("exit_codes", []) if c != 0)
            mark = "FAILED %d runs" % bad if bad else (
                "best" if r is best else "")
            self.p("| %s | %s | %s | %s | %d | %s | %s |" % (
                v, fmt_s(r["median"]), fmt_s(r["min"]), fmt_s(r["max"]),
                len(r["times"]), fmt_rate(size, r["median"]), mark))
        self.p()
        self.notes(notes)
        self.commands(name)

    # ------------------------------------------------------- all
    def machine_table(self):
        m = self.machine
        rows = [
            ("date", m.get("date")),
            ("CPUs (nproc)", m.get("host_nproc")),
            ("CPU model", m.get("cpu")),
            ("memory", m.get("memory")),
            ("kernel", m.get("kernel")),
            ("OS", m.get("os")),
            ("nbdcp", "%s (git %s)" % (m.get("nbdcp", "").strip(),
                                       m.get("nbdcp_git"))),
            ("nbdcopy", m.get("nbdcopy")),
            ("qemu-img", m.get("qemu_img")),
            ("nbdkit", m.get("nbdkit")),
            ("hyperfine", m.get("hyperfine")),
            ("scratch filesystem", m.get("scratch_fs")),
            ("load average at start / end", "%s / %s" % (
                m.get("load_start"), m.get("load_end"))),
            ("settings", m.get("settings")),
            ("suite run time", "%s s" % m.get("elapsed_s")),
        ]
        self.p("| | |")
        self.p("| --- | --- |")
        for k, v in rows:
            self.p("| %s | %s |" % (k, (v or "?").strip()))
        self.p()

    def summaries(self):
        """The floors, the CPU per GiB against nbdcopy, and the
        requests per GiB of the fragmented workloads."""
        if self.floor_summary:
            self.p("## Summary: wall time against the machine's floor")
            self.p()
            self.p("From the CPU rows: each run's floor is the CPU time of "
                   "copier and servers over the CPUs (plus the final flush "
                   "in 5), or the `disk` row's wall time in 4a. 1.00 is at "
                   "the floor; worst is the largest of the runs.")
            self.p()
            self.p("| row | tool | floor s | elapsed / floor | worst | runs |")
            self.p("| --- | --- | ---: | ---: | ---: | ---: |")
            for name, title, tool, fl, ratio, worst, n in self.floor_summary:
                self.p("| %s | %s | %s | %.2f | %.2f | %d |" % (
                    name, tool, fmt_s(fl), ratio, worst, n))
            self.p()
        if any(c.get("nbdcp") and c.get("nbdcopy")
               for _, c in self.cpu_summary):
            self.p("## Summary: copier CPU per GiB, nbdcp / nbdcopy")
            self.p()
            self.p("| row | nbdcp CPU s / GiB | nbdcopy CPU s / GiB "
                   "| nbdcp / nbdcopy |")
            self.p("| --- | ---: | ---: | ---: |")
            for name, c in self.cpu_summary:
                a, b = c.get("nbdcp"), c.get("nbdcopy")
                if a is not None and b:
                    self.p("| %s | %.3f | %.3f | %.2f |" % (
                        name, a, b, a / b))
            self.p()
            if any(n == "cpu-req" for n, _ in self.cpu_summary):
                self.p("On `cpu-req` both copy the same number of 4 KiB "
                       "requests, so its ratio is also the ratio of CPU "
                       "per request.")
                self.p()
        if self.req_summary:
            self.p("## Summary: requests to the source per GiB")
            self.p()
            self.p("| workload | nbdcp | nbdcopy | qemu-img "
                   "| nbdcp --no-extents | nbdcp / --no-extents |")
            self.p("| --- | ---: | ---: | ---: | ---: | ---: |")
            for name, c, gib in self.req_summary:
                cells = ["%.0f" % (c[t] / gib) if t in c and gib else "-"
                         for t in TOOLS + ["nbdcp--no-extents"]]
                self.p("| %s | %s | %s |" % (
                    name, " | ".join(cells),
                    fmt_ratio(c.get("nbdcp"), c.get("nbdcp--no-extents"))))
            self.p()

    def render(self):
        self.p("# nbdcp benchmark results")
        self.p()
        self.machine_table()
        # w2 before w10
        def natural(n):
            return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", n)]
        workloads = sorted(self.names("w"), key=natural)
        cpus = sorted(self.names("cpu-"), key=lambda n: (
            not n[4:5].isdigit(), natural(n)))
        sweeps = sorted(self.names("sweep-"), key=lambda n: int(
            read_kv(os.path.join(self.d, n + ".meta"))[0].get("order", 0)))
        body = Report(self.d)
        body.summary = self.summary
        body.req_summary = self.req_summary
        body.floor_summary = self.floor_summary
        body.cpu_summary = self.cpu_summary
        if workloads:
            body.p("## Workloads")
            body.p()
            body.p("Wall-clock seconds from one hyperfine invocation per "
                   "workload (all tools); ratio < 1 means nbdcp is faster.")
            body.p()
            for n in workloads:
                body.workload(n)
        if cpus:
            body.p("## CPU cost of the copier")
            body.p()
            body.p("Servers started apart; each copier under "
                   "`/usr/bin/time -f '%e %U %S %M'`; medians over the runs. "
                   "CPU s = user + sys.")
            body.p()
            for n in cpus:
                body.cpu(n)
        if sweeps:
            body.p("## nbdcp option sweeps")
            body.p()
            body.p("Other options at their defaults (-C 4, -R 16, "
                   "--request-size 1M, threads = min(CPUs, connections)).")
            body.p()
            for n in sweeps:
                body.sweep(n)
        if self.summary:
            self.p("## Summary: nbdcp / peer, ratio of medians")
            self.p()
            self.p("| workload | nbdcp s | nbdcopy s | qemu-img s "
                   "| nbdcp / nbdcopy | nbdcp / qemu-img |")
            self.p("| --- | ---: | ---: | ---: | ---: | ---: |")
            for title, s in self.summary:
                short = title
                cells = []
                for t in TOOLS:
                    v = s.get(t)
                    cells.append("-" if v is None else (
                        v if isinstance(v, str) else fmt_s(v)))
                ratios = []
                for t in PEERS:
                    a, b = s.get("nbdcp"), s.get(t)
                    if isinstance(a, float) and isinstance(b, float):
                        ratios.append(fmt_ratio(a, b))
                    else:
                        ratios.append("-")
                self.p("| %s | %s | %s |" % (
                    short, " | ".join(cells), " | ".join(ratios)))
            self.p()
        self.summaries()
        self.out.extend(body.out)
        return "\n".join(self.out) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: report.py RESULTS-DIR")
    sys.stdout.write(Report(sys.argv[1]).render())


if __name__ == "__main__":
    main()
