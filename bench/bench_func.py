"""ember.func benchmark: ember vs torch.func (when installed), in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python bench/bench_func.py [--quick]

Cases (issue #14):
  * per-sample gradients of a 784-256-10 MLP, batch 64, ``vmap(grad(loss), in_dims=(None, 0, 0))``
    — against one ordinary batched forward+backward in ember (target: at most 3x) and against
    torch.func on the same case (goal: at most 1.5x);
  * ``jacrev`` of a 100 -> 100 tanh MLP (and ``jacfwd``, ``hessian`` of its sum), ember vs torch.
Times are medians of interleaved rounds (each round times every case once), so load changes on
a shared machine hit all columns alike.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.func import functional_call, grad, hessian, jacfwd, jacrev, vmap

try:
    import torch
    import torch.func as tfunc
except ImportError:  # torch is optional: its columns stay empty
    torch = tfunc = None


def per_call(fn, min_time):
    """Calls per round so one round lasts about ``min_time``."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - t0 >= min_time / 4:
            return max(1, int(n * 4 * min_time / max(time.perf_counter() - t0, 1e-9) / 4))
        n *= 2


def interleaved(fns, rounds, min_time):
    counts = {k: per_call(f, min_time) for k, f in fns.items()}
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            n = counts[k]
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            times[k].append((time.perf_counter() - t0) / n)
    return {k: statistics.median(v) for k, v in times.items()}


# -- per-sample gradients -------------------------------------------------------------------------
def per_sample_cases():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    params = {k: v.detach() for k, v in model.named_parameters()}
    x = ember.randn(64, 784)
    y = ember.randint(0, 10, (64,))

    def loss(p, xi, yi):
        return F.cross_entropy(functional_call(model, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))
    per_sample = vmap(grad(loss), in_dims=(None, 0, 0))

    def batched():
        model.zero_grad()
        F.cross_entropy(model(x), y).backward()

    # the floor: the per-example weight gradients are 64 outer products, 51 MB of float32 that
    # any implementation must write; numpy writing just them, as one broadcast multiply
    g_np = np.random.default_rng(0).standard_normal((64, 256)).astype(np.float32)
    x_np = np.random.default_rng(1).standard_normal((64, 784)).astype(np.float32)
    cases = {"ember vmap(grad)": lambda: per_sample(params, x, y),
             "ember batched fwd+bwd": batched,
             "numpy: outer products only": lambda: np.multiply(g_np[:, :, None],
                                                               x_np[:, None, :])}
    if torch is not None:
        torch.manual_seed(0)
        tm = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                 torch.nn.Linear(256, 10))
        tp = {k: v.detach() for k, v in tm.named_parameters()}
        tx, ty = torch.randn(64, 784), torch.randint(0, 10, (64,))

        def tloss(p, xi, yi):
            return torch.nn.functional.cross_entropy(
                tfunc.functional_call(tm, p, (xi.unsqueeze(0),)), yi.unsqueeze(0))
        t_per_sample = tfunc.vmap(tfunc.grad(tloss), in_dims=(None, 0, 0))
        cases["torch.func vmap(grad)"] = lambda: t_per_sample(tp, tx, ty)

        def t_batched():
            tm.zero_grad()
            torch.nn.functional.cross_entropy(tm(tx), ty).backward()
        cases["torch batched fwd+bwd"] = t_batched
    return cases


# -- Jacobians ------------------------------------------------------------------------------------
def jacobian_cases():
    ember.manual_seed(1)
    net = nn.Sequential(nn.Linear(100, 100), nn.Tanh(), nn.Linear(100, 100), nn.Tanh())
    params = {k: v.detach() for k, v in net.named_parameters()}
    x = ember.randn(100)

    def f(inp):
        return functional_call(net, params, (inp,))
    cases = {"ember jacrev": lambda: jacrev(f)(x),
             "ember jacfwd": lambda: jacfwd(f)(x),
             "ember hessian(sum)": lambda: hessian(lambda i: f(i).sum())(x)}
    if torch is not None:
        torch.manual_seed(1)
        tnet = torch.nn.Sequential(torch.nn.Linear(100, 100), torch.nn.Tanh(),
                                   torch.nn.Linear(100, 100), torch.nn.Tanh())
        tp = {k: v.detach() for k, v in tnet.named_parameters()}
        tx = torch.randn(100)

        def tf(inp):
            return tfunc.functional_call(tnet, tp, (inp,))
        cases["torch jacrev"] = lambda: tfunc.jacrev(tf)(tx)
        cases["torch jacfwd"] = lambda: tfunc.jacfwd(tf)(tx)
        cases["torch hessian(sum)"] = lambda: tfunc.hessian(lambda i: tf(i).sum())(tx)
    return cases


def main(argv=None):
    """Run every case and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args(argv)
    rounds = args.rounds or (3 if args.quick else 9)
    min_time = 0.05 if args.quick else 0.2
    if torch is not None:
        torch.set_num_threads(1)   # ember's numpy kernels use one BLAS thread per call here too
    ps = interleaved(per_sample_cases(), rounds, min_time)
    jc = interleaved(jacobian_cases(), rounds, min_time)
    print(f"ember.func benchmark (numpy {__import__('numpy').__version__}"
          + (f", torch {torch.__version__}" if torch is not None else "") + f"), {rounds} rounds")
    print("\nper-sample gradients, 784-256-10 MLP, batch 64")
    for k, v in ps.items():
        print(f"  {k:<26} {v * 1e3:8.2f} ms")
    r = ps["ember vmap(grad)"] / ps["ember batched fwd+bwd"]
    print(f"  vmap(grad) / batched fwd+bwd  {r:6.2f}x  (target <= 3x)")
    r = ps["numpy: outer products only"] / ps["ember batched fwd+bwd"]
    print(f"  outer products alone / batched {r:5.2f}x  (the floor of any per-sample method)")
    if "torch batched fwd+bwd" in ps:
        r = ps["torch.func vmap(grad)"] / ps["torch batched fwd+bwd"]
        print(f"  torch.func / torch batched     {r:5.2f}x")
    if "torch.func vmap(grad)" in ps:
        r = ps["ember vmap(grad)"] / ps["torch.func vmap(grad)"]
        print(f"  ember / torch.func            {r:6.2f}x  (goal <= 1.5x)")
    print("\nJacobians of a 100 -> 100 tanh MLP (2 layers)")
    for k, v in jc.items():
        print(f"  {k:<26} {v * 1e3:8.2f} ms")
    for name in ("jacrev", "jacfwd", "hessian(sum)"):
        if f"torch {name}" in jc:
            print(f"  ember / torch {name:<14}  {jc[f'ember {name}'] / jc[f'torch {name}']:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    sys.exit(main())
