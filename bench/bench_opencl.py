"""OpenCL backend benchmark: ember on ``opencl`` vs numpy, in one run.

    python bench/bench_opencl.py [--quick]

Cases (issue #5):
  * µs per ``a + b`` on 16-element float32 tensors: queued (the host-side cost of an op; the
    device is synchronized once per timing round) and synchronized after every op (latency)
  * ms for a 5-op elementwise chain on 1M-element float32 tensors, synchronized per chain
  * GFLOP/s of a 512x512 float32 matmul (target: at least 0.25 of numpy's)
  * ms for row-wise softmax, cumsum, sort and var on a 1024x1024 float32 tensor
Ratios are ember / numpy: for times below 1 means ember is faster, for GFLOP/s above 1 does.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import ember


def timeit(fn, *, min_time=0.2, repeat=5, after_round=lambda: None):
    """Median seconds per call over ``repeat`` rounds of at least ``min_time`` each;
    ``after_round`` runs inside each round's timing (a device synchronize)."""
    fn()
    after_round()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        after_round()
        dt = time.perf_counter() - t0
        if dt >= min_time / 4:
            break
        n *= 4
    n = max(1, int(n * (min_time / max(dt, 1e-9)) / 4))
    rounds = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        after_round()
        rounds.append((time.perf_counter() - t0) / n)
    return statistics.median(rounds)


def big_chain(a, b, c, tanh):
    t = a * b
    t = t + c
    t = tanh(t)
    t = t * 0.5
    return t - a


def cases(quick):
    rng = np.random.default_rng(0)
    mt = 0.05 if quick else 0.2
    sync = ember.opencl.synchronize
    rows = []
    a16, b16 = rng.standard_normal(16, dtype=np.float32), rng.standard_normal(16, dtype=np.float32)
    ea, eb = ember.tensor(a16, device="opencl"), ember.tensor(b16, device="opencl")
    t_np = timeit(lambda: a16 + b16, min_time=mt) * 1e6
    rows.append(("a + b, 16 float32, queued", "us",
                 timeit(lambda: ea + eb, min_time=mt, after_round=sync) * 1e6, t_np))

    def add_sync():
        ea + eb
        sync()
    rows.append(("a + b, 16 float32, synchronized", "us", timeit(add_sync, min_time=mt) * 1e6,
                 t_np))

    n = 1 << 20
    big = [rng.standard_normal(n, dtype=np.float32) for _ in range(3)]
    eb3 = [ember.tensor(x, device="opencl") for x in big]

    def chain():
        big_chain(*eb3, ember.tanh)
        sync()
    rows.append(("5-op chain, 1M float32", "ms", timeit(chain, min_time=mt) * 1e3,
                 timeit(lambda: big_chain(*big, np.tanh), min_time=mt) * 1e3))

    n = 512
    ma, mb = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
    ea, eb = ember.tensor(ma, device="opencl"), ember.tensor(mb, device="opencl")
    flop = 2 * n ** 3 / 1e9
    rows.append(("matmul 512x512 float32", "GFLOP/s",
                 flop / timeit(lambda: ea @ eb, min_time=mt, after_round=sync),
                 flop / timeit(lambda: ma @ mb, min_time=mt)))

    x = rng.standard_normal((1024, 1024), dtype=np.float32)
    ex = ember.tensor(x, device="opencl")

    def np_softmax(a):
        e = np.exp(a - a.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    for name, fe, fn in (("softmax(dim=1)", lambda: ex.softmax(1), lambda: np_softmax(x)),
                         ("cumsum(dim=1)", lambda: ex.cumsum(1), lambda: np.cumsum(x, 1)),
                         ("sort(dim=1)", lambda: ex.sort(1),
                          lambda: np.sort(x, 1, kind="stable")),
                         ("var(dim=0)", lambda: ex.var(0), lambda: x.var(0, ddof=1))):
        rows.append((f"{name}, 1024x1024 float32", "ms",
                     timeit(fe, min_time=mt, after_round=sync) * 1e3,
                     timeit(fn, min_time=mt) * 1e3))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing rounds")
    args = parser.parse_args(argv)
    if not ember.opencl.is_available():
        print(f"opencl unavailable: {ember.opencl.unavailable_reason()}")
        return 1
    rows = cases(args.quick)
    from rich.console import Console
    from rich.table import Table
    table = Table(title=f"ember opencl benchmark on {ember.opencl.get_device_name(0)} "
                        f"(numpy {np.__version__})")
    for col in ("case", "unit", "ember", "numpy", "ember/numpy"):
        table.add_column(col, justify="right" if col not in ("case", "unit") else "left")
    for case, unit, e, ref in rows:
        table.add_row(case, unit, f"{e:.3g}", f"{ref:.3g}", f"{e / ref:.2f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    sys.exit(main())
