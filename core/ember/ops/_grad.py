"""Helpers the derivative formulas of every family share: reductions to a shape, conjugation,
zeros, masks, the gradient of values picked at indices.

Part of the rules layer under the op families: the ops these helpers call are the families'
primitives, reached through ``_primitives`` (filled in as the families load), never imported.
"""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor
from . import _primitives as P


def sum_to(g: Tensor, shape: tuple) -> Tensor:
    """Sum ``g`` down to ``shape`` (the inverse of broadcasting ``shape`` to ``g.shape``)."""
    gs = g._shape
    if gs == shape:
        return g
    lead = len(gs) - len(shape)
    if lead < 0:
        raise RuntimeError(f"sum_to_size: size {list(shape)} is not expandable to size {list(gs)}")
    dims = [d for d in range(lead) if gs[d] != 1]   # a size-1 dim sums to itself: a view
    for i, s in enumerate(shape):
        n = gs[lead + i]
        if s == 1 and n != 1:
            dims.append(lead + i)
        elif s != n:
            raise RuntimeError(f"sum_to_size: size {list(shape)} is not expandable to size "
                               f"{list(gs)}")
    r = P.sum_op(g, tuple(dims), True, g.dtype) if dims else g
    return r if r._shape == shape else P.view_op(r, shape)


def expandable(shape: tuple, to: tuple) -> bool:
    if len(shape) > len(to):
        return False
    lead = len(to) - len(shape)
    return all(s == 1 or s == to[lead + i] for i, s in enumerate(shape))


def conj(x):
    """Complex conjugate (identity for real values), as gradient formulas of complex ops need."""
    if isinstance(x, Tensor):
        return P.conj_physical_op(x, x.dtype) if x.dtype.category == _dtype.COMPLEX else x
    return x.conjugate() if isinstance(x, complex) else x


def zeros(shape, like: Tensor, dtype=None) -> Tensor:
    return P.full_op.on(like.device, tuple(shape), 0, dtype or like.dtype, like.device)


def ones(shape, like: Tensor, dtype=None) -> Tensor:
    return P.full_op.on(like.device, tuple(shape), 1, dtype or like.dtype, like.device)


def zeros_like(t: Tensor) -> Tensor:
    return zeros(t._shape, t)


def zero_grad(ctx, g, *args):
    """The backward of a piecewise-constant op (floor, sign, …): zero for every input."""
    return (zeros_like(g),)


def expand_to(g: Tensor, shape: tuple) -> Tensor:
    return g if g._shape == shape else P.expand_op(g, tuple(shape))


def cast(g: Tensor, dtype) -> Tensor:
    return g if g.dtype is dtype else P.to_copy_op(g, dtype)


def unsqueeze_dims(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """A reduction's output gradient with the reduced ``dims`` of ``shape`` put back as size 1."""
    if keepdim or not dims:
        return g
    kept = [1 if i in dims else s for i, s in enumerate(shape)]
    return P.view_op(g, tuple(kept))


def mask_fill_zero(g: Tensor, mask: Tensor) -> Tensor:
    """``g`` where ``mask`` is False, 0 where it is True (broadcast)."""
    return P.where(mask, 0.0, g)


def keep_where(g: Tensor, mask: Tensor) -> Tensor:
    """``g`` where ``mask`` is True, 0 elsewhere (broadcast)."""
    return P.where(mask, g, 0.0)


def evenly_distribute(g: Tensor, self: Tensor, value: Tensor) -> Tensor:
    """PyTorch's evenly_distribute_backward: the gradient of a value picked from all of
    ``self`` (max, min, median over everything) shared evenly between the elements equal to
    it — between the NaNs when it is NaN."""
    hit = self.eq(value).logical_or(self.isnan().logical_and(value.isnan()))
    return keep_where(g / hit.sum(), hit)


def scatter_selected(g: Tensor, indices: Tensor, shape: tuple, dim: int, keepdim=True) -> Tensor:
    """The gradient of values picked along ``dim`` of a tensor of ``shape`` at ``indices``
    (sort, max/min/mode along a dim): ``g`` added into zeros where the indices point.
    ``keepdim=False``: the picked dim was dropped from ``g`` and ``indices``."""
    if not shape:
        return g
    if not keepdim:
        g = g.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return P.scatter_into_zeros(g, shape, dim, indices)

