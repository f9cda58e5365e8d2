"""Pass rates of ember against PyTorch's own test database (needs torch installed).

    python bench/torch_oracle_report.py                    # every area, cpu and opencl, full sweep
    python bench/torch_oracle_report.py --quick            # the default test run's slice
    python bench/torch_oracle_report.py --device cpu --area forward --ops 'linalg.*' --failures 30
    python bench/torch_oracle_report.py --json out.json    # every outcome, for later analysis

Areas: forward, method, inplace, backward (OpInfos: op_db), modules (ModuleInfos: module_db),
optimizers (OptimizerInfos: optim_db). What is not compared, or compared as distributions, is
tests/torch_oracle/exclusions.py; listed known gaps (xfail) count as failures here.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from dataclasses import asdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

OP_AREAS = ("forward", "method", "inplace", "backward")
ALL_AREAS = OP_AREAS + ("modules", "optimizers")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--device", action="append", help="cpu, opencl (default: every available)")
    p.add_argument("--area", action="append", choices=ALL_AREAS)
    p.add_argument("--ops", default="*", help="fnmatch pattern over OpInfo/ModuleInfo/Optimizer names")
    p.add_argument("--quick", action="store_true", help="the default test run's slice")
    p.add_argument("--failures", type=int, default=15, help="print the N largest failure groups")
    p.add_argument("--json", help="write every outcome to this file")
    p.add_argument("-v", "--verbose", action="store_true", help="print each subject as it runs")
    p.add_argument("--markdown", action="store_true", help="also print the table in Markdown")
    args = p.parse_args(argv)

    import ember
    from torch_oracle import sweep
    from torch_oracle.outcomes import failure_table, rates, stale_rules

    devices = args.device or ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])
    areas = tuple(args.area or ALL_AREAS)

    def progress(name, got, seconds):
        if args.verbose:
            bad = sum(1 for o in got if not o.passed and o.counted)
            print(f"  {name:55s} {len(got):5d} outcomes {bad:4d} failing {seconds:6.1f}s",
                  flush=True)

    t0 = time.perf_counter()
    outcomes, timings = [], {}
    op_areas = tuple(a for a in areas if a in OP_AREAS)
    if op_areas:
        got, timings = sweep.sweep_opinfos(devices, args.quick, args.ops, op_areas, progress)
        outcomes += got
    if "modules" in areas:
        from torch_oracle import modules
        outcomes += modules.sweep(devices, args.ops, progress, args.quick)
    if "optimizers" in areas:
        from torch_oracle import optimizers
        outcomes += optimizers.sweep(devices, args.ops, progress, args.quick)
    elapsed = time.perf_counter() - t0

    table = rates(outcomes)
    print(f"\nember vs torch {__import__('torch').__version__} test database "
          f"({'quick slice' if args.quick else 'full sweep'}; {elapsed:.0f} s)")
    print(f"{'area':12s}" + "".join(f"{d:>26s}" for d in devices))
    for area in areas:
        cells = []
        for d in devices:
            passed, counted = table.get((area, d), (0, 0))
            cells.append(f"{passed:7d}/{counted:<7d} {100 * passed / counted:6.2f}%"
                         if counted else f"{'-':>24s}")
        print(f"{area:12s}" + "".join(f"{c:>26s}" for c in cells))

    if args.markdown:
        print("\n| area | " + " | ".join(devices) + " |")
        print("|---|" + "---:|" * len(devices))
        for area in areas:
            cells = []
            for d in devices:
                passed, counted = table.get((area, d), (0, 0))
                cells.append(f"{100 * passed / counted:.2f}% ({passed}/{counted})" if counted
                             else "-")
            print(f"| {area} | " + " | ".join(cells) + " |")

    if args.failures:
        for d in devices:
            for area in areas:
                fails = failure_table(outcomes, area, d)
                if not fails:
                    continue
                print(f"\nlargest failure groups: {area} on {d}")
                for (subject, cat), n in fails.most_common(args.failures):
                    example = next(o for o in outcomes if o.subject == subject and o.area == area
                                   and o.device == d and o.category == cat and not o.passed)
                    print(f"  {n:5d}  {subject:40s} {cat:18s} {example.dtype:10s} "
                          f"{example.message[:110]}")
        cats = Counter((o.area, o.category) for o in outcomes if o.counted and not o.passed)
        if cats:
            print("\nfailures by category:")
            for (area, cat), n in sorted(cats.items()):
                print(f"  {area:12s} {cat:28s} {n:6d}")
    stale = stale_rules(outcomes)
    if stale:
        print("\nknown-gap (xfail) rules whose every sample passes now (remove them):")
        for subject, area in stale:
            print(f"  {subject} [{area}]")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"outcomes": [asdict(o) for o in outcomes], "timings": timings}, f)


if __name__ == "__main__":
    main()
