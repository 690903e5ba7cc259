#!/usr/bin/env python3
"""Summarises a `lorastudio-bench train --trace FILE` trace: dispatches, barrier-separated stages, the serial GPU
time (each dispatch timed alone) and the critical path (the longest dispatch of each stage, summed: what an
unprofiled step can at best overlap to), by group and by kernel.  Usage: bench/trace_summary.py TRACE [TOP]"""
import collections
import sys


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    rows = []
    with open(path) as f:
        next(f)
        for line in f:
            p = line.rstrip("\n").split("\t")
            rows.append((p[1], p[2], float(p[3]), len(p) > 4 and p[4] == "barrier"))
    stages = []
    for r in rows:
        if r[3] or not stages:
            stages.append([])
        stages[-1].append(r)
    serial = sum(r[2] for r in rows)
    crit = collections.Counter()
    crit_k = collections.Counter()
    count_k = collections.Counter()
    stage_len = collections.Counter()
    for s in stages:
        m = max(s, key=lambda r: r[2])
        crit[m[0]] += m[2]
        crit_k[m[0] + " / " + m[1]] += m[2]
        count_k[m[0] + " / " + m[1]] += 1
        stage_len[len(s)] += 1
    total = sum(crit.values())
    print(f"{len(rows)} dispatches, {len(stages)} stages, serial {serial/1e3:.2f} ms, critical path {total/1e3:.2f} ms")
    print("stage sizes:", dict(sorted(stage_len.items())))
    print("critical path by group (ms):")
    for g, us in crit.most_common():
        print(f"  {g:24s} {us/1e3:8.2f}")
    print(f"critical path by kernel (ms, stages it leads, µs each):")
    for k, us in crit_k.most_common(top):
        print(f"  {k:60s} {us/1e3:8.2f} {count_k[k]:5d} {us/count_k[k]:8.2f}")


if __name__ == "__main__":
    main()
