"""Timing shared by the benchmarks: many short rounds, interleaved between the contenders,
reporting the minimum (and median) time per call.

The machines these run on are shared: another process can take the core for most of a round.
The minimum over many rounds is the time the code itself needs; rounds of all contenders are
interleaved so that load changes hit them alike. ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE``
(see the developers' guide) before running.
"""
from __future__ import annotations

import statistics
import time


def calls_per_round(fn, round_time):
    """How many calls of ``fn`` fill about ``round_time`` seconds (after two warm-up calls)."""
    fn()
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    n = 1
    while n * once < round_time / 8 and n < 1 << 20:  # tiny calls: measure a batch, not one
        n *= 4
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        once = max((time.perf_counter() - t0) / n, 1e-9)
    return max(1, int(round_time / once))


def interleaved(fns, *, rounds=15, round_time=0.05):
    """{name: (min, median) seconds per call} for the callables ``fns`` ({name: fn}), timed in
    ``rounds`` rounds of about ``round_time`` seconds each, alternating between them."""
    counts = {name: calls_per_round(fn, round_time) for name, fn in fns.items()}
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            n = counts[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            times[name].append((time.perf_counter() - t0) / n)
    return {name: (min(t), statistics.median(t)) for name, t in times.items()}
