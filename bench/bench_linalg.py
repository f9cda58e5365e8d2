"""Linear algebra and distributions benchmark: ember vs torch (and numpy), in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_linalg.py [--quick]
        [--device cpu|opencl] [--threads N]

Cases (issue #22), float32:
  * solve (with one right-hand side matrix of 8 columns), cholesky, qr, svd, eigh of a batch
    of 64 matrices of 64 x 64, and of one 512 x 512 matrix (targets: <= 1.2x torch on the CPU)
  * Normal and Categorical (100 classes): sample + log_prob of 1M elements (<= 1.5x torch)
The ratio column is ember / torch (time: below 1 means ember is faster); numpy's batched
``linalg`` is shown as a second reference for the decompositions. Times are the fastest of
several rounds (see ``timeit``).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import ember
from ember import distributions as E

try:
    import torch
except ImportError:  # the comparison column stays empty
    torch = None


def timeit(fn, *, min_time=0.3, repeat=7):
    """Seconds per call: the fastest of ``repeat`` rounds of at least ``min_time`` each (the
    machines these run on are shared: the minimum is the least disturbed estimate, taken the
    same way for every library)."""
    fn()
    n, dt = 1, 0.0
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
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
        rounds.append((time.perf_counter() - t0) / n)
    return min(rounds)


def _spd(a):
    return a @ np.swapaxes(a, -1, -2) + a.shape[-1] * np.eye(a.shape[-1], dtype=a.dtype)


def linalg_cases(device, min_time):
    rng = np.random.default_rng(0)
    sync = ember.opencl.synchronize if device == "opencl" else (lambda: None)
    rows = []
    for label, shape in (("batch 64 x 64x64", (64, 64, 64)), ("512x512", (512, 512))):
        a = rng.standard_normal(shape).astype(np.float32)
        b = rng.standard_normal(shape[:-1] + (8,)).astype(np.float32)
        s = _spd(a).astype(np.float32)
        A, B, S = (ember.tensor(x, device=device) for x in (a, b, s))
        ops = {
            "solve": (lambda: ember.linalg.solve(A, B),
                      (lambda: torch.linalg.solve(ta, tb)) if torch else None,
                      lambda: np.linalg.solve(a, b)),
            "cholesky": (lambda: ember.linalg.cholesky(S),
                         (lambda: torch.linalg.cholesky(ts)) if torch else None,
                         lambda: np.linalg.cholesky(s)),
            "qr": (lambda: ember.linalg.qr(A), (lambda: torch.linalg.qr(ta)) if torch else None,
                   lambda: np.linalg.qr(a)),
            "svd": (lambda: ember.linalg.svd(A, full_matrices=False),
                    (lambda: torch.linalg.svd(ta, full_matrices=False)) if torch else None,
                    lambda: np.linalg.svd(a, full_matrices=False)),
            "eigh": (lambda: ember.linalg.eigh(S), (lambda: torch.linalg.eigh(ts)) if torch else None,
                     lambda: np.linalg.eigh(s)),
        }
        if torch is not None:
            ta, tb, ts = torch.tensor(a), torch.tensor(b), torch.tensor(s)
        for name, (fe, ft, fn) in ops.items():
            def run_e(fe=fe):
                fe()
                sync()
            te = timeit(run_e, min_time=min_time)
            tt = timeit(ft, min_time=min_time) if ft else None
            tn = timeit(fn, min_time=min_time)
            rows.append((f"{name} {label}", te, tt, tn))
    return rows


def distribution_cases(device, min_time):
    n = 1_000_000
    sync = ember.opencl.synchronize if device == "opencl" else (lambda: None)
    rows = []
    loc = ember.zeros(n, device=device)
    scale = ember.ones(n, device=device)
    logits = ember.tensor(np.random.default_rng(1).standard_normal(100).astype(np.float32),
                          device=device)

    def normal_e():
        d = E.Normal(loc, scale)
        d.log_prob(d.sample())
        sync()

    def categorical_e():
        d = E.Categorical(logits=logits)
        d.log_prob(d.sample((n,)))
        sync()

    ft_n = ft_c = None
    if torch is not None:
        tloc, tscale = torch.zeros(n), torch.ones(n)
        tlogits = torch.tensor(logits.cpu().numpy())

        def ft_n():
            d = torch.distributions.Normal(tloc, tscale)
            d.log_prob(d.sample())

        def ft_c():
            d = torch.distributions.Categorical(logits=tlogits)
            d.log_prob(d.sample((n,)))
    for name, fe, ft in (("Normal sample+log_prob 1M", normal_e, ft_n),
                         ("Categorical sample+log_prob 1M", categorical_e, ft_c)):
        rows.append((name, timeit(fe, min_time=min_time),
                     timeit(ft, min_time=min_time) if ft else None, None))
    return rows


def _limit_threads(n):
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        sys.exit("--threads needs threadpoolctl")
    import scipy.linalg  # noqa: F401  (load scipy's BLAS, so that its pool is limited too)
    _limit_threads.ctl = threadpool_limits(limits=n)  # numpy's and scipy's OpenBLAS
    if torch is not None:
        torch.set_num_threads(n)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--quick", action="store_true", help="short timing rounds")
    p.add_argument("--threads", type=int, default=0,
                   help="BLAS/LAPACK threads of every library (default: their own choice); "
                        "1 compares the libraries' code on a machine others load")
    args = p.parse_args(argv)
    if args.threads:
        _limit_threads(args.threads)
    if os.environ.get("OPENBLAS_CORETYPE") or os.environ.get("OPENBLAS_L2_SIZE"):
        print("note: run with `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE` for comparable "
              "BLAS timings", file=sys.stderr)
    min_time = 0.05 if args.quick else 0.3
    rows = linalg_cases(args.device, min_time) + distribution_cases(args.device, min_time)
    print(f"{'case':34s} {'ember ms':>10s} {'torch ms':>10s} {'numpy ms':>10s} {'ember/torch':>12s}")
    for name, te, tt, tn in rows:
        ratio = f"{te / tt:12.2f}" if tt else f"{'':>12s}"
        print(f"{name:34s} {te * 1e3:10.3f} {tt * 1e3 if tt else float('nan'):10.3f} "
              f"{tn * 1e3 if tn else float('nan'):10.3f} {ratio}")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    main()
