"""Entries for scaled dot-product attention: every mask kind (none, bool, float, causal with
L = S, L < S and L > S), grouped-query attention, explicit scales, rows no key takes part in,
leading batch dims that broadcast, and non-contiguous (batch, seq, heads, dim) layouts; forward
and gradients on every backend against the CPU.

With every SDPA backend enabled a call takes the fused kernels where the device has them (the
CPU's blocked kernel, OpenCL's flash kernel) and the math path otherwise, so the default entry
compares a backend's fused forward and backward with the CPU's. A float mask that requires
grad (the gradient check makes every float input require it) takes the math path on both, so
mask gradients are checked too. Separate entries pin the math path, call the fused op pair
directly (the backward kernel on its own), and run dropout (compared by shape: backends draw
their own numbers).
"""
from __future__ import annotations

import numpy as np

import ember

from . import FLOATS, OpInfo, SampleInput, make_tensor

LOOSE = {"float32": (1e-4, 1e-5)}


def _qkv(seed, shapes, dtype, dev, layout):
    """query, key, value of ``shapes``; "bshd" layout: made (batch, seq, heads, dim) and
    transposed to (batch, heads, seq, dim), as multi-head code does."""
    out = []
    for i, shape in enumerate(shapes):
        if layout == "bshd" and len(shape) == 4:
            b, h, s, d = shape
            t = make_tensor(seed + i, (b, s, h, d), dtype, dev, low=-1.5, high=1.5)
            out.append(t.transpose(1, 2))
        else:
            out.append(make_tensor(seed + i, shape, dtype, dev, low=-1.5, high=1.5,
                                   layout=layout))
    return out


def _mask(kind, shape, dtype, dev, seed):
    if kind is None:
        return None
    rng = np.random.default_rng(seed)
    if kind == "bool":
        m = rng.random(shape) > 0.35
        return ember.tensor(m, device=dev)
    if kind == "bool-empty-rows":  # some query rows see no key at all
        m = rng.random(shape) > 0.35
        m[..., 1, :] = False
        return ember.tensor(m, device=dev)
    m = rng.uniform(-1.0, 1.0, shape)
    if kind == "float-inf":
        m[..., 0] = -np.inf
    return ember.tensor(m.astype(ember._dtype.as_dtype(dtype).np), device=dev)


# (description, (query, key, value) shapes, mask kind and shape, kwargs, layout)
CASES = [
    ("plain 4-D", ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6)), None, {}, "contiguous"),
    ("bool mask broadcast (L, S)", ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)), ("bool", (5, 7)),
     {}, "contiguous"),
    ("bool mask with empty rows", ((2, 2, 4, 8), (2, 2, 6, 8), (2, 2, 6, 8)),
     ("bool-empty-rows", (2, 1, 4, 6)), {}, "contiguous"),
    ("float mask per head", ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)), ("float", (3, 5, 7)),
     {}, "contiguous"),
    ("float mask with -inf", ((1, 2, 5, 4), (1, 2, 6, 4), (1, 2, 6, 4)),
     ("float-inf", (1, 1, 5, 6)), {}, "contiguous"),
    ("causal L == S", ((2, 2, 9, 8), (2, 2, 9, 8), (2, 2, 9, 8)), None, {"is_causal": True},
     "contiguous"),
    ("causal L < S", ((1, 2, 4, 8), (1, 2, 9, 8), (1, 2, 9, 8)), None, {"is_causal": True},
     "contiguous"),
    ("causal L > S", ((1, 2, 9, 8), (1, 2, 4, 8), (1, 2, 4, 8)), None, {"is_causal": True},
     "contiguous"),
    ("gqa 6 heads over 2", ((2, 6, 5, 8), (2, 2, 7, 8), (2, 2, 7, 8)), None,
     {"enable_gqa": True}, "contiguous"),
    ("gqa causal with scale", ((1, 4, 6, 8), (1, 2, 6, 8), (1, 2, 6, 8)), None,
     {"enable_gqa": True, "is_causal": True, "scale": 0.2}, "contiguous"),
    ("scale 0.5, (batch, seq, heads, dim) layout", ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)),
     None, {"scale": 0.5}, "bshd"),
    ("3-D, transposed", ((3, 5, 8), (3, 6, 8), (3, 6, 4)), None, {}, "transposed"),
    ("2-D key broadcast over batch", ((2, 3, 5, 8), (7, 8), (2, 3, 7, 8)), ("bool", (5, 7)),
     {}, "contiguous"),
    ("5-D, causal", ((2, 2, 2, 4, 4), (2, 2, 2, 4, 4), (2, 2, 2, 4, 4)), None,
     {"is_causal": True}, "contiguous"),
]

# inputs the reference rejects: every backend must raise the same error type
BAD_CASES = [
    ("head dims differ", ((2, 3, 5, 8), (2, 3, 7, 6), (2, 3, 7, 8)), None, {}, "contiguous"),
    ("mask doesn't broadcast", ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)), ("bool", (5, 5)),
     {}, "contiguous"),
    ("causal with a mask", ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)), ("bool", (5, 7)),
     {"is_causal": True}, "contiguous"),
    ("gqa heads don't divide", ((2, 4, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8)), None,
     {"enable_gqa": True}, "contiguous"),
]


def _samples(cases):
    def gen(dtype):
        for i, (desc, shapes, mask, kw, layout) in enumerate(cases):
            def build(dev, shapes=shapes, mask=mask, kw=kw, layout=layout, i=i):
                q, k, v = _qkv(40 * i, shapes, dtype, dev, layout)
                m = None if mask is None else _mask(mask[0], mask[1], dtype, dev, 40 * i + 7)
                return (q, k, v, m), dict(kw)
            yield SampleInput(f"{dtype} {desc}", build)
    return gen


def _sdpa(q, k, v, mask, **kw):
    from ember.nn import functional as F
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)


def _sdpa_math(q, k, v, mask, **kw):
    from ember.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        return _sdpa(q, k, v, mask, **kw)


def _fused_pair(q, k, v, grad_out, is_causal=False, scale=0.3):
    """The fused op and its backward op called directly (4-D operands, no mask)."""
    from ember.ops.attention import fused_backward_op, fused_op
    out, lse = fused_op(q, k, v, None, is_causal, scale)
    return (out, lse) + tuple(fused_backward_op(grad_out, q, k, v, None, out, lse, is_causal,
                                                scale))


def _fused_samples(dtype):
    for i, (desc, shapes, kw) in enumerate([
            ("mha", ((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 6)), {}),
            ("gqa causal", ((1, 4, 6, 8), (1, 2, 6, 8), (1, 2, 6, 8)), {"is_causal": True}),
            ("transposed layout", ((2, 2, 4, 8), (2, 2, 4, 8), (2, 2, 4, 8)), {"scale": 1.0})]):
        def build(dev, shapes=shapes, kw=kw, i=i):
            q, k, v = _qkv(70 * i, shapes, dtype, dev, "bshd")
            g = make_tensor(70 * i + 5, q.shape[:3] + (v.shape[3],), dtype, dev)
            return (q, k, v, g), dict(kw)
        yield SampleInput(f"{dtype} {desc}", build)


def _dropout_samples(dtype):
    def build(dev):
        q, k, v = _qkv(3, ((2, 2, 6, 8), (2, 2, 6, 8), (2, 2, 6, 8)), dtype, dev, "contiguous")
        return (q, k, v, None), {"dropout_p": 0.4}
    yield SampleInput(f"{dtype} dropout 0.4", build)


FUSED = ("_scaled_dot_product_fused_attention", "_scaled_dot_product_fused_attention_backward")

OPS = [
    OpInfo("nn.functional.scaled_dot_product_attention", _sdpa, _samples(CASES + BAD_CASES),
           dtypes=FLOATS, covers=("scaled_dot_product_attention",) + FUSED,
           tolerances=dict(LOOSE)),
    OpInfo("nn.functional.scaled_dot_product_attention math", _sdpa_math,
           _samples(CASES + BAD_CASES),
           dtypes=FLOATS, covers=("_scaled_dot_product_attention_math",),
           tolerances=dict(LOOSE)),
    OpInfo("_scaled_dot_product_fused_attention pair", _fused_pair, _fused_samples,
           dtypes=FLOATS, covers=FUSED, differentiable=False, tolerances=dict(LOOSE)),
    OpInfo("nn.functional.scaled_dot_product_attention dropout", _sdpa, _dropout_samples,
           dtypes=FLOATS, covers=(), differentiable=False, random=True),
]
