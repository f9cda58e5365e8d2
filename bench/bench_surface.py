"""Benchmarks of issue #25's heavy ops: ember (CPU, and OpenCL when available) against torch's
CPU (when installed) in one run, forward + backward of each.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_surface.py [--reps 10]

Ops: ctc_loss (T=50, N=16, C=20, S=10), cdist p=2 and p=1 ((8, 256, 64) x (8, 256, 64)),
interpolate bilinear (8, 16, 64, 64) -> 128x128, grid_sample bilinear (8, 16, 64, 64),
embedding_bag mean (10000 x 64 table, 4096 indices in 512 bags), unfold 3x3 (8, 16, 32, 32),
scatter_reduce amax (src 64 x 512 into 64 x 128). Timings interleave the libraries call by
call (load on the shared machine hits all alike); min and median of ``--reps`` calls, in ms.
Ratios are ember / torch: below 1 means ember is faster.
"""
from __future__ import annotations

import sys
import argparse
import statistics
import time

import numpy as np

import ember
import ember.nn.functional as EF

try:
    import torch
except ImportError:  # the comparison column stays empty without torch
    torch = None

rng = np.random.default_rng(0)


def _cases():
    """name -> (arrays, ember fn(lib_tensors), torch fn(lib_tensors)); each fn runs forward
    and backward and synchronises."""
    ctc_x = rng.standard_normal((50, 16, 20)).astype(np.float32)
    ctc_t = rng.integers(1, 20, (16, 10))
    in_len, tg_len = [50] * 16, [10] * 16
    a = rng.standard_normal((8, 256, 64)).astype(np.float32)
    b = rng.standard_normal((8, 256, 64)).astype(np.float32)
    img = rng.standard_normal((8, 16, 64, 64)).astype(np.float32)
    theta = np.tile(np.array([[0.9, 0.1, 0.05], [-0.1, 0.8, 0.0]], np.float32), (8, 1, 1))
    table = rng.standard_normal((10000, 64)).astype(np.float32)
    idx = rng.integers(0, 10000, 4096)
    offs = np.arange(0, 4096, 8)
    small = rng.standard_normal((8, 16, 32, 32)).astype(np.float32)
    sr_x = rng.standard_normal((64, 128)).astype(np.float32)
    sr_src = rng.standard_normal((64, 512)).astype(np.float32)
    sr_idx = rng.integers(0, 128, (64, 512))

    def ctc(F, lib, x, t):
        return F.ctc_loss(x.log_softmax(-1), t, in_len, tg_len)

    def cdist(p):
        return lambda F, lib, x, y: lib.cdist(x, y, p=p).sum()

    def interp(F, lib, x):
        return F.interpolate(x, size=(128, 128), mode="bilinear", align_corners=False).sum()

    def grid(F, lib, x, th):
        g = F.affine_grid(th, list(x.shape), align_corners=False)
        return F.grid_sample(x, g, align_corners=False).sum()

    def bag(F, lib, w, i, o):
        return F.embedding_bag(i, w, o, mode="mean").sum()

    def unfold(F, lib, x):
        return F.unfold(x, 3, padding=1).sum()

    def scatter_amax(F, lib, x, i, s):
        return x.scatter_reduce(1, i, s, "amax").sum()

    return {
        "ctc_loss": ([ctc_x, ctc_t], ctc, (0,)),
        "cdist p=2": ([a, b], cdist(2.0), (0, 1)),
        "cdist p=1": ([a, b], cdist(1.0), (0, 1)),
        "interpolate bilinear": ([img], interp, (0,)),
        "grid_sample bilinear": ([img, theta], grid, (0,)),
        "embedding_bag mean": ([table, idx, offs], bag, (0,)),
        "unfold 3x3": ([small], unfold, (0,)),
        "scatter_reduce amax": ([sr_x, sr_idx, sr_src], scatter_amax, (0, 2)),
    }


def _runner(lib, F, device, arrays, fn, diff):
    if lib is ember:
        ts = [ember.tensor(a, device=device) for a in arrays]
    else:
        ts = [torch.tensor(a) for a in arrays]
    for k in diff:
        ts[k].requires_grad_(True)

    def run():
        for k in diff:
            ts[k].grad = None
        out = fn(F, lib, *ts)
        out.backward()
        if lib is ember and device != "cpu":
            ember.opencl.synchronize()
    return run


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    devices = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])
    header = f"{'op (forward + backward)':26s}" + "".join(
        f"{'ember ' + d + ' min/med ms':>26s}" for d in devices) + \
        (f"{'torch cpu min/med ms':>24s}" + "".join(f"{'ratio ' + d:>14s}" for d in devices)
         if torch is not None else "")
    print(header)
    for name, (arrays, fn, diff) in _cases().items():
        runners = [(d, _runner(ember, EF, d, arrays, fn, diff)) for d in devices]
        if torch is not None:
            runners.append(("torch", _runner(torch, torch.nn.functional, "cpu", arrays, fn,
                                             diff)))
        for _, run in runners:
            run()  # warm-up: kernel compilation, caches
        times = {k: [] for k, _ in runners}
        for _ in range(args.reps):
            for k, run in runners:
                t0 = time.perf_counter()
                run()
                times[k].append((time.perf_counter() - t0) * 1e3)
        row = f"{name:26s}"
        for d in devices:
            row += f"{min(times[d]):>14.2f}/{statistics.median(times[d]):<11.2f}"
        if torch is not None:
            row += f"{min(times['torch']):>12.2f}/{statistics.median(times['torch']):<11.2f}"
            for d in devices:
                row += f"{statistics.median(times[d]) / statistics.median(times['torch']):>14.2f}"
        print(row, flush=True)


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    main()
