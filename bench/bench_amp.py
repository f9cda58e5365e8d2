"""Autocast costs: what the functional wrappers cost with autocast off, and an MLP forward in
float32 vs under CPU autocast (bfloat16), ember beside torch when installed.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_amp.py
"""
from __future__ import annotations

import sys
import time

import numpy as np


def best_of(fn, repeat=5, number=200):
    fn()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best * 1e6


def mlp_times(lib):
    lib.manual_seed(0)
    nn = lib.nn
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    x = lib.tensor(np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32))

    def plain():
        with lib.no_grad():
            model(x)

    def mixed():
        with lib.no_grad(), lib.autocast("cpu", dtype=lib.bfloat16):
            model(x)
    return best_of(plain), best_of(mixed)


def main():
    import ember
    import ember.nn.functional as F
    x, w, b = ember.randn(8, 16), ember.randn(4, 16), ember.randn(4)
    wrapped = best_of(lambda: F.linear(x, w, b), number=2000)
    bare = best_of(lambda: F.linear.__wrapped__(x, w, b), number=2000)
    print(f"F.linear, autocast off: {wrapped:.2f} us (unwrapped {bare:.2f} us, wrapper "
          f"{wrapped - bare:+.2f} us)")
    e32, e16 = mlp_times(ember)
    print(f"ember MLP forward 64x256: float32 {e32:.0f} us, autocast bf16 {e16:.0f} us")
    try:
        import torch
    except ImportError:
        return
    t32, t16 = mlp_times(torch)
    print(f"torch MLP forward 64x256: float32 {t32:.0f} us, autocast bf16 {t16:.0f} us")
    print(f"ratio ember/torch: float32 {e32 / t32:.2f}x, autocast bf16 {e16 / t16:.2f}x")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    main()
