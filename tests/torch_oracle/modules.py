"""Every ModuleInfo input through ``torch.nn.X`` and ``ember.nn.X``.

For each module input, dtype (float32, float64) and mode (train, eval): the ember module is built
from the same constructor arguments, its parameters and buffers (matched by name, which must be
torch's names) get torch's values, and the forward results, the buffers after the forward (running
statistics) and — in float64 — the gradients of the inputs and parameters for the same random
cotangents are compared. Lazy modules are materialised by one forward on both sides first.

Constructor arguments that are torch modules (``nn.TransformerEncoder(encoder_layer, ...)``) are
rebuilt in ember from the arguments torch's module was constructed with, which ``recording_init``
notes while the inputs are made.
"""
from __future__ import annotations

import fnmatch
import functools

import torch

import ember

from . import exclusions
from .compare import assert_same, assert_same_distribution
from .convert import MissingName, ember_at, recording_init, to_ember
from .opinfo import _cotangent, _differentiable, _leaves
from .outcomes import FAIL, PASS, XFAIL, XPASS, Outcome, classify, quiet, time_limit

DTYPES = (torch.float32, torch.float64)
QUICK_INPUTS = 1
QUICK_DTYPES = (torch.float64,)          # float64 checks the gradients too


@functools.lru_cache(maxsize=None)
def module_db():
    from torch.testing._internal.common_modules import module_db
    return tuple(module_db)


def _ember_class(cls):
    return ember_at(f"torch.nn.{cls.__name__}")


def _inputs(info, dtype, training):
    torch.manual_seed(0)
    with quiet(), recording_init():
        return list(info.module_inputs_func(info, device="cpu", dtype=dtype,
                                            requires_grad=dtype == torch.float64,
                                            training=training))


def _build_torch(info, mi, dtype, training):
    c = mi.constructor_input
    torch.manual_seed(0)
    m = info.module_cls(*c.args, **c.kwargs).to(dtype)
    m.train(training)
    return m


def _copy_state(tm, em, device):
    tnames = [n for n, _ in tm.named_parameters()] + [n for n, _ in tm.named_buffers()]
    enames = [n for n, _ in em.named_parameters()] + [n for n, _ in em.named_buffers()]
    if sorted(tnames) != sorted(enames):
        raise AssertionError(f"parameter/buffer names {sorted(enames)} vs torch {sorted(tnames)}")
    evalues = dict(em.named_parameters()) | dict(em.named_buffers())
    with ember.no_grad():
        for name, t in list(tm.named_parameters()) + list(tm.named_buffers()):
            e = evalues[name]
            if e is None or t is None:
                if (e is None) != (t is None):
                    raise AssertionError(f"{name}: {e!r} vs torch {t!r}")
                continue
            if tuple(e.shape) != tuple(t.shape):
                raise AssertionError(f"{name}: shape {tuple(e.shape)} vs torch {tuple(t.shape)}")
            e.copy_(to_ember(t.detach(), device))


def check_input(info, mi, dtype, training, device, kind):
    fwd = mi.forward_input
    tm = _build_torch(info, mi, dtype, training)
    em = _ember_class(info.module_cls)(*to_ember(tuple(mi.constructor_input.args), device),
                                       **to_ember(dict(mi.constructor_input.kwargs),
                                                        device))
    em = em.to(device=device, dtype=to_ember(dtype))
    em.train(training)
    if info.is_lazy:       # materialise the parameters by one forward on each side
        with torch.no_grad(), quiet():
            tm(*fwd.args, **fwd.kwargs)
        with ember.no_grad():
            em(*to_ember(tuple(fwd.args), device), **to_ember(dict(fwd.kwargs), device))
    _copy_state(tm, em, device)

    e_args, e_kwargs = to_ember((tuple(fwd.args), dict(fwd.kwargs)), device)
    torch.manual_seed(0)
    ember.manual_seed(0)
    t_out = tm(*fwd.args, **fwd.kwargs)
    e_out = em(*e_args, **e_kwargs)
    same = assert_same_distribution if kind == "distribution" else assert_same
    same(e_out, t_out, "output")
    for name, b in tm.named_buffers():
        same(dict(em.named_buffers())[name], b, f"buffer {name} after forward")
    if dtype != torch.float64 or kind == "distribution":
        return
    t_inputs = [t for t in _leaves([fwd.args, fwd.kwargs]) if isinstance(t, torch.Tensor)
                and t.requires_grad]
    e_inputs = [t for t in _leaves([e_args, e_kwargs]) if isinstance(t, ember.Tensor)
                and t.requires_grad]
    t_params = [p for _, p in tm.named_parameters() if p.requires_grad]
    e_params = dict(em.named_parameters())
    e_params = [e_params[n] for n, p in tm.named_parameters() if p.requires_grad]
    t_outs, e_outs = _leaves(t_out), _leaves(e_out)
    picked = [j for j, t in enumerate(t_outs) if _differentiable(t)]
    if not picked or not t_inputs + t_params:
        return
    cots = [_cotangent(t_outs[j], 2000 + j) for j in picked]
    t_grads = torch.autograd.grad([t_outs[j] for j in picked], t_inputs + t_params, cots,
                                  allow_unused=True)
    for j in picked:
        if not isinstance(e_outs[j], ember.Tensor) or not e_outs[j].requires_grad:
            raise AssertionError(f"output {j} does not require grad (torch's does)")
    e_grads = ember.autograd.grad([e_outs[j] for j in picked], e_inputs + e_params,
                                  [to_ember(c, device) for c in cots], allow_unused=True)
    names = [f"input {i}" for i in range(len(t_inputs))] + \
        [n for n, p in tm.named_parameters() if p.requires_grad]
    for name, g, t, x in zip(names, e_grads, t_grads, e_inputs + e_params):
        g = g if g is not None else ember.zeros_like(x)
        t = t if t is not None else torch.zeros(tuple(x.shape), dtype=torch.float64)
        assert_same(g, t, f"grad of {name}")


def info_key(info):
    return info.name


def check_module(info, devices, quick=False):
    out = []
    k = info_key(info)
    for dtype in QUICK_DTYPES if quick else DTYPES:
        if dtype not in info.dtypes:
            continue
        for training in (True, False):
            try:
                inputs = _inputs(info, dtype, training)
            except Exception:
                continue
            for i, mi in enumerate(inputs[:QUICK_INPUTS if quick else None]):
                sid = f"#{i} {mi.desc} {'train' if training else 'eval'}"
                for device in devices:
                    rule = exclusions.module_rule(k, str(dtype).split(".")[-1], device)
                    if rule is not None and rule.kind == "skip":
                        continue
                    try:
                        with quiet(), time_limit(60):
                            check_input(info, mi, dtype, training, device,
                                        rule.kind if rule else "values")
                        status, cat, msg = PASS, "", ""
                    except Exception as e:
                        status, (cat, msg) = FAIL, classify(e)
                    if rule is not None and rule.kind == "xfail":
                        status = XFAIL if status == FAIL else XPASS
                    out.append(Outcome(k, "modules", device, str(dtype).split(".")[-1], sid,
                                       status, cat, msg))
    return out


def sweep(devices, pattern="*", progress=None, quick=False):
    import time

    from .sweep import quick_devices
    outcomes = []
    for i, info in enumerate(module_db()):
        if not fnmatch.fnmatch(info_key(info), pattern):
            continue
        t0 = time.perf_counter()
        got = check_module(info, quick_devices(i, devices) if quick else devices, quick)
        outcomes += got
        if progress:
            progress(info_key(info), got, time.perf_counter() - t0)
    return outcomes


__all__ = ["module_db", "check_module", "sweep", "MissingName"]
