"""The strided primitives: ``as_strided`` (every view is one) and ``as_strided_scatter`` (the
write every view's backward is made of), with their derivatives and the geometry they share.

A view's backward writes its gradient into zeros of the input's shape at the positions the view
reads. Those positions are found by applying the same view op to a contiguous stand-in of the
input's shape (metadata only), so inputs with any layout, even expanded ones, work. The write is
``as_strided_scatter``, an op with its own derivative, so views can be differentiated any number
of times.
"""
from __future__ import annotations

import math

import numpy as np

from ... import _dtype
from ..._tensor import Tensor
from ...dispatch import keys as _K
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _batching, _grad, _primitives, _tangents
from .._lowering import foldable
from .._util import contiguous_strides, tensor_method


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


def _same_positions(a, b) -> bool:
    """Do two geometries read the same elements in the same order (a squeeze/unsqueeze)?"""
    (sa, ta, oa), (sb, tb, ob) = a, b
    if oa != ob:
        return False
    return [(n, s) for n, s in zip(sa, ta) if n != 1] == [(n, s) for n, s in zip(sb, tb) if n != 1]


# -- as_strided ---------------------------------------------------------------------------------
def _as_strided(self, size, stride, storage_offset):
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided: mismatch in length of strides and shape ({len(size)} vs "
                           f"{len(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: negative strides are not supported, got {list(stride)}")
    if any(n == 0 for n in size):
        needed = 0
    else:
        needed = (storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1) * \
            self.dtype.itemsize
    if needed > self._storage.nbytes:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {storage_offset}, and itemsize {self.dtype.itemsize} requiring "
                           f"a storage size of {needed} are out of bounds for storage of size "
                           f"{self._storage.nbytes}")
    return self._view_of(size, stride, storage_offset)


def _as_strided_name(self, size, stride, offset):
    if _same_positions((self._shape, self._stride, self._offset), (size, stride, offset)):
        if len(size) < self.ndim:
            return "SqueezeBackward0"
        if len(size) > self.ndim:
            return "UnsqueezeBackward0"
    return "AsStridedBackward0"


def as_strided_backward(g, in_geom, out_geom):
    """The gradient of an input with geometry ``in_geom`` from that of its view ``out_geom``."""
    xs, xst, xo = in_geom
    size, stride, offset = out_geom
    if _same_positions(in_geom, out_geom):
        return g.reshape(xs)
    if math.prod(xs) == 0 or math.prod(size) == 0:
        return _grad.zeros(xs, g)
    if not non_overlapping(size, stride) or not non_overlapping(xs, xst):
        return _overlapping_backward(g, in_geom, out_geom)
    lo = min(xo, offset)
    hi = max(xo + extent(xs, xst), offset + extent(size, stride))
    buf = as_strided_scatter_op(_grad.zeros((hi - lo + 1,), g), g, size, stride, offset - lo)
    return as_strided_op(buf, tuple(xs), tuple(xst), buf._offset + xo - lo)


def _storage_positions(size, stride, offset):
    """The storage index each element of a (size, stride, offset) geometry reads, flat."""
    pos = np.full((), offset, dtype=np.int64)
    for n, st in zip(size, stride):
        pos = pos[..., None] + np.arange(n, dtype=np.int64) * st
    return pos.reshape(-1)


def _overlapping_backward(g, in_geom, out_geom):
    """as_strided's backward where elements share memory (PyTorch's as_strided_backward):
    the view's gradient is added up per storage position; an input element that shares its
    position with others (an expanded input) gets that sum divided by their count."""
    out_pos, in_pos = _storage_positions(*out_geom), _storage_positions(*in_geom)
    lo = min(out_pos.min(), in_pos.min())
    span = int(max(out_pos.max(), in_pos.max()) - lo + 1)

    def index(pos):
        return _primitives.tensor(pos - lo, dtype=_dtype.int64, device=g.device)

    buf = _grad.zeros((span,), g).index_add(0, index(out_pos), g.reshape(-1))
    if not non_overlapping(*in_geom[:2]):
        count = np.bincount(in_pos - lo, minlength=span).astype(np.float64)
        buf = buf / _primitives.tensor(np.maximum(count, 1), dtype=g.dtype.to_real()
                                       if g.dtype.is_complex else g.dtype, device=g.device)
    return buf.index_select(0, index(in_pos)).reshape(in_geom[0])


def _as_strided_backward(ctx, g, self, size, stride, offset):
    return (as_strided_backward(g, ctx.info, (tuple(size), tuple(stride), offset)),)


as_strided_op = define(
    "as_strided(Tensor self, int[] size, int[] stride, int storage_offset) -> Tensor",
    composite=_as_strided,
    derivative=Derivative(_as_strided_backward, view=True, complex_ok=True, name=_as_strided_name,
                          setup=lambda self, size, stride, offset: (self._shape, self._stride,
                                                                    self._offset)))


@as_strided_op.def_onnx
@foldable
def _as_strided_onnx(b, c, x, size, stride, offset=0, *rest):
    """Only as_strided that merely adds or drops size-1 dimensions (how views like unsqueeze
    and squeeze are recorded) has an ONNX form: a Reshape."""
    shape, _, layout = c.meta(0)
    if layout is not None:
        in_stride, in_offset = layout

        def core(sz, st):
            return [(c.concrete(n), c.concrete(s)) for n, s in zip(sz, st)
                    if c.concrete(n) != 1]
        if c.concrete(offset) == in_offset and core(size, stride) == core(shape, in_stride):
            return b.op("Reshape", [x, c.shape_tensor(size)])
    c.refuse(f"a general strided view ({list(shape)} -> size {list(size)}, stride "
             f"{list(stride)}) has no ONNX equivalent")


@tensor_method()
def as_strided(self, size, stride, storage_offset=None):
    return as_strided_op(self, tuple(size), tuple(stride),
                         self._offset if storage_offset is None else storage_offset)


# -- as_strided_scatter -------------------------------------------------------------------------
def _as_strided_scatter(self, src, size, stride, storage_offset):
    out = _primitives.to_copy_op(self, self.dtype)
    view = as_strided_op(out, tuple(size), tuple(stride), out._offset + storage_offset)
    _primitives.copy_op(view, src if src._shape == tuple(size) else src.expand(tuple(size)))
    return out


def _as_strided_scatter_backward(ctx, g, self, src, size, stride, offset):
    g = g.contiguous()
    gs = gsrc = None
    if ctx.needs(0):
        gs = as_strided_scatter_op(g, _grad.zeros(size, g), size, stride, offset)
    if ctx.needs(1):
        gsrc = as_strided_op(g, tuple(size), tuple(stride), g._offset + offset)
    return gs, gsrc


as_strided_scatter_op = define(
    "as_strided_scatter(Tensor self, Tensor src, int[] size, int[] stride, int storage_offset) "
    "-> Tensor",
    composite=_as_strided_scatter,
    derivative=Derivative(_as_strided_scatter_backward, complex_ok=True),
    doc="A C-contiguous copy of ``self`` with ``src`` written at the strided positions "
        "(``storage_offset`` counts from the copy's first element). Autograd's view backward.")


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """A copy of ``input`` with ``src`` written where ``input.as_strided(size, stride,
    storage_offset)`` reads: positions count in ``input``'s storage (``storage_offset``
    defaults to ``input``'s), so only the elements of ``input`` found there change. An input
    with overlapping memory (expanded) is first made contiguous, as PyTorch's clone does."""
    for name, t in (("input", input), ("src", src)):
        if not isinstance(t, Tensor):
            raise TypeError(f"as_strided_scatter(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if src.dtype is not input.dtype or src.device is not input.device:
        src = src.to(device=input.device, dtype=input.dtype)
    shape, strides, base = input._shape, input._stride, input._offset
    if not non_overlapping(shape, strides):
        offset = 0 if storage_offset is None else int(storage_offset)
        _check_src(src, size)
        return as_strided_scatter_op(input, src, size, stride, offset)
    offset = base if storage_offset is None else int(storage_offset)
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    _as_strided(input, size, stride, offset)  # PyTorch's checks of the positions (no record)
    _check_src(src, size)
    n = math.prod(shape)
    if math.prod(size) == 0:
        return _primitives.to_copy_op(input, input.dtype)
    last = offset + extent(size, stride)
    if input.is_contiguous() and base <= offset and last < base + n:
        return as_strided_scatter_op(input, src, size, stride, offset - base)
    # the written positions reach beyond input's elements or input has another layout: lay
    # input out in a buffer as in its storage, write src there, and read input's elements back
    lo = min(base, offset)
    hi = max(base + extent(shape, strides) if n else base, last)
    buf = as_strided_scatter_op(_grad.zeros((hi - lo + 1,), input), input, shape, strides,
                                base - lo)
    buf = as_strided_scatter_op(buf, src, size, stride, offset - lo)
    return as_strided_op(buf, shape, strides, buf._offset + base - lo)


Tensor.as_strided_scatter = as_strided_scatter


def _check_src(src, size):
    if src._shape != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src._shape)}, slice size = {list(size)}")


def view_scatter(g: Tensor, in_shape, size, stride, offset) -> Tensor:
    """Zeros of ``in_shape`` with ``g`` at the view's positions (logical, contiguous layout)."""
    n = math.prod(in_shape)
    size = tuple(size)
    if not ((g._ks | _K.state.masks[0]) & _K.FUNCTIONALITY_MASK) and g._shape == size:
        # a plain gradient outside any graph, transform or mode (no create_graph, vmap, capture,
        # profiler): write it into the fresh zeros in place, without the copy of them that the
        # scatter op makes
        buf = _grad.zeros((n,), g)
        _primitives.copy_op(as_strided_op(buf, size, tuple(stride), buf._offset + offset), g)
        return buf.view(tuple(in_shape))
    buf = as_strided_scatter_op(_grad.zeros((n,), g), g, size, tuple(stride), offset)
    return buf.view(tuple(in_shape))


# -- ember.func ---------------------------------------------------------------------------------
def _as_strided_jvp(ctx, tangents, self, size, stride, storage_offset):
    """A tangent laid out like its primal takes the same view of its own memory; otherwise the
    geometry is followed through the backward formula (transposed)."""
    t = tangents[0]
    if t is None:
        return None
    if t._shape == self._shape and t._stride == self._stride:
        return as_strided_op(t, size, stride, t._offset + storage_offset - self._offset)
    return NotImplemented   # the transpose of the backward formula (ember.func's general rule)


as_strided_op.def_batch_rule(_batching.as_strided_rule(as_strided_op))
# the scatter's positions count in each example's own storage (see the API): run per example
as_strided_scatter_op.def_batch_rule(
    lambda args, bdims, layer: _batching.loop(as_strided_scatter_op, args, bdims, layer))
as_strided_op.def_jvp(_as_strided_jvp)
as_strided_scatter_op.def_jvp(_tangents.linear(as_strided_scatter_op, (0, 1)))
