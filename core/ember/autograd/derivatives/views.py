"""Derivatives of view ops, and the strided scatter that backward of views and CopySlices use.

A view's backward writes its gradient into zeros of the input's shape at the positions the view
reads. Those positions are found by applying the same view op to a contiguous stand-in of the
input's shape (metadata only), so inputs with any layout, even expanded ones, work. The write
is ``autograd::as_strided_scatter``, an internal op with its own derivative, so views can be
differentiated any number of times.
"""
from __future__ import annotations

import math

from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...ops.conversion import copy_op, to_copy_op
from ...ops.views import (as_strided_op, diagonal_op, expand_op, permute_op, reshape,
                          select_op, slice_op, unfold_op, view_op)
from ...ops._util import contiguous_strides
from . import derivative
from ._common import sum_to, zeros


# -- geometry -----------------------------------------------------------------------------------
def extent(size, stride) -> int:
    """Offset of the last element from the first (0 for one element)."""
    return sum((n - 1) * s for n, s in zip(size, stride) if n > 0)


def non_overlapping(size, stride) -> bool:
    if any(n == 0 for n in size):
        return True
    reach = 0
    for st, n in sorted((st, n) for n, st in zip(size, stride) if n > 1):
        if st <= reach:
            return False
        reach += (n - 1) * st
    return True


def logical_geometry(view_fn, like: Tensor, shape, *params):
    """(size, stride, offset) of ``view_fn(x, *params)`` for a contiguous ``x`` of ``shape``."""
    dummy = Tensor._make(like._storage, tuple(shape), contiguous_strides(shape), 0, like.dtype,
                         like.device)
    v = view_fn(dummy, *params)
    return v._shape, v._stride, v._offset


# -- the scatter primitive ----------------------------------------------------------------------
def _as_strided_scatter(self, src, size, stride, storage_offset):
    out = to_copy_op(self, self.dtype)
    view = as_strided_op(out, tuple(size), tuple(stride), out._offset + storage_offset)
    copy_op(view, src if src._shape == tuple(size) else expand_op(src, tuple(size)))
    return out


# autograd's own helper ops live in the "autograd" namespace: any backend runs them through
# their composites, so they are not part of the op set backends are checked against
scatter_op = define("autograd::as_strided_scatter(Tensor self, Tensor src, int[] size, "
                    "int[] stride, int storage_offset) -> Tensor", composite=_as_strided_scatter,
                    doc="A copy of the 1-D contiguous ``self`` with ``src`` written at the "
                        "given strided positions (offsets relative to ``self``'s first "
                        "element). Autograd's view backward.")


@derivative("autograd::as_strided_scatter", name="AsStridedScatterBackward0", complex_ok=True)
def _scatter_bw(ctx, g, self, src, size, stride, offset):
    g = g.contiguous()
    gs = gsrc = None
    if ctx.needs(0):
        gs = scatter_op(g, zeros(size, g), size, stride, offset)
    if ctx.needs(1):
        gsrc = as_strided_op(g, tuple(size), tuple(stride), g._offset + offset)
    return gs, gsrc


def view_scatter(g: Tensor, in_shape, size, stride, offset) -> Tensor:
    """Zeros of ``in_shape`` with ``g`` at the view's positions (logical, contiguous layout)."""
    n = math.prod(in_shape)
    buf = scatter_op(zeros((n,), g), g, tuple(size), tuple(stride), offset)
    return view_op(buf, tuple(in_shape))


def region_grads(g, base_geom, view_geom, through_fn):
    """CopySlices' backward: the base's gradient with the view's region replaced by what
    ``through_fn`` (the in-place op's backward) makes of that region's gradient."""
    bs, bst, bo = base_geom
    vs, vst, vo = view_geom
    if math.prod(bs) == 0:
        through_fn(zeros(vs, g))
        return g
    if not non_overlapping(bs, bst) or not non_overlapping(vs, vst):
        raise NotImplementedError("autograd: an in-place op on a view whose base has overlapping "
                                  "memory (an expanded tensor) is not supported")
    lo = min(bo, vo)
    hi = max(bo + extent(bs, bst), vo + extent(vs, vst))
    buf = zeros((hi - lo + 1,), g)
    gb = scatter_op(buf, g, bs, bst, bo - lo)
    gv = as_strided_op(gb, vs, vst, gb._offset + vo - lo)
    r = through_fn(gv)
    if r is None:
        r = zeros(vs, g)
    gb2 = scatter_op(gb, r, vs, vst, vo - lo)
    return as_strided_op(gb2, bs, bst, gb2._offset + bo - lo)


# -- view ops -----------------------------------------------------------------------------------
@derivative("view", view=True, complex_ok=True)
def _view(ctx, g, self, size):
    return (reshape(g, ctx.meta(0)[0]),)


def _inverse(dims):
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


@derivative("permute", view=True, complex_ok=True)
def _permute(ctx, g, self, dims):
    return (permute_op(g, _inverse(dims)),)


@derivative("expand", view=True, complex_ok=True)
def _expand(ctx, g, self, size):
    return (sum_to(g, ctx.meta(0)[0]),)


def _same_positions(a, b) -> bool:
    """Do two geometries read the same elements in the same order (a squeeze/unsqueeze)?"""
    (sa, ta, oa), (sb, tb, ob) = a, b
    if oa != ob:
        return False
    return [(n, s) for n, s in zip(sa, ta) if n != 1] == [(n, s) for n, s in zip(sb, tb) if n != 1]


def _as_strided_name(self, size, stride, offset):
    if _same_positions((self._shape, self._stride, self._offset), (size, stride, offset)):
        if len(size) < self.ndim:
            return "SqueezeBackward0"
        if len(size) > self.ndim:
            return "UnsqueezeBackward0"
    return "AsStridedBackward0"


@derivative("as_strided", view=True, complex_ok=True, name=_as_strided_name,
            setup=lambda self, size, stride, offset: (self._shape, self._stride, self._offset))
def _as_strided(ctx, g, self, size, stride, offset):
    return (as_strided_backward(g, ctx.info, (tuple(size), tuple(stride), offset)),)


def as_strided_backward(g, in_geom, out_geom):
    xs, xst, xo = in_geom
    size, stride, offset = out_geom
    if _same_positions(in_geom, out_geom):
        return reshape(g, xs)
    if not non_overlapping(size, stride) or not non_overlapping(xs, xst):
        raise NotImplementedError("as_strided backward: overlapping input or output memory (an "
                                  "expanded tensor, or strides that reuse elements) is not "
                                  "supported")
    if math.prod(xs) == 0 or math.prod(size) == 0:
        return zeros(xs, g)
    lo = min(xo, offset)
    hi = max(xo + extent(xs, xst), offset + extent(size, stride))
    buf = scatter_op(zeros((hi - lo + 1,), g), g, size, stride, offset - lo)
    return as_strided_op(buf, tuple(xs), tuple(xst), buf._offset + xo - lo)


def as_strided_node(base, size, stride, offset):
    """A view's regenerated grad_fn: AsStridedBackward0 of ``base`` (not run, only recorded)."""
    from ...ops.views import as_strided_op as op
    from ..nodes import bind
    from ..record import gradient_edge
    spec = _spec_cache.get("as_strided")
    if spec is None:
        spec = _spec_cache["as_strided"] = bind(op, op.derivative)
    f = spec.formula
    cls = f.node_classes.get("AsStridedBackward0")
    if cls is None:
        from ..nodes import FormulaNode
        cls = f.node_classes["AsStridedBackward0"] = type("AsStridedBackward0", (FormulaNode,),
                                                          {"__slots__": ()})
    edge = gradient_edge(base)
    node = cls([edge])
    node._spec = spec
    node._metas = [(base._shape, base.dtype, base.device) if edge is not None else None]
    node._needs = [edge is not None, False, False, False]
    node._args = [None, tuple(size), tuple(stride), offset]
    node._info = (base._shape, base._stride, base._offset)
    return node


_spec_cache: dict = {}


def _logical_backward(view_fn):
    def backward(ctx, g, self, *params):
        shape = ctx.meta(0)[0]
        geom = logical_geometry(view_fn, g, shape, *params)
        return (view_scatter(g, shape, *geom),)
    return backward


derivative("slice", view=True, complex_ok=True)(_logical_backward(slice_op.composite))
derivative("select", view=True, complex_ok=True)(_logical_backward(select_op.composite))
derivative("diagonal", view=True, complex_ok=True)(_logical_backward(diagonal_op.composite))


@derivative("unfold", view=True, complex_ok=True)
def _unfold(ctx, g, self, dim, size, step):
    shape = ctx.meta(0)[0]
    if not shape or step >= size:  # windows don't overlap: a plain scatter
        geom = logical_geometry(unfold_op.composite, g, shape, dim, size, step)
        return (view_scatter(g, shape, *geom),)
    # overlapping windows: element (i, k) of the window axis came from i * step + k. For each
    # offset k the positions i * step + k are one strided slice of ``dim``, so the overlaps are
    # summed by ``size`` strided adds -- far cheaper than an index_add over every element for
    # the small windows of convolutions and pooling; long windows keep the single index_add
    count = g._shape[dim]
    if size <= 32:
        grad = zeros(shape, g)
        lead = (slice(None),) * dim
        for k in range(size):
            grad[lead + (slice(k, k + (count - 1) * step + 1, step),)] += g.select(-1, k)
        return (grad,)
    from ...ops.factories import arange
    from ...ops.indexing import index_add_op
    idx = (arange(count, device=g.device).unsqueeze(1) * step +
           arange(size, device=g.device).unsqueeze(0)).reshape(-1)
    moved = g.movedim(-1, dim + 1)                     # (..., count, size, ...)
    flat = moved.reshape(shape[:dim] + (count * size,) + shape[dim + 1:])
    return (index_add_op(zeros(shape, g), dim, idx, flat, 1),)
