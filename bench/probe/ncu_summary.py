#!/usr/bin/env python3
"""Summarise `ncu --csv --metrics ...` output (one row per kernel launch and metric): the median
of each metric per (kernel, grid size), with the launch count. The MoE path's prep kernel has
grid 1 + N (CTA 0 writes the tile table), the grouped call's N; the MoE GEMM's grid is the worst
case's. Usage: ncu_summary.py FILE.csv... (bench/h200.sh prepab)"""
import collections
import csv
import statistics
import sys

for path in sys.argv[1:]:
    rows = [r for r in csv.reader(open(path, errors="replace")) if len(r) > 10]
    if not rows:
        print(f"{path}: no ncu rows")
        continue
    col = {h: i for i, h in enumerate(rows[0])}
    launches = collections.defaultdict(dict)
    for r in rows[1:]:
        if r[col["Metric Name"]] == "Metric Name":
            continue
        key = (r[col["Kernel Name"]], r[col["Grid Size"]], r[col["ID"]])
        try:
            launches[key][r[col["Metric Name"]]] = float(r[col["Metric Value"]].replace(",", ""))
        except ValueError:
            pass
    groups = collections.defaultdict(lambda: collections.defaultdict(list))
    for (kern, grid, _), m in launches.items():
        for name, v in m.items():
            groups[(kern, grid)][name].append(v)
    print(path)
    for (kern, grid), m in sorted(groups.items()):
        n = len(next(iter(m.values())))
        vals = "  ".join(f"{k.split('.')[0]}={statistics.median(v):.4g}" for k, v in sorted(m.items()))
        print(f"  {kern:24s} grid {grid:14s} n={n:<4d} {vals}")
