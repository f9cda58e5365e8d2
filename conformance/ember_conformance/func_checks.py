"""``ember.func`` checks of one op entry: ``vmap`` against a loop over the batch, and forward-mode
AD (``jvp``) against finite differences.

vmap: each sample's tensor arguments get a batch of examples (the sample's values, then the
same values rolled one and two places, so examples differ but stay in the op's domain and index
range), batched along dim 0, along dim 1, and with some arguments left unbatched (``None``);
``vmap(entry)`` must equal the entry run on each example, stacked. An in-place entry whose
target is unbatched while another argument is batched must raise vmap's error instead. Random
entries run with ``randomness='different'`` and are compared by shape and dtype.

jvp: on the CPU, ``ember.func.jvp`` of the entry's float64 samples along a fixed tangent against
central differences of the entry along it; on other backends, against the CPU's jvp.
"""
from __future__ import annotations

import numpy as np

import ember

from .checks import (Result, _flatten, _to_host, holds_values, layout_of, reads_values,
                     selected_samples)
from .tolerances import measure, tolerance

# Entries that write a batched value into a tensor they made themselves (unbatched): vmap refuses
# that, as PyTorch's does, so under vmap they must raise its in-place error. Each with why; an
# entry listed here that vmaps without the error fails, so the list cannot go stale.
VMAP_INPLACE_ERROR: dict[str, str] = {
    "copy_": "copies its input into ember.zeros made inside the entry",
    "nn.batch_norm": "training mode updates the running statistics it made, in place (use "
                     "ember.func.replace_all_batch_norm_modules_ under vmap)",
    "nn.batch_norm running stats": "returns running statistics updated in place",
    "native_batch_norm": "training mode updates the running statistics it made, in place",
    "native_batch_norm statistics": "training mode updates the running statistics it made, "
                                    "in place",
    "native_batch_norm_backward": "runs native_batch_norm in training mode first (running "
                                  "statistics it made, updated in place)",
    "_foreach_lerp_ weight > 0.5": "writes its first list, which a pattern leaves unbatched",
    "_fused_sgd_": "updates the momentum buffers it made (unbatched) from batched parameters",
    "_fused_adam_": "updates the moment buffers it made (unbatched) from batched parameters",
    "_fused_adam_ amsgrad": "updates the moment buffers it made (unbatched) from batched "
                            "parameters",
    "_fused_adam_capturable_": "updates the moment buffers and step counts it made "
                               "(unbatched) from batched parameters",
    "_fused_adam_capturable_ amsgrad": "updates the moment buffers and step counts it made "
                                       "(unbatched) from batched parameters",
}
INPLACE_MESSAGE = "is not possible because there exists a Tensor `other`"
# as_strided reads memory positions, which depend on the layout: an example taken from dim 1 of
# a batch is laid out differently from the same values alone, so these batch along dim 0 only
LAYOUT_DEPENDENT = {"as_strided", "as_strided_scatter"}

BATCH = 3
MAX_SAMPLES = 3
JVP_SAMPLES = 2
EPS = 1e-6


def _tensor_slots(args):
    """Positions of tensor arguments: i for a tensor, (i, j) for element j of a list."""
    slots = []
    for i, a in enumerate(args):
        if isinstance(a, ember.Tensor):
            slots.append((i, None))
        elif isinstance(a, (list, tuple)) and a and all(isinstance(x, ember.Tensor) for x in a):
            slots.extend((i, j) for j in range(len(a)))
    return slots


def _get(args, slot):
    i, j = slot
    return args[i] if j is None else args[i][j]


def _put(args, slot, value):
    args = list(args)
    i, j = slot
    if j is None:
        args[i] = value
    else:
        seq = list(args[i])
        seq[j] = value
        args[i] = type(args[i])(seq)
    return args


def _example(t, k):
    """Example ``k`` of the batch built from ``t``: its values rolled ``k`` places."""
    # contiguous like the stacked batch: as_strided reads memory positions, so an example laid
    # out as a transposed sample would read different values than its batched twin
    if k == 0 or t.numel() < 2:
        return t.clone(memory_format=ember.contiguous_format)
    flat = t.detach().reshape(-1)
    return ember.cat([flat[-k:], flat[:-k]]).reshape(t.shape)


def _patterns(n_slots, layout_dependent=False):
    """in_dims per tensor slot: all 0, all 1, and mixes with None."""
    inner = 0 if layout_dependent else 1
    out = [(0,) * n_slots] + ([] if layout_dependent else [(1,) * n_slots])
    if n_slots > 1:
        out.append((0,) + (None,) * (n_slots - 1))
        out.append((None,) + (inner,) * (n_slots - 1))
    return out


_RAISED_INPLACE = "raised vmap's in-place error"


def _is_inplace(info):
    return info.name.endswith("_") or "write through" in info.name


def check_vmap(info, dtype, device, only_sample=None) -> Result:
    from ember.func import vmap
    from ember.runtime.registry import registry
    if ember._dtype.as_dtype(dtype) not in registry.get(device.type).dtypes:
        return Result("vmap", info.name, dtype, "unsupported", 0.0,
                      f"{dtype} is not supported on {device}")
    if not info.vmap:
        return Result("vmap", info.name, dtype, "skip", 0.0,
                      "refused under vmap by design (no batching rule, as in torch.func)")
    checks = 0
    visited = 0
    raised_inplace = False
    for index, sample in selected_samples(info, dtype, only_sample):
        if only_sample is None and visited >= MAX_SAMPLES:
            break
        visited += 1
        args, kwargs = sample.build(device)
        slots = _tensor_slots(args)
        if not slots:   # factories: vmapped over an unrelated batched input
            ok, message = _factory_pattern(info, sample, device, vmap)
            checks += 1
            if not ok:
                return Result("vmap", info.name, dtype, "fail", float("inf"),
                              f"{sample.desc}: {message}", visited, checks=checks,
                              sample_index=index, sample=sample.desc)
            continue
        for dims in _patterns(len(slots), info.name in LAYOUT_DEPENDENT):
            got = _one_pattern(info, sample, device, slots, dims, vmap)
            if got is None:
                continue
            ok, message, dev = got
            if message == _RAISED_INPLACE:
                raised_inplace = True
                message = ""
            checks += 1
            if not ok:
                fields = dict(sample_index=index, sample=sample.desc)
                if dev is not None:
                    fields.update(max_abs=dev.max_abs, max_rel=dev.max_rel, rtol=dev.rtol,
                                  atol=dev.atol)
                return Result("vmap", info.name, dtype, "fail",
                              dev.worst if dev is not None else float("inf"),
                              f"{sample.desc}, in_dims={dims}: {message}", visited,
                              checks=checks, **fields)
    listed = VMAP_INPLACE_ERROR.get(info.name)
    if listed is not None and checks and not raised_inplace:
        return Result("vmap", info.name, dtype, "fail", float("inf"),
                      f"listed in VMAP_INPLACE_ERROR ({listed}) but no sample raised vmap's "
                      f"in-place error: remove it from the list", visited, checks=checks)
    status = "pass" if checks else "skip"
    return Result("vmap", info.name, dtype, status, 0.0,
                  "" if checks else "no sample ran example by example on this backend (the "
                                    "forward rows say why)", visited, checks=checks)


def _factory_pattern(info, sample, device, vmap):
    """A function of no tensor under vmap: the same output for every example, or (random
    entries) one draw per example with randomness='different' and an error with 'error'."""
    from ember.ops._batching import RANDOMNESS_ERROR
    args, kwargs = sample.build(device)
    dummy = ember.zeros(BATCH, device=device)
    f = vmap(lambda _: info.fn(*args, **kwargs),
             randomness="different" if info.random else "error")
    if not holds_values(device):   # a data-less device: the batched layout is all there is
        one, got = info.fn(*args, **kwargs), f(dummy)
        want = layout_of(one).replace("[", f"[{BATCH}, " if one.ndim else f"[{BATCH}", 1)
        return layout_of(got) == want, f"{layout_of(got)} under vmap, expected {want}"
    expected = [_to_host(info.fn(*args, **kwargs)) for _ in range(BATCH)]
    got = _to_host(f(dummy))
    stacked = np.stack(expected)
    if got.shape != stacked.shape or got.dtype != stacked.dtype:
        return False, (f"{got.dtype}{list(got.shape)} under vmap, expected "
                       f"{stacked.dtype}{list(stacked.shape)}")
    if info.random:
        try:
            vmap(lambda _: info.fn(*args, **kwargs))(dummy)
        except RuntimeError as e:
            if str(e) != RANDOMNESS_ERROR:
                return False, f"randomness='error' raised another error: {e}"
            return True, ""
        return False, "a random op ran under vmap(randomness='error') without its error"
    rtol, atol = tolerance(stacked.dtype.name, info.tolerances)
    dev = measure(got, stacked, rtol, atol)
    return dev.ok, dev.message


def _one_pattern(info, sample, device, slots, dims, vmap):
    """(agrees, message, deviation) for one in_dims pattern, or None when the loop itself
    can't run (examples the op rejects)."""
    args, kwargs = sample.build(device)
    lanes = []
    for k in range(BATCH):
        lane = list(args)
        for slot, d in zip(slots, dims):
            if d is not None:
                lane = _put(lane, slot, _example(_get(args, slot), k))
        lanes.append(lane)
    try:
        expected = [info.fn(*lane, **kwargs) for lane in lanes]
    except Exception:
        return None
    flat_expected = [_flatten(e) for e in expected]
    if any(not isinstance(x, ember.Tensor) for x in flat_expected[0]):
        return None
    shapes = [[tuple(x.shape) for x in f] for f in flat_expected]
    if any(s != shapes[0] for s in shapes):
        return None   # examples of different output shapes can't be stacked: nothing to compare

    fresh, _ = sample.build(device)
    batched, in_dims = [], []
    for slot, d in zip(slots, dims):
        t = _get(fresh, slot)
        if d is None:
            batched.append(t)
        else:
            batched.append(ember.stack([_example(t, k) for k in range(BATCH)], dim=min(
                d, t.ndim)))
        in_dims.append(None if d is None else min(d, t.ndim))

    def call(*tensors):
        a = list(fresh)
        for slot, t in zip(slots, tensors):
            a = _put(a, slot, t)
        return info.fn(*a, **kwargs)

    unbatched_target = (_is_inplace(info) and dims[0] is None and any(
        d is not None for d in dims[1:])) or info.name in VMAP_INPLACE_ERROR
    try:
        actual = vmap(call, in_dims=tuple(in_dims),
                      randomness="different" if info.random else "error")(*batched)
    except Exception as e:
        if unbatched_target and INPLACE_MESSAGE in str(e):
            return True, _RAISED_INPLACE, None
        if not holds_values(device) and reads_values(e, device):
            return None   # a data-less device: the op needs values under vmap
        return False, f"vmap raised {type(e).__name__}: {e}", None
    flat_actual = _flatten(actual)
    if len(flat_actual) != len(flat_expected[0]):
        return False, f"{len(flat_actual)} outputs, expected {len(flat_expected[0])}", None
    values = holds_values(device)
    for k, a in enumerate(flat_actual):
        if not values:   # a data-less device: the stacked loop's layout, without values
            one = flat_expected[0][k]
            want = layout_of(one).replace("[", f"[{BATCH}, " if one.ndim else f"[{BATCH}", 1)
            if layout_of(a) != want:
                return False, f"output {k}: {layout_of(a)}, expected {want}", None
            continue
        stacked = np.stack([_to_host(f[k]) for f in flat_expected])
        got = _to_host(a)
        if info.random:
            if got.shape != stacked.shape or got.dtype != stacked.dtype:
                return False, (f"output {k}: {got.dtype}{list(got.shape)}, expected "
                               f"{stacked.dtype}{list(stacked.shape)}"), None
            continue
        if got.shape != stacked.shape:
            return False, (f"output {k} has shape {list(got.shape)}, the stacked loop "
                           f"{list(stacked.shape)}"), None
        rtol, atol = tolerance(stacked.dtype.name, info.tolerances)
        dev = measure(got, stacked, rtol, atol)
        if not dev.ok:
            return False, f"output {k}: {dev.message}", dev
    return True, "", None


# -- jvp ------------------------------------------------------------------------------------------
def check_jvp(info, device, dtype=None, only_sample=None) -> Result:
    """CPU: jvp against central differences in float64; other backends: against the CPU."""
    if not info.differentiable or info.random:
        return Result("jvp", info.name, "-", "skip", message="not differentiable")
    cpu = device.type == "cpu"
    dtype = "float64" if cpu else (dtype or next((d for d in info.grad_dtypes
                                                  if d in info.dtypes), None))
    if dtype is None or dtype not in info.dtypes or dtype not in info.grad_dtypes:
        return Result("jvp", info.name, dtype or "-", "skip",
                      message=f"no {'float64 ' if cpu else ''}differentiable dtype")
    checks = 0
    visited = 0
    for index, sample in selected_samples(info, dtype, only_sample):
        if only_sample is None and checks >= JVP_SAMPLES:
            break
        visited += 1
        try:
            out = _jvp_sample(info, sample, device, cpu)
        except NotImplementedError as e:
            return Result("jvp", info.name, dtype, "skip", 0.0,
                          f"no forward derivative: {str(e)[:200]}", visited, checks=checks)
        if out is None:
            continue
        ok, message, dev = out
        checks += 1
        if not ok:
            fields = dict(sample_index=index, sample=sample.desc)
            if dev is not None:
                fields.update(max_abs=dev.max_abs, max_rel=dev.max_rel, rtol=dev.rtol,
                              atol=dev.atol)
            return Result("jvp", info.name, dtype, "fail",
                          dev.worst if dev is not None else float("inf"),
                          f"{sample.desc}: {message}", visited, checks=checks, **fields)
    return Result("jvp", info.name, dtype, "pass" if checks else "skip", 0.0,
                  "" if checks else "no sample with a differentiable floating result", visited,
                  checks=checks)


def _float_slots(args):
    return [s for s in _tensor_slots(args) if _get(args, s).is_floating_point()]


def _jvp_of(info, sample, device):
    """(primal outputs, tangent outputs, tangents) of the sample on ``device``, or None."""
    from ember.func import jvp
    from . import opdb
    args, kwargs = sample.build(device)
    slots = _float_slots(args)
    if not slots:
        return None
    primals = tuple(_get(args, s).detach().contiguous().clone() for s in slots)
    tangents = tuple(opdb.make_tensor(700 + k, p.shape, p.dtype, device)
                     for k, p in enumerate(primals))

    def f(*xs):
        a = list(args)
        for s, x in zip(slots, xs):
            a = _put(a, s, x)
        return tuple(o for o in _flatten(info.fn(*a, **kwargs)) if isinstance(o, ember.Tensor))
    try:
        f(*primals)
    except NotImplementedError:
        raise
    except Exception:
        return None
    out, tan = jvp(f, primals, tangents)
    return f, primals, tangents, out, tan


def _jvp_sample(info, sample, device, cpu):
    got = _jvp_of(info, sample, device)
    if got is None:
        return None
    f, primals, tangents, out, tan = got
    # outputs of lower precision can't be differenced at float64's step (as gradcheck)
    floats = [k for k, o in enumerate(out) if o.dtype is (ember.float64 if cpu else o.dtype)
              and o.is_floating_point()]
    if not floats:
        return None
    if cpu:
        with ember.no_grad():
            plus = f(*(p + EPS * t for p, t in zip(primals, tangents)))
            minus = f(*(p - EPS * t for p, t in zip(primals, tangents)))
        for k in floats:
            hi = _to_host(plus[k]).astype(np.float64)
            lo = _to_host(minus[k]).astype(np.float64)
            with np.errstate(invalid="ignore"):
                expected = np.asarray((hi - lo) / (2 * EPS))   # (0-d outputs: an array)
            # an output infinite on both sides (masked log_softmax's -inf) has no difference
            # quotient (inf - inf); its tangent is the formula's (torch's too), not checked here
            got_tan = _to_host(tan[k]).astype(np.float64, copy=True)
            flat = np.isinf(hi) & (hi == lo)
            expected[flat] = got_tan[flat] = 0.0
            dev = measure(got_tan, expected, 1e-4, 1e-5)
            if not dev.ok:
                return False, f"tangent of output {k} vs central differences: {dev.message}", dev
        return True, "", None
    ref = _jvp_of(info, sample, ember.device("cpu"))
    for k in floats:
        r = _to_host(ref[4][k])
        rtol, atol = tolerance(r.dtype.name, info.tolerances)
        dev = measure(_to_host(tan[k]), r, rtol * 10, atol * 10)
        if not dev.ok:
            return False, f"tangent of output {k} vs the CPU's: {dev.message}", dev
    return True, "", None
