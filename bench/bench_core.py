"""Core runtime benchmark: ember vs numpy (and torch when installed), in one run.

    python bench/bench_core.py [--device cpu] [--quick]

Cases (issue #2):
  * µs per ``a + b`` on 16-element float32 tensors (the per-op floor: dispatch + tensor creation)
  * µs per chain of 10 small ops on 16-element tensors
  * ms for a 5-op elementwise chain on 1M-element float32 tensors
  * ms and GFLOP/s for a 512×512 float32 matmul
Ratios are ember / reference: for times below 1 means ember is faster; for GFLOP/s above 1 does.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
import time

import numpy as np

import ember

sys.path.insert(0, str(Path(__file__).parent))
from _timing import interleaved  # noqa: E402

try:
    import torch
except ImportError:  # torch is optional: the comparison column is left empty
    torch = None


def timeit(fn, *, min_time=0.2, repeat=15):
    """Seconds per call: the minimum over ``repeat`` interleavable rounds (``_timing.py``;
    the machines are shared, the minimum is the code's own time)."""
    return interleaved({"fn": fn}, rounds=repeat, round_time=min_time / 4)["fn"][0]


def small_chain(a, b):
    x = a + b
    x = x * a
    x = x - b
    x = x.exp() if hasattr(x, "exp") else np.exp(x)
    x = x / 2.0
    x = x.neg() if hasattr(x, "neg") else np.negative(x)
    x = x + 1.0
    x = x * x
    x = x.abs() if hasattr(x, "abs") else np.abs(x)
    return x - a


def big_chain(a, b, c, tanh):
    t = a * b
    t = t + c
    t = tanh(t)
    t = t * 0.5
    return t - a


def cases(device, quick):
    rng = np.random.default_rng(0)
    rows = []
    sync = (lambda: getattr(ember, device).synchronize()) if device != "cpu" else (lambda: None)
    min_time = 0.05 if quick else 0.2

    def measure(fn, sync_after=True):
        def run():
            fn()
            if sync_after:
                sync()
        return timeit(run, min_time=min_time)

    a16, b16 = rng.standard_normal(16, dtype=np.float32), rng.standard_normal(16, dtype=np.float32)
    ea, eb = ember.tensor(a16, device=device), ember.tensor(b16, device=device)
    ta, tb = (torch.from_numpy(a16), torch.from_numpy(b16)) if torch else (None, None)
    rows.append(("a + b, 16 float32", "us",
                 measure(lambda: ea + eb) * 1e6, timeit(lambda: a16 + b16, min_time=min_time) * 1e6,
                 timeit(lambda: ta + tb, min_time=min_time) * 1e6 if torch else None))
    rows.append(("10-op chain, 16 float32", "us",
                 measure(lambda: small_chain(ea, eb)) * 1e6,
                 timeit(lambda: small_chain(a16, b16), min_time=min_time) * 1e6,
                 timeit(lambda: small_chain(ta, tb), min_time=min_time) * 1e6 if torch else None))

    n = 1 << 20
    big = [rng.standard_normal(n, dtype=np.float32) for _ in range(3)]
    eb3 = [ember.tensor(x, device=device) for x in big]
    tb3 = [torch.from_numpy(x) for x in big] if torch else None
    rows.append(("5-op chain, 1M float32", "ms",
                 measure(lambda: big_chain(*eb3, ember.tanh)) * 1e3,
                 timeit(lambda: big_chain(*big, np.tanh), min_time=min_time) * 1e3,
                 timeit(lambda: big_chain(*tb3, torch.tanh), min_time=min_time) * 1e3
                 if torch else None))

    m = rng.standard_normal((512, 512), dtype=np.float32)
    em = ember.tensor(m, device=device)
    tm = torch.from_numpy(m) if torch else None
    flop = 2 * 512 ** 3
    t_e = measure(lambda: ember.matmul(em, em))
    t_n = timeit(lambda: m @ m, min_time=min_time)
    t_t = timeit(lambda: tm @ tm, min_time=min_time) if torch else None
    rows.append(("matmul 512x512 float32", "ms", t_e * 1e3, t_n * 1e3,
                 t_t * 1e3 if torch else None))
    rows.append(("matmul 512x512 float32", "GFLOP/s", flop / t_e / 1e9, flop / t_n / 1e9,
                 flop / t_t / 1e9 if torch else None))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="shorter timing rounds")
    args = parser.parse_args(argv)
    if torch is not None:
        torch.set_num_threads(max(1, torch.get_num_threads()))
    rows = cases(args.device, args.quick)
    from rich.console import Console
    from rich.table import Table
    table = Table(title=f"ember core benchmark on {args.device} "
                        f"(numpy {np.__version__}, torch {torch.__version__ if torch else '—'})")
    for col in ("case", "unit", "ember", "numpy", "torch", "ember/numpy", "ember/torch"):
        table.add_column(col, justify="right" if col not in ("case", "unit") else "left")

    def fmt(x):
        return "—" if x is None else f"{x:.3g}" if x < 100 else f"{x:.0f}"

    for case, unit, e, n, t in rows:
        rn, rt = e / n, (e / t if t else None)
        table.add_row(case, unit, fmt(e), fmt(n), fmt(t), f"{rn:.2f}",
                      "—" if rt is None else f"{rt:.2f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    sys.exit(main())
