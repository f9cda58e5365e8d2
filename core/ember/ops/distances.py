"""Distances between sets of vectors: ``cdist`` (the op ``_cdist_forward`` and its own
backward op ``_cdist_backward``), ``pdist``, ``dist``; the functional forms
``F.pairwise_distance``/``F.cosine_similarity`` are composites in ``nn/_distance.py``.

``_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode)``: x1 (B, P, M), x2 (B, R, M)
(batch dims already broadcast and flattened) -> (B, P, R), ``||x1[b, i] - x2[b, j]||_p``, p >= 0
(p = 0 counts differing coordinates, p = inf is the largest difference).
``_cdist_backward(Tensor grad, Tensor x1, Tensor x2, float p, Tensor cdist)`` is the gradient
for x1 (PyTorch's formulas: 0 where a distance is 0; the x2 gradient is the same op with the
operands swapped and the gradient transposed). Its composite (broadcast differences in ember
ops) gives double backward. The Euclidean "matrix multiply" path of ``compute_mode`` is a
composite, as in PyTorch (``|a|^2 - 2 a.b + |b|^2``).
"""
from __future__ import annotations

import math
import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from . import elementwise as _ew, factories as _fac, linalg as _la
from ..runtime.layout import broadcast_shapes
from .shape import cat

__all__ = ["cdist", "pdist", "dist"]

_COMPUTE_MODES = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": 1,
                  "donot_use_mm_for_euclid_dist": 2}


def _cdist_meta(x1, x2, p, compute_mode):
    if x1.ndim != 3 or x2.ndim != 3 or x1._shape[0] != x2._shape[0] or \
            x1._shape[2] != x2._shape[2]:
        raise RuntimeError(f"_cdist_forward: expected x1 (B, P, M) and x2 (B, R, M), got "
                           f"{list(x1._shape)} and {list(x2._shape)}")
    return (x1._shape[0], x1._shape[1], x2._shape[1]), x1.dtype


def _cdist_backward_meta(grad, x1, x2, p, cdist):
    return tuple(x1._shape), x1.dtype


def _diff(x1, x2):
    return x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (B, P, R, M)


def _cdist_composite(x1, x2, p, compute_mode):
    d = _diff(x1, x2).abs()
    if p == 0:
        return d.ne(0).sum(-1).to(x1.dtype)
    if math.isinf(p):
        return d.amax(-1) if d._shape[-1] else d.sum(-1)
    if p == 1:
        return d.sum(-1)
    if p == 2:
        return (d * d).sum(-1).sqrt()
    return d.pow(p).sum(-1).pow(1.0 / p)


def _cdist_backward_composite(grad, x1, x2, p, cdist):
    diff = _diff(x1, x2)
    g = grad.unsqueeze(-1)
    dist = cdist.unsqueeze(-1)
    if p == 0:
        return x1 * 0
    if p == 1:
        w = diff.sign()
    elif math.isinf(p):
        w = diff.sign() * diff.abs().eq(dist)
    elif p == 2:
        w = _ew.where(dist.eq(0), 0.0, diff / _ew.where(dist.eq(0), 1.0, dist))
    else:
        a = diff.abs()
        safe = _ew.where(dist.eq(0), 1.0, dist)
        core = diff * a.pow(p - 2) if p >= 2 else diff.sign() * a.pow(p - 1)
        w = _ew.where(dist.eq(0), 0.0, core / safe.pow(p - 1))
        if p < 1:
            w = _ew.where(diff.eq(0), 0.0, w)
    return (g * w).sum(-2)


def _cdist_derivative(ctx, g, x1, x2, p, compute_mode):
    d = ctx.result
    g1 = _cdist_backward_op(g, x1, x2, p, d) if ctx.needs(0) else None
    g2 = None
    if ctx.needs(1):
        g2 = _cdist_backward_op(g.transpose(1, 2).contiguous(), x2, x1, p,
                                d.transpose(1, 2).contiguous())
    return g1, g2


_cdist_forward_op = define(
    "_cdist_forward(Tensor x1, Tensor x2, float p, int? compute_mode) -> Tensor",
    meta=_cdist_meta, composite=_cdist_composite,
    derivative=Derivative(_cdist_derivative, save=("x1", "x2", "result"),
                          name="CdistBackward0"))
_cdist_backward_op = define(
    "_cdist_backward(Tensor grad, Tensor x1, Tensor x2, float p, Tensor cdist) -> Tensor",
    meta=_cdist_backward_meta, composite=_cdist_backward_composite)


def _euclid_mm(x1, x2):
    """PyTorch's ``_euclidean_dist``: one matrix product, clamped at 0 before the sqrt."""
    n1 = (x1 * x1).sum(-1, keepdim=True)
    n2 = (x2 * x2).sum(-1, keepdim=True)
    a = cat([x1 * -2, n1, n1.new_ones(n1._shape)], -1)
    b = cat([x2, n2.new_ones(n2._shape), n2], -1)
    return _la.matmul(a, b.transpose(-1, -2)).clamp_min(0).sqrt()


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Batched p-norm distances between the rows of ``x1`` (*, P, M) and ``x2`` (*, R, M)."""
    for name, t in (("X1", x1), ("X2", x2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"cdist(): argument '{name.lower()}' must be Tensor, not "
                            f"{type(t).__name__}")
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.ndim}D")
        if t.dtype.category != _dtype.FLOATING:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{_title(t.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"cdist: X1 and X2 must have the same dtype, got {x1.dtype.name} and "
                           f"{x2.dtype.name}")
    p = float(p)
    if p < 0 or math.isnan(p):
        raise RuntimeError("cdist only supports non-negative p values")
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    mode = _COMPUTE_MODES[compute_mode]
    batch = broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    P, R, M = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    nb = math.prod(batch)      # (not -1: an empty operand leaves it ambiguous)
    a = x1.expand(*batch, P, M).reshape(nb, P, M)
    b = x2.expand(*batch, R, M).reshape(nb, R, M)
    use_mm = p == 2.0 and (mode == 1 or (mode is None and (P > 25 or R > 25)))
    out = _euclid_mm(a, b) if use_mm else _cdist_forward_op(a, b, p, mode)
    return out.reshape(*batch, P, R)


def _title(d):
    return {"int64": "Long", "int32": "Int", "bool": "Bool", "uint8": "Byte",
            "int16": "Short", "int8": "Char"}.get(d.name, d.name)


def pdist(input, p=2):
    """The distances between every pair of rows of ``input`` (N, M), the upper triangle of
    ``cdist(input, input)`` in row order: (N * (N - 1) / 2,)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"pdist(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if input.dtype.category != _dtype.FLOATING:
        raise RuntimeError(f"pdist only supports floating-point dtypes, got: {_title(input.dtype)}")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    rows, cols = np.triu_indices(n, 1)
    full = _cdist_forward_op(input.unsqueeze(0), input.unsqueeze(0), float(p), 2)[0]
    flat = _fac.tensor(rows * n + cols, dtype=_dtype.int64, device=input.device)
    return full.reshape(-1).index_select(0, flat)


def dist(input, other, p=2):
    """``norm(input - other, p)`` over all elements (broadcast)."""
    return (input - other).norm(p)


Tensor.dist = dist
