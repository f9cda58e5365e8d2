"""Every OpInfo sample through torch and ember: forward, method, in-place and float64 backward.

* forward  — ``op(input, *args, **kwargs)`` for each dtype of ``FORWARD_DTYPES`` the OpInfo supports;
* method   — the method variant (``x.add(y)``) against torch's method;
* inplace  — the in-place variant on a copy of the input (same layout): the result, the mutated
  input and that the input is returned, against torch's; where torch refuses (a broadcast input,
  a result type the input cannot hold), ember must refuse too;
* backward — float64 samples that require grad, through the OpInfo's ``gradcheck_wrapper`` and
  ``output_process_fn_grad``: ``autograd.grad`` of every differentiable output against the same
  random cotangents, torch's and ember's gradients for every input that requires grad (a None
  gradient equals zeros).
"""
from __future__ import annotations

import functools
import itertools

import torch

import ember

from . import exclusions
from .compare import (LOW_PRECISION, Mismatch, as_accurate_as_torch, assert_same,
                      assert_same_distribution, assert_same_metadata, op_tolerances, upcast)
from .convert import (copy_torch, ember_callable, is_test_helper, rebind, recording_init,
                      to_ember)
from .outcomes import FAIL, PASS, SKIP, XFAIL, XPASS, Outcome, classify, quiet, time_limit

FORWARD_DTYPES = (torch.float32, torch.float64, torch.int64, torch.bool, torch.complex64)
BACKWARD_DTYPE = torch.float64
SAMPLE_SECONDS = 60


def key(op):
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


@functools.lru_cache(maxsize=None)
def op_db():
    from torch.testing._internal.common_methods_invocations import op_db
    return tuple(op_db)


def find(name):
    for op in op_db():
        if key(op) == name:
            return op
    raise KeyError(name)


def _dtype_name(dtype):
    return str(dtype).split(".")[-1]


def _samples(op, dtype, requires_grad, limit=None):
    """The OpInfo's samples (the first ``limit``: the rest are not generated, which for some
    OpInfos is most of the cost)."""
    torch.manual_seed(0)       # sample inputs draw from torch's global generator
    with quiet(), recording_init():
        return list(itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=requires_grad),
                                     limit))


def _call(fn, sample, args=None):
    inp, a, kw = args if args is not None else (sample.input, sample.args, sample.kwargs)
    return fn(inp, *a, **kw)


def _ember_args(sample, device):
    return to_ember((sample.input, tuple(sample.args), dict(sample.kwargs)), device)


def _compare(rule, actual, expected, where, tolerances, sample=None):
    kind = rule.kind if rule is not None else "values"
    if kind == "gauge":
        actual = rule.align(actual, expected, sample)
    if kind == "reference":
        precise = rule.reference(sample, expected)
        try:
            assert_same(expected, precise, f"torch's {where} against the reference",
                        {precise.dtype: (rule.torch_error, 0.0)}, torch_side=True)
        except Mismatch as e:
            raise AssertionError(f"the reference is not torch's result: {e}") from None
        expected = precise
    if kind == "distribution" and rule.check is not None:
        rule.check(actual, expected, sample, where)
    elif kind == "distribution":
        assert_same_distribution(actual, expected, where)
    elif kind == "metadata":
        assert_same_metadata(actual, expected, where)
    else:
        assert_same(actual, expected, where, tolerances)


class _Recorder:
    """Builds an OpInfo's outcomes, applying its exclusion rule to each one."""

    def __init__(self, op):
        self.key = key(op)
        self.out: list[Outcome] = []

    def rule(self, area, dtype, device, sample=None):
        return exclusions.rule_for(self.key, area, _dtype_name(dtype), device, sample)

    def run(self, area, dtype, device, sample_id, check, sample=None):
        rule = self.rule(area, dtype, device, sample)
        if rule is not None and (rule.kind == "skip" or area == "backward" and rule.kind in (
                "distribution", "metadata")):
            return        # not compared (a random gradient depends on the draw)
        try:
            with quiet(), time_limit(SAMPLE_SECONDS):
                check(rule)
            status, cat, msg = PASS, "", ""
        except Exception as e:          # every failure is an outcome, not a crash of the sweep
            status, (cat, msg) = FAIL, classify(e)
        if rule is not None and rule.kind == "xfail":
            status = XFAIL if status == FAIL else XPASS
        self.out.append(Outcome(self.key, area, device, _dtype_name(dtype), sample_id,
                                status, cat, msg))


def _torch_outcome(fn, *args, **kwargs):
    try:
        with quiet():
            return True, fn(*args, **kwargs)
    except Exception as e:
        return False, e


def _pick(samples, max_samples, indices):
    picked = list(enumerate(samples))[:max_samples]
    return picked if indices is None else [(i, s) for i, s in picked if i in indices]


def check_forward(op, devices, dtypes=FORWARD_DTYPES, areas=("forward", "method", "inplace"),
                  max_samples=None, indices=None):
    """Forward, method and in-place outcomes of every sample of ``op`` in ``dtypes`` (the first
    ``max_samples``, or those at ``indices``)."""
    rec = _Recorder(op)
    tolerances = op_tolerances(op)
    supported = op.supported_dtypes("cpu")
    method = op.method_variant if "method" in areas else None
    inplace = op.inplace_variant if "inplace" in areas else None
    if all(rec.rule(a, d, dev) is not None and rec.rule(a, d, dev).kind == "skip"
           for a in areas for d in dtypes for dev in devices):
        return rec.out
    for dtype in dtypes:
        if dtype not in supported:
            continue
        try:
            samples = _samples(op, dtype, requires_grad=False,
                               limit=max_samples if indices is None else max(indices) + 1)
        except Exception:
            continue                      # torch cannot make samples for this dtype on cpu
        for i, sample in _pick(samples, max_samples, indices):
            sid = f"#{i} {sample.name}".strip()
            if "forward" in areas:
                ok, expected = _torch_outcome(_call, op.op, sample)
                if ok:
                    for device in devices:
                        rec.run("forward", dtype, device, sid, functools.partial(
                            _check_variant, op.op, op.name, sample, device, expected,
                            tolerances), sample)
            if method is not None:
                ok, expected = _torch_outcome(_call, method, sample)
                if ok:
                    for device in devices:
                        rec.run("method", dtype, device, sid, functools.partial(
                            _check_variant, method, op.name, sample, device, expected,
                            tolerances), sample)
            if inplace is not None:
                for device in devices:
                    rec.run("inplace", dtype, device, sid, functools.partial(
                        _check_inplace, inplace, op.name, sample, device, tolerances), sample)
    return rec.out


def _check_variant(fn, name, sample, device, expected, tolerances, rule):
    actual = _call(ember_callable(fn, name), sample, _ember_args(sample, device))
    try:
        _compare(rule, actual, expected, "output", tolerances, sample)
    except Mismatch as e:
        if not _low_precision_rounding(e, fn, sample, actual, expected, rule):
            raise


def _low_precision_rounding(mismatch, fn, sample, actual, expected, rule):
    """Whether a value mismatch of a float32/complex64 sample is rounding: ember's result is as
    accurate as torch's against torch's computation in double precision (compare.
    as_accurate_as_torch). A reason for a real mismatch is appended to its message."""
    if not mismatch.values_only or (rule is not None and rule.kind not in ("values", "xfail")) or \
            not any(isinstance(t, torch.Tensor) and t.dtype in LOW_PRECISION
                    for t in _leaves([sample.input, sample.args, sample.kwargs])):
        return False
    ok, precise = _torch_outcome(fn, upcast(sample.input), *upcast(tuple(sample.args)),
                                 **upcast(dict(sample.kwargs)))
    if not ok:
        return False
    why = as_accurate_as_torch(actual, expected, precise)
    if why is not None:
        mismatch.args = (f"{mismatch.args[0]}; {why}",)
        return False
    return True


def _check_inplace(fn, name, sample, device, tolerances, rule):
    t_args = (copy_torch(sample.input), copy_torch(tuple(sample.args)),
              copy_torch(dict(sample.kwargs)))
    ok, expected = _torch_outcome(_call, fn, sample, t_args)
    e_args = _ember_args(sample, device)
    efn = ember_callable(fn, name + "_")
    if not ok:
        try:
            _call(efn, sample, e_args)
        except Exception:
            return                          # both refuse
        raise AssertionError(f"torch refuses ({type(expected).__name__}: "
                             f"{str(expected).splitlines()[0][:120]}); ember does not")
    actual = _call(efn, sample, e_args)
    try:
        _compare(rule, actual, expected, "output", tolerances, sample)
    except Mismatch as e:
        if not _low_precision_rounding(e, fn, sample, actual, expected, rule):
            raise
    if isinstance(t_args[0], torch.Tensor):
        if expected is t_args[0] and actual is not e_args[0]:
            raise AssertionError("the in-place variant does not return its input")
        if actual is not e_args[0]:
            _compare(rule, e_args[0], t_args[0], "mutated input", tolerances, sample)


# ---------------------------------------------------------------- backward

def _leaves(obj):
    """Flatten nested lists/tuples/dicts to their leaves, in order."""
    if isinstance(obj, (list, tuple)):
        return [x for item in obj for x in _leaves(item)]
    if isinstance(obj, dict):
        return [x for k in obj for x in _leaves(obj[k])]
    return [obj]


def _differentiable(t):
    return isinstance(t, torch.Tensor) and t.requires_grad and \
        (t.is_floating_point() or t.is_complex())


def _cotangent(t, seed):
    g = torch.Generator().manual_seed(seed)
    if t.is_complex():
        return torch.complex(torch.randn(t.shape, generator=g, dtype=torch.float64),
                             torch.randn(t.shape, generator=g, dtype=torch.float64)).to(t.dtype)
    return torch.randn(t.shape, generator=g, dtype=torch.float64).to(t.dtype)


def check_backward(op, devices, max_samples=None, indices=None):
    """float64 gradient outcomes of every sample of ``op`` that has a differentiable input."""
    rec = _Recorder(op)
    dtype = BACKWARD_DTYPE
    if not op.supports_autograd or dtype not in op.supported_backward_dtypes("cpu"):
        return rec.out
    if all(rec.rule("backward", dtype, d) is not None for d in devices):
        if all(rec.rule("backward", dtype, d).kind in ("skip", "distribution", "metadata")
               for d in devices):
            return rec.out
    tolerances = op_tolerances(op)
    try:
        samples = _samples(op, dtype, requires_grad=True,
                           limit=max_samples if indices is None else max(indices) + 1)
    except Exception:
        return rec.out
    numeric = all(rec.rule("backward", dtype, d) is not None and
                  rec.rule("backward", dtype, d).kind == "numeric" for d in devices)
    for i, sample in _pick(samples, max_samples, indices):
        sid = f"#{i} {sample.name}".strip()
        reference = _torch_gradients(op, sample, numeric)
        if reference is None:
            continue
        for device in devices:
            rec.run("backward", dtype, device, sid, functools.partial(
                _check_gradients, op, sample, device, reference, tolerances), sample)
    return rec.out


def _torch_gradients(op, sample, numeric=False):
    """(positions of differentiable outputs, cotangents, input gradients, tolerances) or None;
    with ``numeric``, the gradients are central finite differences of torch's forward."""
    inputs = [t for t in _leaves([sample.input, sample.args, sample.kwargs])
              if isinstance(t, torch.Tensor) and t.requires_grad]
    if not inputs:
        return None
    try:
        with quiet():
            out = op.gradcheck_wrapper(op.op, sample.input, *sample.args, **sample.kwargs)
            out = sample.output_process_fn_grad(out)
            outs = _leaves(out)
            picked = [j for j, t in enumerate(outs) if _differentiable(t)]
            if not picked:
                return None
            cots = [_cotangent(outs[j], 1000 + j) for j in picked]
            if numeric:
                return picked, cots, _finite_differences(op, sample, inputs, picked, cots), \
                    NUMERIC_TOLERANCE
            grads = torch.autograd.grad([outs[j] for j in picked], inputs, cots,
                                        allow_unused=True)
    except Exception:
        return None          # torch itself cannot differentiate this sample: nothing to compare
    return picked, cots, [g.detach() if g is not None else torch.zeros_like(x)
                          for g, x in zip(grads, inputs)], None


NUMERIC_STEP = 1e-6
NUMERIC_TOLERANCE = {torch.float64: (1e-5, 1e-5)}


def _finite_differences(op, sample, inputs, picked, cots):
    """d<cotangents, outputs>/d input, by central differences of torch's forward (real inputs)."""
    def objective():
        out = op.gradcheck_wrapper(op.op, sample.input, *sample.args, **sample.kwargs)
        outs = _leaves(sample.output_process_fn_grad(out))
        return sum(float((outs[j].detach() * c).sum()) for j, c in zip(picked, cots))

    grads = []
    with torch.no_grad():
        for x in inputs:
            if x.is_complex():
                raise NotImplementedError("finite differences of complex inputs")
            g = torch.zeros(x.shape, dtype=x.dtype)
            for k in itertools.product(*map(range, x.shape)):
                v = float(x[k])
                x[k] = v + NUMERIC_STEP
                up = objective()
                x[k] = v - NUMERIC_STEP
                down = objective()
                x[k] = v
                g[k] = (up - down) / (2 * NUMERIC_STEP)
            grads.append(g)
    return grads


def _ember_wrap(fn):
    return rebind(fn) if is_test_helper(fn) else fn


def _check_gradients(op, sample, device, reference, tolerances, rule):
    picked, cots, expected, numeric_tolerances = reference
    tolerances = numeric_tolerances or tolerances
    inp, args, kwargs = _ember_args(sample, device)
    inputs = [t for t in _leaves([inp, args, kwargs])
              if isinstance(t, ember.Tensor) and t.requires_grad]
    wrapper = _ember_wrap(op.gradcheck_wrapper)
    out = wrapper(ember_callable(op.op, op.name), inp, *args, **kwargs)
    out = _ember_wrap(sample.output_process_fn_grad)(out)
    outs = _leaves(out)
    chosen = []
    for j in picked:
        if j >= len(outs) or not isinstance(outs[j], ember.Tensor):
            raise AssertionError(f"output {j}: torch's is a differentiable tensor, ember's is "
                                 f"{type(outs[j]).__name__ if j < len(outs) else 'missing'}")
        if not outs[j].requires_grad:
            raise AssertionError(f"output {j} does not require grad (torch's does)")
        chosen.append(outs[j])
    grads = ember.autograd.grad(chosen, inputs, [to_ember(c, device) for c in cots],
                                allow_unused=True)
    for n, (g, x, e) in enumerate(zip(grads, inputs, expected)):
        g = g if g is not None else ember.zeros_like(x)
        assert_same(g, e, f"grad of input {n}", tolerances)
