"""Helpers the formulas share: reductions to a shape, conjugation, zeros, masks."""
from __future__ import annotations

from ... import _dtype
from ..._tensor import Tensor
from ...ops import elementwise as E
from ...ops.conversion import to_copy_op
from ...ops.factories import full_op
from ...ops.reduction import sum_op
from ...ops.views import expand_op, view_op

mul = E.binary_api["mul"]
unary = E.unary_api
binary = E.binary_api


def sum_to(g: Tensor, shape: tuple) -> Tensor:
    """Sum ``g`` down to ``shape`` (the inverse of broadcasting ``shape`` to ``g.shape``)."""
    gs = g._shape
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    if lead < 0:
        raise RuntimeError(f"sum_to_size: size {list(shape)} is not expandable to size {list(gs)}")
    dims = list(range(lead))
    for i, s in enumerate(shape):
        n = gs[lead + i]
        if s == 1 and n != 1:
            dims.append(lead + i)
        elif s != n:
            raise RuntimeError(f"sum_to_size: size {list(shape)} is not expandable to size "
                               f"{list(gs)}")
    r = sum_op(g, tuple(dims), True, g.dtype) if dims else g
    return r if r._shape == shape else view_op(r, shape)


def expandable(shape: tuple, to: tuple) -> bool:
    if len(shape) > len(to):
        return False
    lead = len(to) - len(shape)
    return all(s == 1 or s == to[lead + i] for i, s in enumerate(shape))


def conj(x):
    """Complex conjugate (identity for real values), as gradient formulas of complex ops need."""
    if isinstance(x, Tensor):
        return unary["conj_physical"](x) if x.dtype.category == _dtype.COMPLEX else x
    return x.conjugate() if isinstance(x, complex) else x


def zeros(shape, like: Tensor, dtype=None) -> Tensor:
    return full_op.on(like.device, tuple(shape), 0, dtype or like.dtype, like.device)


def ones(shape, like: Tensor, dtype=None) -> Tensor:
    return full_op.on(like.device, tuple(shape), 1, dtype or like.dtype, like.device)


def zeros_like(t: Tensor) -> Tensor:
    return zeros(t._shape, t)


def expand_to(g: Tensor, shape: tuple) -> Tensor:
    return g if g._shape == shape else expand_op(g, tuple(shape))


def cast(g: Tensor, dtype) -> Tensor:
    return g if g.dtype is dtype else to_copy_op(g, dtype)


def unsqueeze_dims(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """A reduction's output gradient with the reduced ``dims`` of ``shape`` put back as size 1."""
    if keepdim or not dims:
        return g
    kept = [1 if i in dims else s for i, s in enumerate(shape)]
    return view_op(g, tuple(kept))


def mask_fill_zero(g: Tensor, mask: Tensor) -> Tensor:
    """``g`` where ``mask`` is False, 0 where it is True (broadcast)."""
    return E.where(mask, 0.0, g)


def keep_where(g: Tensor, mask: Tensor) -> Tensor:
    return E.where(mask, g, 0.0)
