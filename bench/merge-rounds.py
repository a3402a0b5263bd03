#!/usr/bin/env python3
"""Merge hyperfine JSON files of several rounds into one.

    merge-rounds.py OUT.json ROUND.json...

bench/run.sh times the tools of a workload in rounds (one run of each
tool per round, the order rotating), so each round is its own hyperfine
JSON.  This joins them into the shape one hyperfine invocation would
have written: one result per command, in the order the command first
appears, with its times, exit codes and statistics over all rounds.
"""
import json
import statistics
import sys


def merge(paths):
    order, by_name = [], {}
    for path in paths:
        with open(path) as f:
            results = json.load(f)["results"]
        for r in results:
            name = r["command"]
            if name not in by_name:
                order.append(name)
                by_name[name] = {"command": name, "times": [],
                                 "exit_codes": [], "user": [], "system": []}
            m = by_name[name]
            m["times"] += r["times"]
            m["exit_codes"] += r.get("exit_codes", [0] * len(r["times"]))
            m["user"] += [r["user"]] * len(r["times"])
            m["system"] += [r["system"]] * len(r["times"])
    out = []
    for name in order:
        m = by_name[name]
        t = m["times"]
        out.append({
            "command": name,
            "mean": statistics.mean(t),
            "stddev": statistics.stdev(t) if len(t) > 1 else 0.0,
            "median": statistics.median(t),
            "user": statistics.mean(m["user"]),
            "system": statistics.mean(m["system"]),
            "min": min(t),
            "max": max(t),
            "times": t,
            "exit_codes": m["exit_codes"],
        })
    return {"results": out}


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: merge-rounds.py OUT.json ROUND.json...")
    merged = merge(sys.argv[2:])
    with open(sys.argv[1], "w") as f:
        json.dump(merged, f, indent=2)


if __name__ == "__main__":
    main()
