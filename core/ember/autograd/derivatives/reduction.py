"""Derivatives of reductions, scans and softmax (``ops/reduction.py``)."""
from __future__ import annotations

import math

from ...ops import elementwise as E
from ...ops.reduction import cumprod_op, cumsum_op, mean_op, sum_op
from . import derivative, nondifferentiable
from ._common import conj, expand_to, keep_where, ones, unsqueeze_dims, zeros_like

U, B = E.unary_api, E.binary_api

nondifferentiable("argmax", "argmin", "all", "any")


def _full(self, dim, keepdim, *rest):
    return len(dim) == self.ndim and not keepdim


def _overload(prefix):
    return lambda self, dim, keepdim, *rest: \
        f"{prefix}Backward{0 if _full(self, dim, keepdim) else 1}"


def _restore(g, shape, dim, keepdim):
    return expand_to(unsqueeze_dims(g, shape, dim, keepdim), shape)


@derivative("sum", complex_ok=True, name=_overload("Sum"))
def _sum(ctx, g, self, dim, keepdim, dtype):
    return (_restore(g, ctx.meta(0)[0], dim, keepdim),)


@derivative("nansum", save=("self",), name="NansumBackward0")
def _nansum(ctx, g, self, dim, keepdim, dtype):
    return (E.where(U["isnan"](self), 0.0, _restore(g, self._shape, dim, keepdim)),)


@derivative("mean", complex_ok=True, name=_overload("Mean"))
def _mean(ctx, g, self, dim, keepdim, dtype):
    shape = ctx.meta(0)[0]
    n = math.prod(shape[d] for d in dim) if shape else 1
    return (_restore(g, shape, dim, keepdim) / n,)


def _exclusive_products(x, dim):
    """prod of all other elements along ``dim``, for every element, without dividing (exact
    when some elements are 0)."""
    from ...ops.shape import cat, flip
    n = x._shape[dim]
    one = ones(x._shape[:dim] + (1,) + x._shape[dim + 1:], x)
    left = cumprod_op(cat([one, x.narrow(dim, 0, n - 1)], dim), dim, x.dtype)
    right = flip(cumprod_op(flip(cat([x.narrow(dim, 1, n - 1), one], dim), dim), dim,
                            x.dtype), dim)
    return left * right


@derivative("prod", save=("self",), name=_overload("Prod"), complex_ok=True)
def _prod(ctx, g, self, dim, keepdim, dtype):
    shape = self._shape
    if not shape:
        return (g,)
    g = _restore(g, shape, dim, keepdim)
    rest = [d for d in range(self.ndim) if d not in dim]
    moved = self.permute(*rest, *dim)
    flat = moved.reshape(moved._shape[:len(rest)] + (-1,))
    if flat._shape[-1] == 0:
        return (zeros_like(self),)
    others = _exclusive_products(flat, flat.ndim - 1).reshape(moved._shape)
    inverse = [0] * self.ndim
    for i, d in enumerate(rest + list(dim)):
        inverse[d] = i
    return (g * conj(others.permute(*inverse)),)


@derivative("var", save=("self",))
def _var(ctx, g, self, dim, correction, keepdim):
    shape = self._shape
    n = math.prod(shape[d] for d in dim) if shape else 1
    centered = self - mean_op(self, dim, True, self.dtype)
    return (_restore(g, shape, dim, keepdim) * centered * (2.0 / (n - correction)),)


def _amax_name(prefix, full_name):
    # max(x) over everything is PyTorch's MaxBackward1; amax(x, dim) is AmaxBackward0
    return lambda self, dim, keepdim: full_name if _full(self, dim, keepdim) else \
        f"{prefix}Backward0"


def _extreme(ctx, g, self, dim, keepdim):
    shape = self._shape
    r = unsqueeze_dims(ctx.result, shape, dim, keepdim)
    hit = B["eq"](self, r)
    count = sum_op(hit, dim, True, self.dtype)
    return (keep_where(_restore(g, shape, dim, keepdim) / count, hit),)


derivative("amax", save=("self", "result"), name=_amax_name("Amax", "MaxBackward1"))(_extreme)
derivative("amin", save=("self", "result"), name=_amax_name("Amin", "MinBackward1"))(_extreme)


def _selected(ctx, g, self, dim, keepdim=False):
    """max/min/mode along a dim: the gradient goes to the element the index points at."""
    g = g[0]
    shape = ctx.meta(0)[0]
    if not shape:
        return (g,)
    from .indexing import scatter_into_zeros
    indices = ctx.result[1]
    if not keepdim:
        g = g.unsqueeze(dim)
        indices = indices.unsqueeze(dim)
    return (scatter_into_zeros(g, shape, dim, indices),)


derivative("max_dim", save=("result",), outputs=(True, False), name="MaxBackward0")(_selected)
derivative("min_dim", save=("result",), outputs=(True, False), name="MinBackward0")(_selected)


@derivative("logsumexp", save=("self", "result"))
def _logsumexp(ctx, g, self, dim, keepdim):
    shape = self._shape
    r = unsqueeze_dims(ctx.result, shape, dim, keepdim)
    return (_restore(g, shape, dim, keepdim) * U["exp"](self - r),)


@derivative("vector_norm", save=("self", "result"), name="LinalgVectorNormBackward0")
def _vector_norm(ctx, g, self, ord, dim, keepdim):
    shape = self._shape
    g = _restore(g, shape, dim, keepdim)
    norm = unsqueeze_dims(ctx.result, shape, dim, keepdim)
    if ord == 0:
        return (zeros_like(self),)
    if ord == 1:
        return (g * U["sign"](self),)
    if math.isinf(ord):
        hit = B["eq"](U["abs"](self), norm)
        count = sum_op(hit, dim, True, self.dtype)
        return (keep_where(g * U["sign"](self) / count, hit),)
    if ord == 2:
        scaled = self / norm
    else:
        scaled = self * U["abs"](self) ** (ord - 2) / norm ** (ord - 1)
    return (E.where(B["eq"](norm, 0), 0.0, g * scaled),)


def _reverse_cumsum(g, dim):
    from ...ops.shape import flip
    return flip(cumsum_op(flip(g, dim), dim, g.dtype), dim)


@derivative("cumsum", complex_ok=True)
def _cumsum(ctx, g, self, dim, dtype):
    if not ctx.meta(0)[0]:
        return (g,)
    return (_reverse_cumsum(g, dim),)


@derivative("cumprod", save=("self", "result"))
def _cumprod(ctx, g, self, dim, dtype):
    if not self._shape or self._shape[dim] == 0:
        return (g,)
    if not bool(B["eq"](self, 0).any()):
        return (_reverse_cumsum(g * ctx.result, dim) / self,)
    # zeros: d out_i / d x_k = prod_{j<=i, j!=k} x_j (i >= k), built for every k at once from
    # copies of x with x_k set to 1; O(n^2) in the scanned length
    from ...ops.factories import eye
    n = self._shape[dim]
    x = self.movedim(dim, -1)                                   # (..., n)
    hot = eye(n, dtype=self.dtype, device=self.device).bool()   # (k, i)
    xk = E.where(hot, 1.0, x.unsqueeze(-2))                     # (..., k, i)
    prods = cumprod_op(xk, xk.ndim - 1, self.dtype)
    upper = B["ge"](_arange_row(n, self), _arange_col(n, self))         # i >= k
    gk = sum_op(keep_where(prods * g.movedim(dim, -1).unsqueeze(-2), upper), (xk.ndim - 1,),
                False, self.dtype)                              # (..., k)
    return (gk.movedim(-1, dim),)


def _arange_row(n, like):
    from ...ops.factories import arange
    return arange(n, device=like.device).unsqueeze(0)


def _arange_col(n, like):
    from ...ops.factories import arange
    return arange(n, device=like.device).unsqueeze(1)


def _dims_of(shape, dim):
    return (dim,) if shape else ()


@derivative("softmax", save=("result",))
def _softmax(ctx, g, self, dim, dtype):
    y = ctx.result
    dims = _dims_of(y._shape, dim)
    return (y * (g - sum_op(g * y, dims, True, g.dtype)),)


@derivative("log_softmax", save=("result",))
def _log_softmax(ctx, g, self, dim, dtype):
    y = ctx.result
    dims = _dims_of(y._shape, dim)
    return (g - U["exp"](y) * sum_op(g, dims, True, g.dtype),)
