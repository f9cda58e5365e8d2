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


def calls_per_round(fn, round_time, clock=time.perf_counter):
    """How many calls of ``fn`` fill about ``round_time`` seconds (after two warm-up calls)."""
    fn()
    fn()
    t0 = clock()
    fn()
    once = max(clock() - t0, 1e-7)
    n = 1
    while n * once < round_time / 8 and n < 1 << 20:  # tiny calls: measure a batch, not one
        n *= 4
        t0 = clock()
        for _ in range(n):
            fn()
        once = max((clock() - t0) / n, 1e-9)
    return max(1, int(round_time / once))


def interleaved(fns, *, rounds=15, round_time=0.05, label=None, clock=time.perf_counter):
    """{name: (min, median) seconds per call} for the callables ``fns`` ({name: fn}), timed in
    ``rounds`` rounds of about ``round_time`` seconds each, alternating between them.
    ``clock=time.process_time`` counts the process's CPU time instead of wall time: on a
    machine loaded past its cores, time spent descheduled then does not count (work on the
    process's other threads, such as OpenCL's, does). Progress: a bar in a terminal; on a pipe
    a line on stderr for a case that runs past a few seconds."""
    from ember.utils.progress import Progress
    label = label or " vs ".join(fns)
    with Progress("bench") as progress:
        task = progress.task(label, total=len(fns) * (rounds + 1), periodic_only=True)
        counts = {}
        for name, fn in fns.items():
            counts[name] = calls_per_round(fn, round_time, clock)
            task.advance(note=f"calibrated {name}")
        times = {name: [] for name in fns}
        for r in range(rounds):
            for name, fn in fns.items():
                n = counts[name]
                t0 = clock()
                for _ in range(n):
                    fn()
                times[name].append((clock() - t0) / n)
                task.advance(note=f"round {r + 1}/{rounds}")
    return {name: (min(t), statistics.median(t)) for name, t in times.items()}
