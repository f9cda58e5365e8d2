"""FFT benchmark (issue #13), in one run:

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_fft.py [--quick]

* CPU: ms for a complex64 ``fft`` of 2^20 points and a batched ``rfft2`` of (64, 512, 512)
  float32, ember vs torch (when installed) with the same thread count (``--threads``, default
  ``ember.get_num_threads()``); the ratio is ember / torch (target: at most 1.0).
* OpenCL: GFLOP/s (5 N log2 N / t) of complex64 ``fft`` for N = 2^10 ... 2^22 and a prime length
  (Bluestein), against the CPU backend's throughput on the same machine (target: at least 0.25).
  The batch is chosen so each transform covers at least 2^20 points (small lengths are
  measured batched, as they are used); the device is synchronized inside every timing.

Medians of several rounds; the machine may be shared, so run it twice before trusting a ratio.
"""
from __future__ import annotations

import sys
import argparse
import math
import statistics
import time

import numpy as np

import ember


def timeit(fn, *, sync=lambda: None, min_time=0.3, repeat=5):
    """Median seconds per call over ``repeat`` rounds of at least ``min_time`` each."""
    fn()
    sync()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        dt = time.perf_counter() - t0
        if dt >= min_time / 4:
            break
        n *= 2
    n = max(1, int(n * min_time / max(dt, 1e-9) / 4))
    rounds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        rounds.append((time.perf_counter() - t0) / n)
    return statistics.median(rounds)


def cpu_vs_torch(threads, quick):
    try:
        import torch
    except ImportError:
        torch = None
    ember.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    n = 1 << 20
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    y = rng.standard_normal((16 if quick else 64, 512, 512)).astype(np.float32)
    rows = [("fft complex64 2^20", lambda: ember.fft.fft(ember.from_numpy(x)),
             (lambda: torch.fft.fft(torch.from_numpy(x))) if torch else None),
            (f"rfft2 float32 {y.shape}", lambda: ember.fft.rfft2(ember.from_numpy(y)),
             (lambda: torch.fft.rfft2(torch.from_numpy(y))) if torch else None)]
    print(f"CPU ({threads} threads): ember vs torch "
          f"{torch.__version__ if torch else '(not installed)'}")
    print(f"{'case':32} {'ember ms':>10} {'torch ms':>10} {'ratio':>7}")
    for name, fe, ft in rows:
        te = timeit(fe)
        tt = timeit(ft) if ft else float("nan")
        print(f"{name:32} {te * 1e3:10.2f} {tt * 1e3:10.2f} {te / tt:7.2f}")


def opencl_vs_cpu(quick):
    if not ember.opencl.is_available():
        print(f"OpenCL: unavailable ({ember.opencl.unavailable_reason()})")
        return
    rng = np.random.default_rng(1)
    sync = ember.opencl.synchronize
    lengths = [1 << p for p in range(10, 23, 2 if quick else 1)] + [1000003 if not quick
                                                                     else 65537]
    print(f"OpenCL ({ember.opencl.get_device_name(0)}) vs the CPU backend: complex64 fft")
    print(f"{'N':>9} {'batch':>6} {'opencl GF/s':>12} {'cpu GF/s':>9} {'ratio':>7}")
    for n in lengths:
        batch = max(1, (1 << 20) // n)
        x = (rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))) \
            .astype(np.complex64)
        xo, xc = ember.tensor(x, device="opencl"), ember.tensor(x)
        to = timeit(lambda: ember.fft.fft(xo), sync=sync)
        tc = timeit(lambda: ember.fft.fft(xc))
        flops = 5 * n * math.log2(n) * batch
        print(f"{n:9d} {batch:6d} {flops / to / 1e9:12.2f} {flops / tc / 1e9:9.2f} "
              f"{tc / to:7.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer and smaller cases")
    p.add_argument("--threads", type=int, default=ember.get_num_threads())
    p.add_argument("--skip-opencl", action="store_true")
    args = p.parse_args()
    cpu_vs_torch(args.threads, args.quick)
    print()
    if not args.skip_opencl:
        opencl_vs_cpu(args.quick)


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    main()
