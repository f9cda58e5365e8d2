"""Derivatives of indexing, gather/scatter and masked ops (``ops/indexing.py``).

``index_put_`` (advanced-index assignment) is recorded through ``autograd::index_put``, an
internal functional twin with its own derivative, so ``x[idx] = v`` on a tensor in a graph
works like any in-place op and can be differentiated again.
"""
from __future__ import annotations

from ...dispatch.dispatcher import define, get_op
from ...ops import elementwise as E
from ...ops.conversion import to_copy_op
from ...ops.indexing import (gather_op, index_add_op, index_op, index_put_op, index_select_op,
                             nonzero_op, scatter_op)
from ...ops.views import select_op
from ...ops._util import contiguous_strides
from . import derivative, nondifferentiable
from ._common import keep_where, mask_fill_zero, zeros

nondifferentiable("nonzero")


def _index_put(self, indices, values, accumulate):
    out = to_copy_op(self, self.dtype)
    index_put_op(out, indices, values, accumulate)
    return out


index_put_functional = define("autograd::index_put(Tensor self, Tensor?[] indices, "
                              "Tensor values, bool accumulate) -> Tensor", composite=_index_put,
                              doc="index_put_ on a copy: autograd's functional twin of "
                                  "index_put_.")
get_op("index_put_").functional = get_op("autograd::index_put")


@derivative("autograd::index_put", save=("indices",), diff=("self", "values"),
            name="IndexPutBackward0", complex_ok=True)
def _index_put_bw(ctx, g, self, indices, values, accumulate):
    gs = gv = None
    if ctx.needs(0):
        gs = g if accumulate else index_put_functional(g, indices, zeros((), g), False)
    if ctx.needs(2):
        gv = index_op(g, indices)
    return gs, None, gv


@derivative("index", save=("indices",), diff=("self",), complex_ok=True)
def _index(ctx, g, self, indices):
    shape = ctx.meta(0)[0]
    return (index_put_functional(zeros(shape, g), indices, g, True),)


def scatter_into_zeros(g, shape, dim, index):
    """zeros(shape) with ``g`` added at ``index`` along ``dim`` (gather's adjoint)."""
    return scatter_op(zeros(shape, g), dim, index, g, "add")


@derivative("gather", save=("index",), diff=("self",), complex_ok=True)
def _gather(ctx, g, self, dim, index):
    return (scatter_into_zeros(g, ctx.meta(0)[0], dim, index),)


def _src_grad(g, dim, index, src_shape):
    """gather(g, index), placed in the leading corner of ``src`` (which may be larger)."""
    gi = gather_op(g, dim, index)
    if gi._shape == tuple(src_shape) or not src_shape:
        return gi
    from .views import view_scatter
    return view_scatter(gi, src_shape, gi._shape, contiguous_strides(src_shape), 0)


def _scatter_name(self, dim, index, src, reduce):
    return "ScatterAddBackward0" if reduce == "add" else "ScatterBackward0"


@derivative("scatter", save=("index",), diff=("self", "src"), name=_scatter_name,
            complex_ok=True)
def _scatter(ctx, g, self, dim, index, src, reduce):
    if reduce == "multiply":
        raise NotImplementedError("the derivative for 'scatter' with reduce='multiply' is not "
                                  "implemented")
    gs = gsrc = None
    if ctx.needs(0):
        gs = g if reduce == "add" else scatter_op(g, dim, index, zeros(index._shape, g), None)
    if ctx.needs(3):
        gsrc = _src_grad(g, dim, index, ctx.meta(3)[0])
    return gs, None, None, gsrc


@derivative("index_select", save=("index",), diff=("self",), complex_ok=True)
def _index_select(ctx, g, self, dim, index):
    shape = ctx.meta(0)[0]
    return (index_add_op(zeros(shape, g), dim, index, g, 1),)


@derivative("index_add", save=("index",), diff=("self", "source"), complex_ok=True)
def _index_add(ctx, g, self, dim, index, source, alpha):
    gsrc = None
    if ctx.needs(3):
        shape = ctx.meta(3)[0]
        gsrc = index_select_op(g, dim, index) if g.ndim else g
        if alpha != 1:
            gsrc = gsrc * alpha
        if not shape:
            from ...ops.reduction import sum_op
            gsrc = sum_op(gsrc, tuple(range(gsrc.ndim)), False, gsrc.dtype)
    return g, None, None, gsrc


@derivative("masked_fill", save=("mask",), diff=("self", "value"), complex_ok=True)
def _masked_fill(ctx, g, self, mask, value):
    return (mask_fill_zero(g, mask) if ctx.needs(0) else None, None,
            keep_where(g, mask) if ctx.needs(2) else None)


@derivative("masked_select", save=("mask",), diff=("self",), complex_ok=True)
def _masked_select(ctx, g, self, mask):
    from ...ops._util import broadcast_shapes
    shape = broadcast_shapes(ctx.meta(0)[0], mask._shape)
    m = mask if mask._shape == shape else mask.expand(*shape)
    hits = nonzero_op(m)
    idx = [select_op(hits, 1, k) for k in range(len(shape))]
    if not shape:  # 0-d: g holds the one element if it was selected, else nothing
        return (E.where(mask, g.sum(), 0.0),)
    return (index_put_functional(zeros(shape, g), idx, g, False),)
