"""Autograd benchmark: ember vs torch (when installed), in one run.

    python bench/bench_autograd.py [--device cpu] [--quick]

Cases (issue #3):
  * µs for forward + backward of a 20-op graph on 16-element float32 tensors (the per-node
    overhead of recording and of the engine)
  * ms for forward + backward of an MLP 784-256-256-10, batch 64, float32 (matmul, add, relu,
    log_softmax, gather, mean)
  * the same MLP built from ``nn.Linear`` (one addmm per layer, AddmmBackward0 nodes)
  * for reference, the same 20-op forward without grad (the floor autograd adds to)
Ratios are ember / torch: below 1 means ember is faster.
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


def graph20(x, y):
    """20 ops mixing unary, binary, scalar and broadcast-free elementwise ops."""
    a = x * y
    b = a + x
    c = b.exp()
    d = c * 0.5
    e = d - y
    f = e.tanh()
    g = f * f
    h = g + a
    i = h.sigmoid()
    j = i * x
    k = j / 2.0
    m = k.relu()
    n = m + b
    o = n.sin()
    p = o * c
    q = p - 1.0
    r = q.abs()
    s = r * y
    u = s + 1.0
    return u.sum()


def mlp_loss(lib, x, labels, params):
    w1, b1, w2, b2, w3, b3 = params
    h = (x @ w1 + b1).relu()
    h = (h @ w2 + b2).relu()
    logp = (h @ w3 + b3).log_softmax(1)
    return -logp.gather(1, labels.unsqueeze(1)).mean()


def linear_mlp_loss(lib, x, labels, layers):
    h = layers[0](x).relu()
    h = layers[1](h).relu()
    logp = layers[2](h).log_softmax(1)
    return -logp.gather(1, labels.unsqueeze(1)).mean()


def linear_layers(lib, init, device=None):
    """nn.Linear layers holding the MLP's parameters (weights stored (out, in), as Linear's)."""
    layers = []
    for w, b in zip(init[0::2], init[1::2]):
        layer = lib.nn.Linear(w.shape[0], w.shape[1])
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(w.T.copy()))
            layer.bias.copy_(lib.tensor(b))
        layers.append(layer.to(device) if device is not None else layer)
    return layers


def cases(device, quick):
    rng = np.random.default_rng(0)
    min_time = 0.05 if quick else 0.2
    rows = []
    sync = (lambda: getattr(ember, device).synchronize()) if device != "cpu" else (lambda: None)

    def measure(fn):
        def run():
            fn()
            sync()
        return timeit(run, min_time=min_time)

    a16, b16 = (rng.standard_normal(16).astype(np.float32) for _ in range(2))
    ex = ember.tensor(a16, device=device, requires_grad=True)
    ey = ember.tensor(b16, device=device, requires_grad=True)

    def ember_fb():
        graph20(ex, ey).backward()

    t_e = measure(ember_fb)
    with ember.no_grad():
        t_e0 = measure(lambda: graph20(ex, ey))
    t_t = t_t0 = None
    if torch is not None:
        tx = torch.tensor(a16, requires_grad=True)
        ty = torch.tensor(b16, requires_grad=True)
        t_t = timeit(lambda: graph20(tx, ty).backward(), min_time=min_time)
        with torch.no_grad():
            t_t0 = timeit(lambda: graph20(tx, ty), min_time=min_time)
    rows.append(("20-op graph fwd+bwd, 16 float32", "us", t_e * 1e6, t_t and t_t * 1e6))
    rows.append(("20-op graph fwd (no_grad), 16 float32", "us", t_e0 * 1e6,
                 t_t0 and t_t0 * 1e6))

    sizes = [784, 256, 256, 10]
    shapes = []
    for i in range(3):
        shapes += [(sizes[i], sizes[i + 1]), (sizes[i + 1],)]
    init = [(rng.standard_normal(s) / np.sqrt(s[0])).astype(np.float32) for s in shapes]
    xb = rng.standard_normal((64, 784)).astype(np.float32)
    lb = rng.integers(0, 10, 64)
    e_params = [ember.tensor(p, device=device, requires_grad=True) for p in init]
    e_x, e_l = ember.tensor(xb, device=device), ember.tensor(lb, device=device)

    def ember_mlp():
        for p in e_params:
            p.grad = None
        mlp_loss(ember, e_x, e_l, e_params).backward()

    t_e = measure(ember_mlp)
    t_t = None
    if torch is not None:
        t_params = [torch.tensor(p, requires_grad=True) for p in init]
        t_x, t_l = torch.tensor(xb), torch.tensor(lb)

        def torch_mlp():
            for p in t_params:
                p.grad = None
            mlp_loss(torch, t_x, t_l, t_params).backward()

        t_t = timeit(torch_mlp, min_time=min_time)
        ember_mlp()
        torch_mlp()
        for p, q in zip(e_params, t_params):  # same gradients, or the timing means nothing
            np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=2e-3,
                                       atol=2e-5)
    rows.append(("MLP 784-256-256-10 fwd+bwd, batch 64", "ms", t_e * 1e3, t_t and t_t * 1e3))

    e_layers = linear_layers(ember, init, device)
    e_lparams = [p for layer in e_layers for p in layer.parameters()]

    def ember_linear_mlp():
        for p in e_lparams:
            p.grad = None
        linear_mlp_loss(ember, e_x, e_l, e_layers).backward()

    t_e = measure(ember_linear_mlp)
    t_t = None
    if torch is not None:
        t_layers = linear_layers(torch, init)
        t_lparams = [p for layer in t_layers for p in layer.parameters()]

        def torch_linear_mlp():
            for p in t_lparams:
                p.grad = None
            linear_mlp_loss(torch, t_x, t_l, t_layers).backward()

        t_t = timeit(torch_linear_mlp, min_time=min_time)
        ember_linear_mlp()
        torch_linear_mlp()
        for p, q in zip(e_lparams, t_lparams):
            np.testing.assert_allclose(p.grad.cpu().numpy(), q.grad.numpy(), rtol=2e-3,
                                       atol=2e-5)
    rows.append(("MLP of nn.Linear 784-256-256-10 fwd+bwd, batch 64", "ms", t_e * 1e3,
                 t_t and t_t * 1e3))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="shorter timing rounds")
    args = parser.parse_args(argv)
    rows = cases(args.device, args.quick)
    from rich.console import Console
    from rich.table import Table
    table = Table(title=f"ember autograd benchmark on {args.device} "
                        f"(torch {torch.__version__ if torch else '—'}, "
                        f"{torch.get_num_threads() if torch else '—'} torch threads)")
    for col in ("case", "unit", "ember", "torch", "ember/torch"):
        table.add_column(col, justify="right" if col not in ("case", "unit") else "left")

    def fmt(x):
        return "—" if x is None else f"{x:.3g}" if x < 100 else f"{x:.0f}"

    for case, unit, e, t in rows:
        table.add_row(case, unit, fmt(e), fmt(t), "—" if not t else f"{e / t:.2f}")
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # each result shows at once, also piped
    sys.exit(main())
