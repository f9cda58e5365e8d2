"""The history of views and of in-place writes to them (PyTorch's CopySlices and view replay).

An in-place op on a view rewrites its base's history: the base's new grad_fn is a
``CopySlices`` whose backward sends the view's region of the gradient through the in-place op's
node and the rest to the base's old history (``region_grads``). A view whose storage changed in
place since it was made gets a regenerated grad_fn, an ``AsStridedBackward0`` of its base
(``as_strided_node``). Both are written with the strided ops of ``ember.ops.views``, so they run on
every backend and can be differentiated again.
"""
from __future__ import annotations

import math

from ..ops import _grad
from ..ops.views import as_strided_op, as_strided_scatter_op, extent, non_overlapping
from .graph import Node
from .nodes import FormulaNode, bind


def geometry(t):
    return (t._shape, t._stride, t._offset)


class CopySlices(Node):
    """History of a base after an in-place op on one of its views.

    ``fn`` is the in-place op's node (input 0: the view's old value). Backward splits the base's
    gradient: the view's region goes through ``fn``, whose gradient for the old view value is
    written back into that region; the rest goes to the base's old history.
    """

    __slots__ = ("fn", "base_geom", "view_geom", "base_meta")

    def __init__(self, base, view, fn, base_edge):
        super().__init__([base_edge] + list(fn.next_edges[1:]))
        self.fn = fn
        self.base_geom = geometry(base)
        self.view_geom = geometry(view)
        self.base_meta = (base._shape, base.dtype, base.device)

    def apply(self, grads):
        g = grads[0]
        res = None

        def through_fn(g_view):
            nonlocal res
            res = self.fn.apply([g_view])
            return res[0] if res else None

        g_base = region_grads(g, self.base_geom, self.view_geom, through_fn)
        rest = list(res[1:]) if res else []
        rest += [None] * (len(self.next_edges) - 1 - len(rest))
        return [g_base] + rest

    def release(self):
        self.fn.release()


def region_grads(g, base_geom, view_geom, through_fn):
    """CopySlices' backward: the base's gradient with the view's region replaced by what
    ``through_fn`` (the in-place op's backward) makes of that region's gradient."""
    bs, bst, bo = base_geom
    vs, vst, vo = view_geom
    if math.prod(bs) == 0:
        through_fn(_grad.zeros(vs, g))
        return g
    if not non_overlapping(bs, bst) or not non_overlapping(vs, vst):
        raise NotImplementedError("autograd: an in-place op on a view whose base has overlapping "
                                  "memory (an expanded tensor) is not supported")
    lo = min(bo, vo)
    hi = max(bo + extent(bs, bst), vo + extent(vs, vst))
    buf = _grad.zeros((hi - lo + 1,), g)
    gb = as_strided_scatter_op(buf, g, bs, bst, bo - lo)
    gv = as_strided_op(gb, vs, vst, gb._offset + vo - lo)
    r = through_fn(gv)
    if r is None:
        r = _grad.zeros(vs, g)
    gb2 = as_strided_scatter_op(gb, r, vs, vst, vo - lo)
    return as_strided_op(gb2, bs, bst, gb2._offset + bo - lo)


_spec_cache: dict = {}


def as_strided_node(base, edge, size, stride, offset):
    """A view's regenerated grad_fn: AsStridedBackward0 of ``base``, whose gradient goes to
    ``edge`` (recorded, not run)."""
    spec = _spec_cache.get("as_strided")
    if spec is None:
        spec = _spec_cache["as_strided"] = bind(as_strided_op, as_strided_op.derivative)
    f = spec.formula
    cls = f.node_classes.get("AsStridedBackward0")
    if cls is None:
        cls = f.node_classes["AsStridedBackward0"] = type("AsStridedBackward0", (FormulaNode,),
                                                          {"__slots__": ()})
    node = cls([edge])
    node._spec = spec
    node._metas = [(base._shape, base.dtype, base.device) if edge is not None else None]
    node._needs = [edge is not None, False, False, False]
    node._args = [None, tuple(size), tuple(stride), offset]
    node._info = (base._shape, base._stride, base._offset)
    return node
