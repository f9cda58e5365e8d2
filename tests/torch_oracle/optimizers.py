"""Every OptimizerInfo input through ``torch.optim.X`` and ``ember.optim.X``.

Both optimizers get the same float64 parameters (a weight and a bias; the weight alone for
optimizers of matrices) and minimise the same smooth loss (least squares plus a quartic penalty
on the weight: nonlinear, strongly convex, so one finite minimum where rounding differences
shrink instead of growing — on a loss whose minimum lies at infinity, LBFGS's twenty inner
iterations per step amplify a last-bit difference to the first digit) for ``STEPS``
steps (through a closure, which LBFGS needs and the others accept); after every step the
parameters and the closure's loss must equal torch's. Each optim_input runs with the default
implementation and with every implementation torch's OptimizerInfo lists for the CPU
(``foreach=True``, ``fused=True``). SparseAdam gets its sparse gradients from an embedding
lookup with ``sparse=True`` (in ember, built from the lookup's output gradient: ember's backward
gives dense gradients only).
"""
from __future__ import annotations

import fnmatch
import functools

import torch

import ember

from . import exclusions
from .compare import assert_same
from .convert import ember_at, to_ember
from .outcomes import FAIL, PASS, XFAIL, XPASS, Outcome, classify, quiet, time_limit

STEPS = 5
MATRIX_ONLY = {"Muon"}            # torch's Muon optimises 2-D parameters only


@functools.lru_cache(maxsize=None)
def optim_db():
    from torch.testing._internal.common_optimizers import optim_db
    return tuple(optim_db)


def _problem(name):
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(4, 5, generator=g, dtype=torch.float64)
    bias = torch.randn(4, generator=g, dtype=torch.float64)
    x = torch.randn(8, 5, generator=g, dtype=torch.float64)
    target = torch.randn(8, 4, generator=g, dtype=torch.float64)
    idx = torch.tensor([0, 2, 2, 3])
    params = [weight] if name in MATRIX_ONLY else [weight, bias]
    return params, x, target, idx


def _loss(lib, params, x, target, idx, sparse):
    F = lib.nn.functional
    if sparse:     # rows of the weight picked by an embedding lookup: sparse gradients
        return (F.embedding(idx, params[0], sparse=True).tanh() ** 2).sum()
    y = x @ params[0].T
    if len(params) > 1:
        y = y + params[1]
    return ((y - target) ** 2).mean() + 0.1 * (params[0] ** 4).mean()


def _ember_sparse_backward(weight, idx):
    """The loss of the embedding lookup, with the sparse gradient torch's embedding backward
    gives (the looked-up rows, uncoalesced) set as ``weight.grad``: ember's backward gives a
    dense gradient even for ``sparse=True`` (a known gap), so it is built from the gradient of
    the lookup's output."""
    rows = ember.nn.functional.embedding(idx, weight)
    loss = (rows.tanh() ** 2).sum()
    g_rows, = ember.autograd.grad(loss, rows)
    weight.grad = ember.sparse_coo_tensor(idx.unsqueeze(0), g_rows, tuple(weight.shape))
    return loss.detach()


def impls(info):
    out = [{}]
    if "foreach" in info.supported_impls:
        out.append({"foreach": True})
    if "fused" in info.supported_impls and "cpu" in info.supports_fused_on:
        out.append({"fused": True})
    return out


def check_input(info, kwargs, device):
    name = info.optim_cls.__name__
    sparse = info.only_supports_sparse_grads
    params, x, target, idx = _problem(name)
    t_params = [p.clone().requires_grad_(True) for p in params]
    e_params = [to_ember(p, device).requires_grad_(True) for p in params]
    e_data = [to_ember(t, device) for t in (x, target, idx)]
    t_opt = info.optim_cls(t_params, **kwargs)
    e_opt = ember_at(f"torch.optim.{name}")(e_params, **to_ember(kwargs, device))

    def t_closure():
        t_opt.zero_grad()
        loss = _loss(torch, t_params, x, target, idx, sparse)
        loss.backward()
        return loss

    def e_closure():
        e_opt.zero_grad()
        if sparse:
            return _ember_sparse_backward(e_params[0], e_data[2])
        loss = _loss(ember, e_params, *e_data, sparse)
        loss.backward()
        return loss

    for step in range(STEPS):
        t_loss = t_opt.step(t_closure)
        e_loss = e_opt.step(e_closure)
        assert_same(e_loss, t_loss, f"step {step}: closure loss")
        for i, (e, t) in enumerate(zip(e_params, t_params)):
            assert_same(e, t.detach(), f"step {step}: parameter {i}")


def check_optimizer(info, devices, quick=False):
    """Outcomes of every optim_input (``quick``: with the default implementation only)."""
    out = []
    name = info.optim_cls.__name__
    with quiet():
        inputs = info.optim_inputs_func(device="cpu", dtype=torch.float64)
    for oi in inputs:
        for impl in impls(info)[:1 if quick else None]:
            kwargs = {**oi.kwargs, **impl}
            sid = oi.desc + "".join(f", {k}" for k in impl)
            for device in devices:
                rule = exclusions.optimizer_rule(name, "float64", device)
                if rule is not None and rule.kind == "skip":
                    continue
                try:
                    with quiet(), time_limit(60):
                        check_input(info, kwargs, device)
                    status, cat, msg = PASS, "", ""
                except Exception as e:
                    status, (cat, msg) = FAIL, classify(e)
                if rule is not None and rule.kind == "xfail":
                    status = XFAIL if status == FAIL else XPASS
                out.append(Outcome(name, "optimizers", device, "float64", sid, status, cat, msg))
    return out


def sweep(devices, pattern="*", progress=None, quick=False):
    import time

    from .sweep import quick_devices
    outcomes = []
    for i, info in enumerate(optim_db()):
        name = info.optim_cls.__name__
        if not fnmatch.fnmatch(name, pattern):
            continue
        t0 = time.perf_counter()
        got = check_optimizer(info, quick_devices(i, devices) if quick else devices, quick)
        outcomes += got
        if progress:
            progress(name, got, time.perf_counter() - t0)
    return outcomes
