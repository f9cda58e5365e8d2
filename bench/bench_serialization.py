"""Checkpoint benchmark: ember.save / ember.load against torch.save / torch.load (when
installed), in one run.

    python bench/bench_serialization.py [--mb 256] [--tensors 64]

A state dict of ``--tensors`` float32 tensors totalling ``--mb`` MiB, saved to and loaded from a
temporary directory (page cache warm after the first repeat). Also: ember.load of the file
torch wrote (the zip reader without torch), and the share of CRC-32 in ember's load.
Ratios are ember / torch: below 1 means ember is faster.
"""
from __future__ import annotations

import sys
import argparse
import os
import statistics
import tempfile
import time
import zlib

import numpy as np

import ember

try:
    import torch
except ImportError:  # torch is optional: the comparison column is left empty
    torch = None


def best(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=256)
    ap.add_argument("--tensors", type=int, default=64)
    args = ap.parse_args()
    n = args.mb * 1024 * 1024 // 4 // args.tensors
    rng = np.random.default_rng(0)
    arrays = {f"layer{i}.weight": rng.standard_normal(n, dtype=np.float32)
              for i in range(args.tensors)}
    sd = {k: ember.from_numpy(v) for k, v in arrays.items()}
    rows = []
    with tempfile.TemporaryDirectory() as d:
        ep, tp = os.path.join(d, "e.ember"), os.path.join(d, "t.pt")
        rows.append(("save", best(lambda: ember.save(sd, ep))[0],
                     best(lambda: torch.save({k: torch.from_numpy(v) for k, v in
                                              arrays.items()}, tp))[0] if torch else None))
        rows.append(("load", best(lambda: ember.load(ep))[0],
                     best(lambda: torch.load(tp))[0] if torch else None))
        if torch:
            rows.append(("load torch file", best(lambda: ember.load(tp))[0],
                         best(lambda: torch.load(tp))[0]))
        crc = best(lambda: [zlib.crc32(memoryview(a)) for a in arrays.values()])[0]
    print(f"{args.tensors} float32 tensors, {args.mb} MiB; seconds (best of 3)")
    print(f"{'case':<18}{'ember':>10}{'torch':>10}{'ratio':>8}")
    for name, e, t in rows:
        ratio = f"{e / t:8.2f}" if t else ""
        tcol = f"{t:10.3f}" if t else f"{'-':>10}"
        print(f"{name:<18}{e:10.3f}{tcol}{ratio}")
    print(f"CRC-32 of all tensor bytes: {crc:.3f} s ({args.mb / crc:.0f} MiB/s)")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    main()
