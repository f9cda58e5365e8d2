"""Views that read part of the elements: ``slice`` (narrow, split, chunk, tensor_split),
``select`` (unbind), ``unfold`` and ``diagonal`` — each op with its derivative.

Their backward writes the gradient into zeros of the input's shape at the positions the view
read (``view_scatter``), found by applying the view to a contiguous stand-in of that shape.
"""
from __future__ import annotations

import numpy as np

from ... import _dtype
from ..._tensor import Tensor, _wrap_dim
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _batching, _grad, _primitives, _tangents
from .._lowering import foldable
from .._util import require_tensor, tensor_method
from .strided import logical_geometry, view_scatter


def _logical_backward(view_fn):
    """The backward of a view op whose composite is ``view_fn``: a scatter into zeros."""
    def backward(ctx, g, self, *params):
        shape = ctx.meta(0)[0]
        geom = logical_geometry(view_fn, g, shape, *params)
        return (view_scatter(g, shape, *geom),)
    return backward


# -- slicing ------------------------------------------------------------------------------------
def _slice_view(self, dim, start, end, step):
    size = self._shape[dim]
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    length = (end - start + step - 1) // step
    shape = list(self._shape)
    stride = list(self._stride)
    shape[dim] = length
    offset = self._offset + start * stride[dim]
    stride[dim] *= step
    return self._view_of(tuple(shape), tuple(stride), offset)


slice_op = define("slice(Tensor self, int dim, int? start, int? end, int step) -> Tensor",
                  composite=_slice_view,
                  derivative=Derivative(_logical_backward(_slice_view), view=True,
                                        complex_ok=True))
_INT64_MAX = (1 << 63) - 1


@slice_op.def_onnx
@foldable
def _slice_onnx(b, c, x, dim, start=None, end=None, step=1, *rest):
    # bounds that are multiples of a dynamic size (a time-major sequence cut per step) follow
    # it at run time
    full = c.shape(0)[dim]
    start = 0 if start is None else start
    if end is None or (not c.is_symbolic(end) and end >= full and
                       dim not in c.dynamic_dims(0)):
        end = _INT64_MAX

    def bound(v):
        if c.is_symbolic(v):
            return c.sym(v)
        if v in (0, _INT64_MAX):
            return b.ints([v])
        return c.shape_tensor([v]) if v > 0 else b.ints([v])
    return b.op("Slice", [x, bound(start), bound(end), b.ints([dim]), b.ints([step])])


def _select(self, dim, index):
    size = self._shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(self._shape)} at dimension {dim}")
    if index < 0:
        index += size
    return self._view_of(self._shape[:dim] + self._shape[dim + 1:],
                         self._stride[:dim] + self._stride[dim + 1:],
                         self._offset + index * self._stride[dim])


select_op = define("select(Tensor self, int dim, int index) -> Tensor", composite=_select,
                   derivative=Derivative(_logical_backward(_select), view=True, complex_ok=True))
_primitives.provide(select_op=select_op)


@select_op.def_onnx
@foldable
def _select_onnx(b, c, x, dim, index, *rest):
    if c.is_symbolic(index):
        index = b.op("Squeeze", [c.sym(index), b.ints([0])])
        return b.op("Gather", [x, index], axis=dim)
    return b.op("Gather", [x, b.const(np.asarray(index, dtype=np.int64), "index")], axis=dim)


def select(input, dim, index):
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    return select_op(input, _wrap_dim(dim, input.ndim, "select"), int(index))


Tensor.select = select


def narrow(input, dim, start, length):
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input.ndim, "narrow")
    size = input._shape[d]
    start, length = int(start), int(length)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but "
                         f"got {start})")
    if start < 0:
        start += size
    if not 0 <= start <= size or length < 0 or start + length > size:
        raise RuntimeError(f"narrow(): start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}).")
    return slice_op(input, d, start, start + length, 1)


Tensor.narrow = narrow


def _unfold(self, dim, size, step):
    n = self._shape[dim] if self.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (n - size) // step + 1
    if self.ndim == 0:
        return self._view_of((size,), (1,), self._offset)
    shape = self._shape[:dim] + (count,) + self._shape[dim + 1:] + (size,)
    stride = self._stride[:dim] + (self._stride[dim] * step,) + self._stride[dim + 1:] + \
        (self._stride[dim],)
    return self._view_of(shape, stride, self._offset)


def _unfold_backward(ctx, g, self, dim, size, step):
    shape = ctx.meta(0)[0]
    if not shape or step >= size:  # windows don't overlap: a plain scatter
        geom = logical_geometry(_unfold, g, shape, dim, size, step)
        return (view_scatter(g, shape, *geom),)
    # overlapping windows: element (i, k) of the window axis came from i * step + k. For each
    # offset k the positions i * step + k are one strided slice of ``dim``, so the overlaps are
    # summed by ``size`` strided adds -- far cheaper than an index_add over every element for
    # the small windows of convolutions and pooling; long windows keep the single index_add
    count = g._shape[dim]
    if size <= 32:
        grad = _grad.zeros(shape, g)
        lead = (slice(None),) * dim
        for k in range(size):
            grad[lead + (slice(k, k + (count - 1) * step + 1, step),)] += g.select(-1, k)
        return (grad,)
    idx = (_primitives.arange(count, device=g.device).unsqueeze(1) * step +
           _primitives.arange(size, device=g.device).unsqueeze(0)).reshape(-1)
    moved = g.movedim(-1, dim + 1)                     # (..., count, size, ...)
    flat = moved.reshape(shape[:dim] + (count * size,) + shape[dim + 1:])
    return (_grad.zeros(shape, g).index_add(dim, idx, flat),)


unfold_op = define("unfold(Tensor self, int dimension, int size, int step) -> Tensor",
                   composite=_unfold,
                   derivative=Derivative(_unfold_backward, view=True, complex_ok=True))


@tensor_method()
def unfold(self, dimension, size, step):
    d = _wrap_dim(dimension, self.ndim, "unfold") if self.ndim else 0
    return unfold_op(self, d, int(size), int(step))


def _diagonal(self, offset, dim1, dim2):
    s1, s2 = self._shape[dim1], self._shape[dim2]
    if offset >= 0:
        length = max(min(s1, s2 - offset), 0)
        start = self._offset + offset * self._stride[dim2] if length else self._offset
    else:
        length = max(min(s1 + offset, s2), 0)
        start = self._offset - offset * self._stride[dim1] if length else self._offset
    keep = [i for i in range(self.ndim) if i not in (dim1, dim2)]
    shape = tuple(self._shape[i] for i in keep) + (length,)
    stride = tuple(self._stride[i] for i in keep) + (self._stride[dim1] + self._stride[dim2],)
    return self._view_of(shape, stride, start)


diagonal_op = define("diagonal(Tensor self, int offset, int dim1, int dim2) -> Tensor",
                     composite=_diagonal,
                     derivative=Derivative(_logical_backward(_diagonal), view=True,
                                           complex_ok=True))


def diagonal(input, offset=0, dim1=0, dim2=1):
    n = input.ndim
    if n < 2:
        raise RuntimeError(f"diagonal dimensions requires ndim larger than 1, got {n}")
    a, b = _wrap_dim(dim1, n, "diagonal"), _wrap_dim(dim2, n, "diagonal")
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return diagonal_op(input, int(offset), a, b)


Tensor.diagonal = diagonal


# -- split family: one op, one node for all its pieces (PyTorch's SplitBackward0,
# SplitWithSizesBackward0, UnbindBackward0, each output at its own output_nr) ------------------
def _split_views(self, split_size, dim):
    size = self._shape[dim]
    if size == 0:
        return [_slice_view(self, dim, 0, 0, 1)]
    return [_slice_view(self, dim, s, min(s + split_size, size), 1)
            for s in range(0, size, split_size)]


def _split_with_sizes_views(self, split_sizes, dim):
    out, start = [], 0
    for s in split_sizes:
        out.append(_slice_view(self, dim, start, start + s, 1))
        start += s
    return out


def _unbind_views(self, dim):
    return [_select(self, dim, i) for i in range(self._shape[dim])]


def _cat_pieces_backward(ctx, grads, self, sizes, dim):
    # the node hands every piece's gradient, zeros for pieces nothing used (as PyTorch does)
    return (_primitives.cat_op(list(grads), dim, grads[0].dtype),)


def _stack_pieces_backward(ctx, grads, self, dim):
    if not grads:   # nothing to stack: a dim of size 0
        return (_grad.zeros(ctx.meta(0)[0], self),)
    return (_primitives.cat_op([g.unsqueeze(dim) for g in grads], dim, grads[0].dtype),)


split_op = define("split(Tensor self, int split_size, int dim) -> Tensor[]",
                  composite=_split_views,
                  derivative=Derivative(_cat_pieces_backward, view=True, complex_ok=True))
split_with_sizes_op = define("split_with_sizes(Tensor self, int[] split_sizes, int dim) -> Tensor[]",
                             composite=_split_with_sizes_views,
                             derivative=Derivative(_cat_pieces_backward, view=True,
                                                   complex_ok=True))
unbind_op = define("unbind(Tensor self, int dim) -> Tensor[]", composite=_unbind_views,
                   derivative=Derivative(_stack_pieces_backward, view=True, complex_ok=True))


def _onnx_split(b, c, x, sizes, dim):
    if len(sizes) == 1:
        return [b.op("Identity", [x])]
    if any(c.is_symbolic(s) for s in sizes):   # pieces that follow a dynamic axis (time-major)
        return b.op("Split", [x, c.shape_tensor(list(sizes))], n_out=len(sizes), axis=dim)
    if dim in c.dynamic_dims(0):
        # a fixed number of pieces of a dim that follows a dynamic axis: the pieces this
        # capture made, as the slices they are (what exporting them one by one gave)
        out, start = [], 0
        for s in sizes:
            out.append(b.op("Slice", [x, b.ints([start]), b.ints([start + s]), b.ints([dim]),
                                      b.ints([1])]))
            start += s
        return out
    return b.op("Split", [x, b.ints([int(s) for s in sizes])], n_out=len(sizes), axis=dim)


@split_op.def_onnx
def _split_onnx(b, c, x, split_size, dim, *rest):
    size = c.shape(0)[dim]
    sizes = [min(split_size, size - s) for s in range(0, size, split_size)] if size else [0]
    return _onnx_split(b, c, x, sizes, dim)


@split_with_sizes_op.def_onnx
def _split_with_sizes_onnx(b, c, x, split_sizes, dim, *rest):
    return _onnx_split(b, c, x, split_sizes, dim)


@unbind_op.def_onnx
def _unbind_onnx(b, c, x, dim, *rest):
    pieces = _onnx_split(b, c, x, [1] * c.shape(0)[dim], dim)
    return [b.op("Squeeze", [p, b.ints([dim])]) for p in pieces]


def split(tensor, split_size_or_sections, dim=0):
    d = _wrap_dim(dim, tensor.ndim, "split")
    size = tensor._shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={step}")
        if step == 0 and size != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {size}")
        return tuple(split_op(tensor, step, d))
    return split_with_sizes(tensor, split_size_or_sections, d)


def split_with_sizes(input, split_sizes, dim=0):
    require_tensor(input, "split_with_sizes")
    d = _wrap_dim(dim, input.ndim, "split_with_sizes")
    size = input._shape[d]
    sections = [int(s) for s in split_sizes]
    if any(s < 0 for s in sections):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, "
                           f"but got split_sizes={sections}")
    if sum(sections) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={sections}")
    return tuple(split_with_sizes_op(input, sections, d))


Tensor.split = split


def chunk(input, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, input.ndim, "chunk")
    size = input._shape[d]
    if size == 0:  # PyTorch: `chunks` empty pieces, through split_with_sizes
        return tuple(split_with_sizes_op(input, [0] * chunks, d))
    return tuple(split_op(input, -(-size // chunks), d))


Tensor.chunk = chunk


def tensor_split(input, indices_or_sections, dim=0):
    d = _wrap_dim(dim, input.ndim, "tensor_split")
    size = input._shape[d]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.ndim > 1 or indices_or_sections.dtype.category != _dtype.INTEGRAL:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-"
                               "dimensional or one-dimensional tensor of integers, but got a "
                               f"tensor with {indices_or_sections.ndim} dims and dtype "
                               f"{indices_or_sections.dtype}")
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        bounds = [0]
        for i in range(n):
            bounds.append(bounds[-1] + q + (1 if i < r else 0))
    else:
        # each index is a slice bound: negative ones count from the end
        bounds = [0] + [min(max(int(i) + size if int(i) < 0 else int(i), 0), size)
                        for i in indices_or_sections] + [size]
    return [slice_op(input, d, bounds[i], max(bounds[i + 1], bounds[i]), 1)
            for i in range(len(bounds) - 1)]


Tensor.tensor_split = tensor_split


def unbind(input, dim=0):
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, input.ndim, "unbind")
    return tuple(unbind_op(input, d))


Tensor.unbind = unbind


# -- ember.func: dims shift past the batch; views are linear (the tangent's view) --------------
slice_op.def_batch_rule(_batching.shift_dims(slice_op, 1))
select_op.def_batch_rule(_batching.shift_dims(select_op, 1))
unfold_op.def_batch_rule(_batching.shift_dims(unfold_op, 1))
diagonal_op.def_batch_rule(_batching.shift_dims(diagonal_op, 2, 3))
split_op.def_batch_rule(_batching.shift_dims(split_op, 2))
split_with_sizes_op.def_batch_rule(_batching.shift_dims(split_with_sizes_op, 2))
unbind_op.def_batch_rule(_batching.shift_dims(unbind_op, 1))
for _op in (slice_op, select_op, unfold_op, diagonal_op, split_op, split_with_sizes_op,
            unbind_op):
    _op.def_jvp(_tangents.linear(_op))
