"""ember.compile against eager ember and torch (eager, and torch.compile when it runs here).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_compile.py

Cases (issue #19): sin(x) + cos(x) on 1M float32 elements, a 10-op elementwise chain on 1M,
and the compile (capture) time of each. Times are the minimum of interleaved rounds. ember's
compiler replays the captured ops without fusing them yet, so "compiled" measures the replay's
own cost beside eager."""
from __future__ import annotations

import time

import numpy as np

import ember

try:
    import torch
except ImportError:
    torch = None


def _best(fn, rounds=15, number=10):
    for _ in range(number * 2):     # warm up: OpenMP threads, page faults of fresh outputs
        fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best * 1e3


def sin_cos(lib, x):
    return lib.sin(x) + lib.cos(x)


def chain10(lib, x):
    y = x * 1.5 + 0.5
    y = lib.tanh(y) * y - x
    y = lib.exp(-y.abs()) + lib.sigmoid(y)
    return lib.relu(y) / (1.0 + x * x)


def main():
    data = np.random.default_rng(0).standard_normal(1 << 20).astype(np.float32)
    x = ember.tensor(data)
    tx = torch.tensor(data) if torch is not None else None
    print(f"{'case':<22}{'ember eager':>12}{'compiled':>10}{'torch':>9}{'torch.compile':>15}"
          f"{'compiled/torch':>16}{'capture ms':>12}")
    for name, fn in (("sin+cos 1M", sin_cos), ("10-op chain 1M", chain10)):
        compiled = ember.compile(lambda t, fn=fn: fn(ember, t))
        t0 = time.perf_counter()
        compiled(x)
        capture = (time.perf_counter() - t0) * 1e3
        eager = _best(lambda: fn(ember, x))
        fast = _best(lambda: compiled(x))
        ref = _best(lambda: fn(torch, tx)) if torch is not None else float("nan")
        tc = float("nan")
        if torch is not None:
            try:
                tcomp = torch.compile(lambda t, fn=fn: fn(torch, t))
                tcomp(tx)
                tc = _best(lambda: tcomp(tx))
            except Exception:  # noqa: BLE001 - no C compiler / inductor here: leave it empty
                tc = float("nan")
        best_torch = np.nanmin([ref, tc])
        print(f"{name:<22}{eager:>12.3f}{fast:>10.3f}{ref:>9.3f}{tc:>15.3f}"
              f"{fast / best_torch:>16.2f}{capture:>12.1f}")


if __name__ == "__main__":
    main()
