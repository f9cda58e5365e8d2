"""Checking one op entry × dtype on a backend against the CPU reference: forward values and
first-order gradients (``gradient``). The CPU's own derivatives against finite differences are in
``finite_differences.py``.

A data-less backend (``Backend.has_data`` False, as the meta device) has shapes and dtypes but no
values: its outputs and gradients are compared on those alone, and an op it refuses with
``NotImplementedError`` (one whose output shape depends on values) counts as unsupported."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import ember
from ember.dispatch.dispatcher import get_op
from ember.runtime.registry import registry

from .tolerances import measure, tolerance

INF = float("inf")


@dataclass
class Result:
    suite: str          # "forward", "gradient", "gradcheck", "gradgradcheck", a contract suite
    name: str           # op entry or contract case
    dtype: str          # dtype name or "-"
    status: str         # pass | fail | fallback | unsupported | skip
    worst: float = 0.0  # largest error as a multiple of the allowed tolerance (inf: no values)
    message: str = ""
    samples: int = 0    # samples visited
    compared: int = -1  # forward: samples whose values were compared (-1: not counted)
    checks: int = 0     # sample comparisons made: outputs (or raised errors) compared, or
    #                     derivatives differenced (see summary.UNITS)
    sample_index: int | None = None  # the failing sample, or the one with the largest error;
    sample: str = ""                 # ... its description (dtype, shapes, layout)
    max_abs: float | None = None     # that sample's largest |actual - expected|
    max_rel: float | None = None     # ... and |actual - expected| / |expected|
    rtol: float | None = None        # the tolerance it was held to
    atol: float | None = None
    fallback_ops: tuple = ()         # registry ops of the entry the backend runs on the CPU

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "fallback", "unsupported", "skip")


class _Worst:
    """The sample with the largest error so far, carried into the Result."""

    def __init__(self):
        self.worst, self.fields = 0.0, {}

    def add(self, index, sample, dev):
        if dev.worst > self.worst or not self.fields:
            self.worst = max(self.worst, dev.worst)
            self.fields = dict(sample_index=index, sample=sample.desc, max_abs=dev.max_abs,
                               max_rel=dev.max_rel, rtol=dev.rtol, atol=dev.atol)


def _autograd_available() -> bool:
    return hasattr(ember, "autograd") and hasattr(ember.autograd, "grad")


def ops_on_fallback(info, backend) -> tuple:
    """The registry ops ``info`` covers that ``backend`` runs on the CPU fallback."""
    if backend.name == "cpu" or not backend.cpu_fallback:
        return ()
    return tuple(name for name in info.covers
                 if name not in backend.kernels and get_op(name).composite is None)


def runs_on_fallback(info, backend) -> bool:
    return bool(ops_on_fallback(info, backend))


def selected_samples(info, dtype, only_sample=None):
    """(index, sample) pairs; ``only_sample`` keeps one index (the CLI's ``--sample``)."""
    for index, sample in enumerate(info.samples(dtype)):
        if only_sample is None or index == only_sample:
            yield index, sample


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


def holds_values(device) -> bool:
    """False for a data-less device: its checks compare shapes and dtypes only."""
    return getattr(registry.get(device.type), "has_data", True)


def reads_values(error, device) -> bool:
    """True when ``error`` is a data-less device refusing to produce or read a value (an op
    whose output shape depends on values, or ember reading one on the host)."""
    text = str(error)
    # said by the device (its data-dependent kernels, its to_numpy) or by Tensor.item(); any
    # other error (a missing kernel) stays a failure
    return "no values" in text or "no data" in text or f"on {device.type} tensors" in text


def layout_of(x) -> str:
    """``dtype[shape]`` of an output, read from its metadata (no value is read)."""
    if isinstance(x, ember.Tensor):
        return f"{str(x.dtype).replace('ember.', '')}{list(x.shape)}"
    a = np.asarray(x)
    return f"{a.dtype}{list(a.shape)}"


def _call(info, device, sample, requires_grad=False):
    args, kwargs = sample.build(device)
    if requires_grad:
        for a in args:
            if isinstance(a, ember.Tensor) and (a.is_floating_point() or a.is_complex()):
                a.requires_grad_(True)
    return args, info.fn(*args, **kwargs)


def _failed(suite, info, dtype, index, sample, message, *, checks, worst=INF, dev=None,
            fallback_ops=()):
    fields = dict(sample_index=index, sample=sample.desc)
    if dev is not None:
        fields.update(max_abs=dev.max_abs, max_rel=dev.max_rel, rtol=dev.rtol, atol=dev.atol)
    return Result(suite, info.name, dtype, "fail", worst, f"{sample.desc}: {message}",
                  index + 1, checks=checks, fallback_ops=fallback_ops, **fields)


def check_forward(info, dtype: str, device, only_sample=None) -> Result:
    backend = registry.get(device.type)
    dt = ember._dtype.as_dtype(dtype)
    if dt not in backend.dtypes:
        return _check_unsupported(info, dtype, device, only_sample)
    on_fallback = ops_on_fallback(info, backend)
    status = "fallback" if on_fallback else "pass"
    values = holds_values(device)
    compared, checks, first_rejection, worst = 0, 0, "", _Worst()
    cpu = ember.device("cpu")
    visited = 0
    for index, sample in selected_samples(info, dtype, only_sample):
        visited += 1

        def fail(message, **kw):
            return _failed("forward", info, dtype, index, sample, message, checks=checks + 1,
                           fallback_ops=on_fallback, **kw)
        try:
            _, expected = _call(info, cpu, sample)
        except AssertionError as e:  # an entry's own check failed: the entry is broken
            return fail(f"the entry's check failed on the CPU reference: {e}")
        except Exception as e:  # the reference rejects this input: the backend must too
            try:
                _call(info, device, sample)
                # a device may report a value error (an index out of range) at its next
                # synchronization, as CUDA's device-side asserts do
                backend.synchronize(device.index)
            except type(e):
                first_rejection = first_rejection or f"{sample.desc}: {type(e).__name__}: {e}"
                checks += 1
                continue
            except Exception as e2:
                return fail(f"the CPU raised {type(e).__name__} ({e}) but the backend raised "
                            f"{type(e2).__name__}: {e2}")
            if not values:   # the CPU's error may read values (a zero divisor): not comparable
                continue
            return fail(f"the CPU raised {type(e).__name__}: {e} but the backend did not")
        try:
            _, actual = _call(info, device, sample)
        except TypeError as e:
            if _names_unsupported_dtype(e, backend):
                # the sample's result needs a dtype the backend declares it lacks, and it said so
                return Result("forward", info.name, dtype, "unsupported", 0.0, str(e), visited,
                              checks=checks)
            return fail(f"{type(e).__name__}: {e}")
        except Exception as e:
            if values or not reads_values(e, device):
                return fail(f"{type(e).__name__}: {e}")
            return Result("forward", info.name, dtype, "unsupported", 0.0,
                          f"needs values: {type(e).__name__}: {e}", visited, checks=checks)
        exp_items, act_items = _flatten(expected), _flatten(actual)
        if len(exp_items) != len(act_items):
            return fail(f"{len(act_items)} outputs, expected {len(exp_items)}")
        for e_item, a_item in zip(exp_items, act_items):
            if isinstance(a_item, ember.Tensor) and a_item.device is not device:
                return fail(f"output on {a_item.device}, expected {device}")
            if info.random or not values:
                got, want = layout_of(a_item), layout_of(e_item)
                if got != want:
                    return fail(f"{'random ' if info.random else ''}output {got}, expected "
                                f"{want}")
                continue
            e_np, a_np = _to_host(e_item), _to_host(a_item)
            rtol, atol = tolerance(e_np.dtype.name, info.tolerances)
            dev = measure(a_np, e_np, rtol, atol)
            if not dev.ok:
                return fail(dev.message, worst=dev.worst, dev=dev)
            worst.add(index, sample, dev)
        compared += 1
        checks += 1
    return Result("forward", info.name, dtype, status, worst.worst,
                  first_rejection if not compared else "", visited, compared=compared,
                  checks=checks, fallback_ops=on_fallback, **worst.fields)


def _names_unsupported_dtype(error, backend) -> bool:
    text = str(error)
    return "is not supported on device" in text and any(
        d.name in text for d in ember._dtype.all_dtypes if d not in backend.dtypes)


def _check_unsupported(info, dtype, device, only_sample=None) -> Result:
    for index, sample in selected_samples(info, dtype, only_sample):
        try:
            _call(info, device, sample)
        except (TypeError, RuntimeError) as e:
            if dtype in str(e) or "not supported" in str(e):
                return Result("forward", info.name, dtype, "unsupported", 0.0, str(e), 1,
                              checks=1)
            return _failed("forward", info, dtype, index, sample,
                           f"a dtype the backend does not support gave an unclear error: {e}",
                           checks=1)
        return _failed("forward", info, dtype, index, sample,
                       "the backend does not support this dtype but the op ran anyway", checks=1)
    return Result("forward", info.name, dtype, "unsupported", 0.0, "", 0)


def check_gradient(info, dtype: str, device, only_sample=None) -> Result:
    if not (info.differentiable and dtype in info.grad_dtypes):
        return Result("gradient", info.name, dtype, "skip", message="not differentiable")
    if not _autograd_available():
        return Result("gradient", info.name, dtype, "skip", message="autograd not available")
    backend = registry.get(device.type)
    if ember._dtype.as_dtype(dtype) not in backend.dtypes:
        return Result("gradient", info.name, dtype, "unsupported")
    on_fallback = ops_on_fallback(info, backend)
    values = holds_values(device)
    checks, visited, worst = 0, 0, _Worst()
    cpu = ember.device("cpu")
    for index, sample in selected_samples(info, dtype, only_sample):
        visited += 1

        def fail(message, **kw):
            return _failed("gradient", info, dtype, index, sample, message, checks=checks + 1,
                           fallback_ops=on_fallback, **kw)
        try:
            ref = _grads(info, sample, cpu)
        except Exception:
            continue  # inputs the op rejects are the forward check's business
        if ref is None:
            continue
        try:
            got = _grads(info, sample, device)
        except TypeError as e:
            if _names_unsupported_dtype(e, backend):  # as the forward check: e.g. complex results
                return Result("gradient", info.name, dtype, "unsupported", 0.0, str(e), visited,
                              checks=checks)
            return fail(f"{type(e).__name__}: {e}")
        except Exception as e:
            if values or not reads_values(e, device):
                return fail(f"{type(e).__name__}: {e}")
            return Result("gradient", info.name, dtype, "unsupported", 0.0,
                          f"needs values: {type(e).__name__}: {e}", visited, checks=checks)
        for position, (r, g) in enumerate(zip(ref, got)):
            if (r is None) != (g is None):
                return fail(f"input {position}: the CPU's gradient is "
                            f"{'None' if r is None else 'a tensor'}, the backend's is "
                            f"{'None' if g is None else 'a tensor'}")
            if r is None:
                continue
            if not values:
                if layout_of(g) != layout_of(r):
                    return fail(f"gradient of input {position}: {layout_of(g)}, expected "
                                f"{layout_of(r)}")
                continue
            r_np = _to_host(r)  # gradients chain several kernels: 10x the forward tolerance
            rtol, atol = tolerance(r_np.dtype.name, info.tolerances)
            dev = measure(_to_host(g), r_np, rtol * 10, atol * 10)
            if not dev.ok:
                return fail(f"gradient of input {position}: {dev.message}", worst=dev.worst,
                            dev=dev)
            worst.add(index, sample, dev)
        checks += 1
    status = "fallback" if on_fallback else "pass"
    return Result("gradient", info.name, dtype, status, worst.worst, "", visited, checks=checks,
                  fallback_ops=on_fallback, **worst.fields)


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
