"""Checking one op entry × dtype on a backend against the CPU reference."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ember
from ember.dispatch.dispatcher import get_op
from ember.runtime.registry import registry

from .tolerances import compare, tolerance


@dataclass
class Result:
    suite: str          # "forward", "gradient" or a contract suite's name
    name: str           # op entry or contract case
    dtype: str          # dtype name or "-"
    status: str         # pass | fail | fallback | unsupported | skip
    worst: float = 0.0  # worst error as a multiple of the allowed tolerance
    message: str = ""
    samples: int = 0
    compared: int = -1  # forward: samples whose values were compared (-1: not counted)

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "fallback", "unsupported", "skip")


def _autograd_available() -> bool:
    return hasattr(ember, "autograd") and hasattr(ember.autograd, "grad")


def runs_on_fallback(info, backend) -> bool:
    if backend.name == "cpu":
        return False
    for name in info.covers:
        op = get_op(name)
        if name not in backend.kernels and op.composite is None:
            return True
    return False


def _flatten(out):
    if isinstance(out, ember.Tensor):
        return [out]
    if isinstance(out, (tuple, list)):
        items = []
        for o in out:
            items.extend(_flatten(o))
        return items
    return [out]


def _to_host(x):
    if isinstance(x, ember.Tensor):
        return x.detach().cpu().numpy() if x.requires_grad else x.cpu().numpy()
    return np.asarray(x)


def _call(info, device, sample, requires_grad=False):
    args, kwargs = sample.build(device)
    if requires_grad:
        for a in args:
            if isinstance(a, ember.Tensor) and a.is_floating_point():
                a.requires_grad_(True)
    return args, info.fn(*args, **kwargs)


def check_forward(info, dtype: str, device) -> Result:
    backend = registry.get(device.type)
    dt = ember._dtype.as_dtype(dtype)
    if dt not in backend.dtypes:
        return _check_unsupported(info, dtype, device)
    status = "fallback" if runs_on_fallback(info, backend) else "pass"
    worst, count, compared, first_rejection = 0.0, 0, 0, ""
    cpu = ember.device("cpu")
    for sample in info.samples(dtype):
        count += 1
        try:
            _, expected = _call(info, cpu, sample)
        except AssertionError as e:  # an entry's own check failed: the entry is broken
            return Result("forward", info.name, dtype, "fail", float("inf"),
                          f"{sample.desc}: the entry's check failed on the CPU reference: {e}",
                          count)
        except Exception as e:  # the reference rejects this input: the backend must too
            try:
                _call(info, device, sample)
            except type(e):
                first_rejection = first_rejection or f"{sample.desc}: {type(e).__name__}: {e}"
                continue
            except Exception as e2:
                return Result("forward", info.name, dtype, "fail", float("inf"),
                              f"{sample.desc}: CPU raised {type(e).__name__} but the backend "
                              f"raised {type(e2).__name__}: {e2}", count)
            return Result("forward", info.name, dtype, "fail", float("inf"),
                          f"{sample.desc}: CPU raised {type(e).__name__}: {e} but the backend "
                          f"did not", count)
        try:
            _, actual = _call(info, device, sample)
        except TypeError as e:
            if _names_unsupported_dtype(e, backend):
                # the sample's result needs a dtype the backend declares it lacks, and it said so
                return Result("forward", info.name, dtype, "unsupported", 0.0, str(e), count)
            return Result("forward", info.name, dtype, "fail", float("inf"),
                          f"{sample.desc}: {type(e).__name__}: {e}", count)
        except Exception as e:
            return Result("forward", info.name, dtype, "fail", float("inf"),
                          f"{sample.desc}: {type(e).__name__}: {e}", count)
        exp_items, act_items = _flatten(expected), _flatten(actual)
        if len(exp_items) != len(act_items):
            return Result("forward", info.name, dtype, "fail", float("inf"),
                          f"{sample.desc}: {len(act_items)} outputs, expected {len(exp_items)}",
                          count)
        for e_item, a_item in zip(exp_items, act_items):
            if isinstance(a_item, ember.Tensor) and a_item.device is not device:
                return Result("forward", info.name, dtype, "fail", float("inf"),
                              f"{sample.desc}: output on {a_item.device}, expected {device}",
                              count)
            e_np, a_np = _to_host(e_item), _to_host(a_item)
            if info.random:
                ok = e_np.shape == a_np.shape and e_np.dtype == a_np.dtype
                w, msg = (0.0, "") if ok else (float("inf"), "shape/dtype differ")
            else:
                rtol, atol = tolerance(e_np.dtype.name, info.tolerances)
                ok, w, msg = compare(a_np, e_np, rtol, atol)
            worst = max(worst, w)
            if not ok:
                return Result("forward", info.name, dtype, "fail", worst,
                              f"{sample.desc}: {msg}", count)
        compared += 1
    return Result("forward", info.name, dtype, status, worst,
                  first_rejection if not compared else "", count, compared=compared)


def _names_unsupported_dtype(error, backend) -> bool:
    text = str(error)
    return "is not supported on device" in text and any(
        d.name in text for d in ember._dtype.all_dtypes if d not in backend.dtypes)


def _check_unsupported(info, dtype, device) -> Result:
    for sample in info.samples(dtype):
        try:
            _call(info, device, sample)
        except (TypeError, RuntimeError) as e:
            if dtype in str(e) or "not supported" in str(e):
                return Result("forward", info.name, dtype, "unsupported", 0.0, str(e), 1)
            return Result("forward", info.name, dtype, "fail", float("inf"),
                          f"unsupported dtype gave an unclear error: {e}", 1)
        return Result("forward", info.name, dtype, "fail", float("inf"),
                      "the backend does not support this dtype but the op ran anyway", 1)
    return Result("forward", info.name, dtype, "unsupported", 0.0, "", 0)


def check_gradient(info, dtype: str, device) -> Result:
    if not (info.differentiable and dtype in info.grad_dtypes):
        return Result("gradient", info.name, dtype, "skip", message="not differentiable")
    if not _autograd_available():
        return Result("gradient", info.name, dtype, "skip", message="autograd not available")
    backend = registry.get(device.type)
    if ember._dtype.as_dtype(dtype) not in backend.dtypes:
        return Result("gradient", info.name, dtype, "unsupported")
    worst, count = 0.0, 0
    cpu = ember.device("cpu")
    for sample in info.samples(dtype):
        count += 1
        try:
            ref = _grads(info, sample, cpu)
        except Exception:
            continue  # inputs the op rejects are the forward check's business
        if ref is None:
            continue
        try:
            got = _grads(info, sample, device)
        except Exception as e:
            return Result("gradient", info.name, dtype, "fail", float("inf"),
                          f"{sample.desc}: {type(e).__name__}: {e}", count)
        for r, g in zip(ref, got):
            if (r is None) != (g is None):
                return Result("gradient", info.name, dtype, "fail", float("inf"),
                              f"{sample.desc}: gradient presence differs", count)
            if r is None:
                continue
            r_np = _to_host(r)  # gradients chain several kernels: 10x the forward tolerance
            rtol, atol = tolerance(r_np.dtype.name, info.tolerances)
            ok, w, msg = compare(_to_host(g), r_np, rtol * 10, atol * 10)
            worst = max(worst, w)
            if not ok:
                return Result("gradient", info.name, dtype, "fail", worst,
                              f"{sample.desc}: {msg}", count)
    status = "fallback" if runs_on_fallback(info, backend) else "pass"
    return Result("gradient", info.name, dtype, status, worst, "", count)


def check_finite_differences(info, device, max_samples=2) -> Result:
    """The CPU reference's own gradients against finite differences (float64 gradcheck)."""
    if not (info.differentiable and "float64" in info.grad_dtypes and
            "float64" in info.dtypes):
        return Result("gradcheck", info.name, "float64", "skip", message="not differentiable")
    if not _autograd_available():
        return Result("gradcheck", info.name, "float64", "skip",
                      message="autograd not available")
    count = 0
    for sample in info.samples("float64"):
        args, kwargs = sample.build(device)
        if not any(isinstance(a, ember.Tensor) and a.numel() for a in args):
            continue
        for a in args:
            if isinstance(a, ember.Tensor) and a.is_floating_point():
                a.requires_grad_(True)
        try:
            out = info.fn(*args, **kwargs)
        except Exception:
            continue  # inputs the op rejects
        if any(o.is_floating_point() and o.dtype is not ember.float64 for o in _flatten(out)
               if isinstance(o, ember.Tensor)):
            continue  # a lower-precision result can't be differenced at float64's step
        count += 1
        try:
            ember.autograd.gradcheck(lambda *xs: info.fn(*xs, **kwargs), tuple(args))
        except NotImplementedError as e:
            return Result("gradcheck", info.name, "float64", "skip", 0.0,
                          f"no derivative: {str(e)[:200]}", count)
        except Exception as e:
            return Result("gradcheck", info.name, "float64", "fail", float("inf"),
                          f"{sample.desc}: {type(e).__name__}: {str(e)[:300]}", count)
        if count >= max_samples:
            break
    return Result("gradcheck", info.name, "float64", "pass" if count else "skip", 0.0, "",
                  count)


def _grads(info, sample, device):
    args, out = _call(info, device, sample, requires_grad=True)
    inputs = [a for a in args if isinstance(a, ember.Tensor) and a.requires_grad]
    outs = [o for o in _flatten(out) if isinstance(o, ember.Tensor) and o.requires_grad]
    if not inputs or not outs:
        return None
    from . import opdb
    cotangents = [opdb.make_tensor(900 + i, o.shape, o.dtype, device) for i, o in
                  enumerate(outs)]
    return ember.autograd.grad(outs, inputs, cotangents, allow_unused=True)
