"""Subscripts: ``t[...]`` / ``t[...] = v``, the ``index`` / ``index_put_`` / ``index_put`` ops
they reach, ``nonzero`` (bool masks index through it) and ``take`` — each op with its meta and
derivative.

Basic indices (ints, slices, None, Ellipsis) build a view with the view ops, so writes through
the result change the base. Tensor, list and bool-mask indices are advanced: they go to the
``index`` / ``index_put_`` kernels with one index tensor (or None) per dim of that view. Index
tensors arrive broadcastable to each other (``index_put_``'s values already expanded to the
indexing result); the kernels place the advanced result dims like PyTorch and numpy (in place
when the indexed dims are adjacent, else first) and check the bounds. ``index_put``, the
functional twin through which autograd records ``index_put_``, is a composite: a copy, then
``index_put_``.
"""
from __future__ import annotations

import numpy as np

from ... import _dtype
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import NOT_DIFFERENTIABLE, Derivative
from .. import _batching, _grad, _tangents
from .. import _meta
from .. import conversion as _conv
from .. import factories as _fac
from .._util import (_broadcast_pair, _dtype_title, broadcast_shapes, ember_namespace,
                     every_example, require_tensor,
                     tensor_method, write_out)
from ...runtime.registry import registry
from ..elementwise._rules import write_in_place
from ..views import expand_op, select_op, slice_op, unsqueeze, view_op


# -- metas --------------------------------------------------------------------------------------
def _index_shape(op, shape, indices):
    """``view[indices]`` with one index tensor (or None) per leading dim: the broadcast index
    shape replaces adjacent indexed dims, and goes first when they are not adjacent."""
    indices = list(indices) + [None] * (len(shape) - len(indices))
    if len(indices) > len(shape):
        raise IndexError(f"{op}: too many indices ({len(indices)}) for a tensor of shape "
                         f"{list(shape)}")
    dims = [d for d, t in enumerate(indices) if t is not None]
    if not dims:
        return tuple(shape)
    try:
        b = _meta.broadcast(op, *[indices[d] for d in dims])
    except RuntimeError:
        raise IndexError(f"{op}: shape mismatch: indexing tensors could not be broadcast "
                         f"together with shapes "
                         f"{', '.join(str(list(indices[d]._shape)) for d in dims)}") from None
    if dims == list(range(dims[0], dims[-1] + 1)):
        return tuple(shape[:dims[0]]) + b + tuple(shape[dims[-1] + 1:])
    return b + tuple(s for d, s in enumerate(shape) if indices[d] is None)


def _index_meta(self, indices):
    return _index_shape("index", tuple(self._shape), indices), self.dtype


def _index_put_meta(self, indices, values, accumulate):
    target = _index_shape("index_put_", tuple(self._shape), indices)
    try:
        _broadcast_pair(target, _meta.shape_of(values))
    except RuntimeError:
        raise RuntimeError(f"index_put_: shape mismatch: value tensor of shape "
                           f"{list(_meta.shape_of(values))} cannot be broadcast to indexing "
                           f"result of shape {list(target)}") from None
    return self


# -- ops ----------------------------------------------------------------------------------------
def _index_backward(ctx, g, self, indices):
    shape = ctx.meta(0)[0]
    return (index_put_op(_grad.zeros(shape, g), indices, g, True),)


index_op = define("index(Tensor self, Tensor?[] indices) -> Tensor", meta=_index_meta,
                  derivative=Derivative(_index_backward, save=("indices",), diff=("self",),
                                        complex_ok=True))


def _index_put(self, indices, values, accumulate):
    out = _conv.to_copy_op(self, self.dtype)
    index_put__op(out, indices, values, accumulate)
    return out


def _index_put_backward(ctx, g, self, indices, values, accumulate):
    gs = gv = None
    if ctx.needs(0):
        if accumulate:
            gs = g
        else:  # zeros where values were written (kernels get values shaped like the result)
            written = _index_shape("index_put", g._shape, indices)
            gs = index_put_op(g, indices, _grad.zeros(written, g), False)
    if ctx.needs(2):
        gv = index_op(g, indices)
    return gs, None, gv


index_put_op = define("index_put(Tensor self, Tensor?[] indices, Tensor values, "
                      "bool accumulate) -> Tensor", composite=_index_put,
                      derivative=Derivative(_index_put_backward, save=("indices",),
                                            diff=("self", "values"), complex_ok=True),
                      doc="index_put_ on a copy: the functional twin through which autograd "
                          "records index_put_.")
index_put__op = define("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, "
                       "bool accumulate) -> Tensor(a!)", meta=_index_put_meta,
                       functional=index_put_op)
nonzero_op = define("nonzero(Tensor self) -> Tensor", derivative=NOT_DIFFERENTIABLE)

_INDEX_DTYPES = (_dtype.int64, _dtype.int32, _dtype.uint8, _dtype.bool_)
_MASK_DTYPES = (_dtype.bool_, _dtype.uint8)
_SELECT_DTYPES = (_dtype.int64, _dtype.int32, _dtype.int16, _dtype.int8)


# -- parsing an index ---------------------------------------------------------------------------
def _index_tensor(obj, device):
    """A list, tuple, ndarray or Tensor used as an index -> an index Tensor on ``device``."""
    if isinstance(obj, Tensor):
        t = obj
    else:
        data = list(obj) if isinstance(obj, range) else obj
        # an empty list carries no dtype: PyTorch reads it as an empty long index
        t = _fac.tensor(data, dtype=_dtype.int64 if np.size(data) == 0 else None, device=device)
    if t.dtype not in _INDEX_DTYPES:
        raise IndexError(f"index: tensors used as indices must be long, int, byte or bool "
                         f"tensors, got a tensor of dtype {t.dtype}")
    return t if t.device is device else t.to(device)


def _entry(e, device):
    """One index entry -> an int, slice, None, Ellipsis, Python bool or index Tensor."""
    if e is None or e is Ellipsis or isinstance(e, slice):
        return e
    if isinstance(e, (bool, np.bool_)):
        return bool(e)
    if isinstance(e, Tensor):
        if e.ndim == 0 and e.dtype in _SELECT_DTYPES:
            return int(e.item())  # a 0-d integer tensor selects, like an int
        if e.ndim == 0 and e.dtype in _MASK_DTYPES:
            return bool(e.item())
        if e.device is not device and e.device.type != "cpu":
            raise IndexError(f"indices should be either on cpu or on the same device as the "
                             f"indexed tensor ({device})")
        return _index_tensor(e, device)
    if isinstance(e, (list, tuple, range, np.ndarray)):
        return _index_tensor(e, device)
    if hasattr(e, "__index__"):
        return e.__index__()
    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                     f"Variables are valid indices (got {type(e).__name__})")


def _dims_used(e):
    if e is None or e is Ellipsis or isinstance(e, bool):
        return 0
    return e.ndim if isinstance(e, Tensor) and e.dtype in _MASK_DTYPES else 1


def _resolve(self, index):
    """Apply the basic part of ``index`` as a view; return (view, indices).

    ``indices`` is None for a purely basic index, else a list with an int64-or-int32 index
    tensor or None for every dim of the view (bool masks expanded with ``nonzero``).
    """
    in_tuple = isinstance(index, tuple)
    entries = [_entry(e, self.device) for e in (index if in_tuple else (index,))]
    used = ellipses = 0
    for e in entries:  # one loop: indexing is on the hot path of every training step
        if e is Ellipsis:
            ellipses += 1
        elif e.__class__ is int or e.__class__ is slice:
            used += 1
        else:
            used += _dims_used(e)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > self.ndim:
        if self.ndim == 0:
            raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                             "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number")
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    view, dim, advanced = self, 0, []
    for pos, e in enumerate(entries):
        if e is Ellipsis:
            dim += self.ndim - used
        elif e is None:
            view = unsqueeze(view, dim)
            dim += 1
        elif isinstance(e, bool):
            # PyTorch: a new dim of size 1, indexed by [0] (True) or by nothing (False)
            view = unsqueeze(view, dim)
            advanced.append((dim, _bool_index(e, self.device)))
            dim += 1
        elif isinstance(e, slice):
            start, stop, step = (None if x is None else x.__index__()
                                 for x in (e.start, e.stop, e.step))
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step is not None and step < 0:
                raise ValueError("step must be greater than zero")
            # PyTorch skips a slice of a whole dim inside a tuple index (x[:, 3] is one
            # select, with one SelectBackward0), but not a lone x[:]
            if not (in_tuple and (start is None or start == 0) and (step is None or step == 1)
                    and (stop is None or stop >= view._shape[dim])):
                view = slice_op(view, dim, start, stop, 1 if step is None else step)
            dim += 1
        elif isinstance(e, Tensor):
            advanced.append((dim, e))
            dim += _dims_used(e)
        else:
            size = view._shape[dim]
            if not -size <= e < size:
                # PyTorch names the position of the entry in the index
                raise IndexError(f"index {e} is out of bounds for dimension {pos} with size "
                                 f"{size}")
            view = select_op(view, dim, e)
    if not advanced:
        return view, None
    # masks are checked against the fully sliced view, as PyTorch reports them
    indices = [None] * view.ndim
    for d, t in advanced:
        if t.dtype in _MASK_DTYPES:
            for j, n in enumerate(t._shape):
                if n != view._shape[d + j]:
                    raise IndexError(f"The shape of the mask {list(t._shape)} at index {j} does "
                                     f"not match the shape of the indexed tensor "
                                     f"{list(view._shape)} at index {d + j}")
            for j, idx in enumerate(nonzero(t, as_tuple=True)):
                indices[d + j] = idx
        else:
            indices[d] = t
    _broadcast_indices(indices)
    return view, indices


def _bool_index(value, device):
    return _fac.tensor([0] if value else [], dtype=_dtype.int64, device=device)


def _broadcast_indices(indices):
    shapes = [t._shape for t in indices if t is not None]
    try:
        return broadcast_shapes(*shapes)
    except RuntimeError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                         "shapes " + ", ".join(str(list(s)) for s in shapes)) from None


def _result_shape(shape, indices):
    """Shape of ``view[indices]``: the broadcast index shape replaces the indexed dims when
    they are adjacent and goes first otherwise."""
    dims = [d for d, t in enumerate(indices) if t is not None]
    b = _broadcast_indices(indices)
    if dims == list(range(dims[0], dims[-1] + 1)):
        return shape[:dims[0]] + b + shape[dims[-1] + 1:]
    return b + tuple(s for d, s in enumerate(shape) if indices[d] is None)


def _plain_view(self, index):
    """``self[index]`` when ``index`` is an int, or a tuple of ints, slices (ints or None, steps
    >= 1) and at most one Ellipsis, all in bounds: the views ``_resolve`` would take, found
    without its general walk (indexing is on every step's path). None for anything else, with
    nothing done: ``_resolve`` then applies (and raises) as usual."""
    shape = self._shape
    if index.__class__ is int:
        if shape and -shape[0] <= index < shape[0]:
            return select_op(self, 0, index)
        return None
    if index.__class__ is not tuple:
        return None
    ellipsis = -1
    for pos, e in enumerate(index):
        c = e.__class__
        if c is slice:
            start, stop, step = e.start, e.stop, e.step
            if not ((start is None or start.__class__ is int) and
                    (stop is None or stop.__class__ is int) and
                    (step is None or (step.__class__ is int and step > 0))):
                return None
        elif e is Ellipsis:
            if ellipsis >= 0:
                return None
            ellipsis = pos
        elif c is not int:
            return None
    used = len(index) - (ellipsis >= 0)
    if used > len(shape):
        return None
    dims = []   # the input dim of each entry (an Ellipsis stands for the ones it skips)
    dim = 0
    for pos, e in enumerate(index):
        if pos == ellipsis:
            dim += len(shape) - used
            dims.append(None)
            continue
        if e.__class__ is int and not -shape[dim] <= e < shape[dim]:
            return None
        dims.append(dim)
        dim += 1
    view, out_dim = self, 0
    for e, dim in zip(index, dims):
        if dim is None:
            out_dim += len(shape) - used
        elif e.__class__ is int:
            view = select_op(view, out_dim, e)
        else:
            start, stop, step = e.start, e.stop, e.step
            # a whole dim is skipped, as _resolve does (x[:, 3] is one select)
            if not ((start is None or start == 0) and (step is None or step == 1) and
                    (stop is None or stop >= shape[dim])):
                view = slice_op(view, out_dim, start, stop, 1 if step is None else step)
            out_dim += 1
    return view


@tensor_method("__getitem__")
def _getitem(self, index):
    view = _plain_view(self, index)
    if view is not None:
        return view if view is not self else view_op(self, self._shape)
    view, indices = _resolve(self, index)
    if indices is None:
        # x[...] is still a new view object, as in PyTorch; through view_op so autograd sees it
        return view if view is not self else view_op(self, self._shape)
    return index_op(view, indices)


@tensor_method("__setitem__")
def _setitem(self, index, value):
    view, indices = _resolve(self, index)
    if indices is None:
        view.copy_(_values(value, self, view._shape, strip=True, advanced=False))
        return
    if isinstance(value, Tensor) and value.dtype is not self.dtype and \
            not _fills_through_mask(self, index, value):
        _dtype_mismatch(self, value)  # advanced indexing is index_put_: no implicit cast
    values = _values(value, self, _result_shape(view._shape, indices), strip=True)
    index_put__op(view, indices, values, False)
    self._storage.version += 1


def _fills_through_mask(self, index, value):
    """PyTorch's index_put_ runs ``masked_fill_`` (which casts) when the only index tensor is
    one bool/uint8 mask on ``self``'s device and the value is one element on the CPU
    (``logits[mask] = torch.tensor(-inf)`` with half logits)."""
    if value.numel() != 1 or value.device.type != "cpu":
        return False
    entries = index if isinstance(index, tuple) else (index,)
    tensors = [e for e in entries if isinstance(e, (Tensor, list, np.ndarray))]
    return len(tensors) == 1 and isinstance(tensors[0], Tensor) and \
        tensors[0].dtype in (_dtype.bool_, _dtype.uint8) and tensors[0].device is self.device


def _dtype_mismatch(self, values):
    raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                       f"{_dtype_title(self.dtype)} for the destination and "
                       f"{_dtype_title(values.dtype)} for the source.")


def _values(value, self, target, strip, advanced=True):
    """``value`` as a tensor of ``self``'s dtype and device, expanded to ``target``."""
    if isinstance(value, Tensor):
        v = value if value.device is self.device else value.to(self.device)
        v = v if v.dtype is self.dtype else v.to(self.dtype)
    else:
        v = _fac.tensor(value, dtype=self.dtype, device=self.device)
    shape = v._shape
    # PyTorch drops leading size-1 dims of the value beyond the target's rank
    while strip and v.ndim > len(target) and v._shape[0] == 1:
        v = select_op(v, 0, 0)
    if v._shape == target:
        return v
    try:
        return expand_op(v, target)
    except RuntimeError:
        if not advanced:
            raise  # PyTorch's expand message, as for x[1:] = y
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(shape)} cannot be "
                           f"broadcast to indexing result of shape {list(target)}") from None


def _index_put_args(self, indices, values):
    """(view, one index or None per dim of the view, values expanded to the indexing result)
    for ``index_put_`` and ``index_put``."""
    if not isinstance(indices, (list, tuple)):
        raise TypeError(f"index_put_(): argument 'indices' must be tuple of Tensors, not "
                        f"{type(indices).__name__}")
    for i, t in enumerate(indices):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    if not indices:
        raise RuntimeError("index_put_(): expected at least one index tensor")
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put_(): argument 'values' must be Tensor, not "
                        f"{type(values).__name__}")
    if values.dtype is not self.dtype:
        _dtype_mismatch(self, values)
    n_used = sum(_dims_used(t) for t in indices)
    if n_used > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim} (got {n_used})")
    # the indices apply as in t[indices]: 0-d integer tensors select, masks expand
    view, full = _resolve(self, tuple(_index_tensor(t, self.device) for t in indices))
    if full is None:  # only 0-d integer indices: they selected a sub-tensor
        full, target = [None] * view.ndim, view._shape
    else:
        target = _result_shape(view._shape, full)
    return view, full, _values(values, self, target, strip=False)


@tensor_method()
def index_put_(self, indices, values, accumulate=False):
    view, full, values = _index_put_args(self, indices, values)
    index_put__op(view, full, values, bool(accumulate))
    self._storage.version += 1
    return self


@tensor_method()
def index_put(input, indices, values, accumulate=False):
    view, full, expanded = _index_put_args(input, indices, values)
    if view is not input:  # 0-d indices selected a sub-tensor first: index_put_ on a copy
        return index_put_(input.clone(), indices, values, accumulate)
    return index_put_op(input, full, expanded, bool(accumulate))


# -- nonzero / take -----------------------------------------------------------------------------
@tensor_method()
def nonzero(input, *, out=None, as_tuple=False):
    r = nonzero_op(input)
    if not as_tuple:
        return r if out is None else write_out(out, r, "nonzero")
    if input.ndim == 0:
        return (_fac.zeros(r._shape[0], dtype=_dtype.int64, device=input.device),)
    return tuple(r.select(1, k) for k in range(input.ndim))


@tensor_method()
def argwhere(input):
    return nonzero_op(input)


# take and put index self as if it were flat: one op each with torch's formulas (TakeBackward0,
# PutBackward0), the kit's kernel on array backends, index/index_put on a flat view elsewhere
def _take(self, index):
    return view_op(index_op(self.reshape(-1), [index.reshape(-1)]), index._shape)


def _put(self, index, source, accumulate):
    # index_put is functional (a copy) and takes negative indices, as put does
    return index_put_op(self.reshape(-1), [index.reshape(-1)], source.reshape(-1),
                        accumulate).reshape(self._shape)


def _take_backward(ctx, g, self, index):
    # torch's take_backward: zeros of self's shape with grad added at index
    return (put_op(_grad.zeros(ctx.meta(0)[0], g), index, g, True), None)


def _put_backward(ctx, g, self, index, source, accumulate):
    g_self = g_source = None
    if ctx.needs(0):
        # (zeros shaped like index: source has its numel, and its meta only if it needs grad)
        g_self = g if accumulate else put_op(g, index, _grad.zeros(index._shape, g), False)
    if ctx.needs(2):
        g_source = take_op(g, index).reshape(ctx.meta(2)[0])
    return g_self, None, g_source


take_op = define("take(Tensor self, Tensor index) -> Tensor",
                 meta=lambda self, index: (_meta.shape_of(index), self.dtype), composite=_take,
                 derivative=Derivative(_take_backward, save=("index",), diff=("self",),
                                       complex_ok=True),
                 doc="self's elements at index, self read as a flat tensor")
put_op = define("put(Tensor self, Tensor index, Tensor source, bool accumulate) -> Tensor",
                meta=_meta.same("put"), composite=_put,
                derivative=Derivative(_put_backward, save=("index",), diff=("self", "source"),
                                      complex_ok=True),
                doc="self with source's elements put (or added) at index, self read as flat")


def _check_flat_index(op, index, n):
    # a device without values (meta) can't be checked, as torch's meta take/put aren't
    if index.numel() and registry.get(index.device.type).has_data:
        every = every_example(index)
        lo, hi = int(every.min().item()), int(every.max().item())
        if hi >= n or lo < -n:
            raise IndexError(f"{op}: out of range: tried to access index "
                             f"{hi if hi >= n else lo} on a tensor of {n} elements.")


@tensor_method()
def take(input, index):
    if not isinstance(index, Tensor) or index.dtype is not _dtype.int64:
        got = _dtype_title(index.dtype) if isinstance(index, Tensor) else type(index).__name__
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {got}")
    _check_flat_index("take", index, input.numel())
    return take_op(input, index)


put__op = define("put_(Tensor(a!) self, Tensor index, Tensor source, bool accumulate) -> "
                 "Tensor(a!)", meta=_meta.inplace("put_"), composite=_conv.written_back(put_op),
                 functional=put_op)


def put(input, index, source, accumulate=False):
    """``input`` (flattened) with ``source`` put (or added) at ``index``."""
    _check_put("put", input, index, source)
    return put_op(input, index, source, bool(accumulate))


@tensor_method()
def put_(self, index, source, accumulate=False):
    """``put`` into ``self`` (PutBackward0, as torch records it)."""
    _check_put("put_", self, index, source)
    return write_in_place(put__op, "put_", self, index, source, bool(accumulate))


def _check_put(name, input, index, source):
    require_tensor(input, name)
    if not isinstance(index, Tensor) or index.dtype is not _dtype.int64:
        got = _dtype_title(index.dtype) if isinstance(index, Tensor) else type(index).__name__
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {got}")
    require_tensor(source, name, "source")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {input.dtype} and source.dtype = {source.dtype}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {source.numel()}, "
                           f"index.numel() = {index.numel()}")
    _check_flat_index("put", index, input.numel())


@tensor_method()
def nonzero_static(input, *, size, fill_value=-1):
    """``nonzero`` padded with ``fill_value`` (or truncated) to ``size`` rows."""
    require_tensor(input, "nonzero_static")
    em = ember_namespace()
    if size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be an non-negative integer, got {size}")
    nz = input.nonzero()
    k = nz.shape[0]
    if k >= size:
        return nz[:size]
    pad = em.full((size - k, max(input.ndim, 1) if input.ndim else 0), fill_value,
                  dtype=_dtype.int64, device=input.device)
    return em.cat([nz, pad], 0)


def unravel_index(indices, shape):
    """The coordinates, one tensor per dim of ``shape``, of flat ``indices``."""
    em = ember_namespace()
    if not isinstance(indices, Tensor):
        indices = em.tensor(indices)
    if indices.is_floating_point() or indices.is_complex() or indices.dtype is _dtype.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(shape)}")
    numel = 1
    for s in shape:
        numel *= s
    if indices.numel() and type(indices) is Tensor:
        lo, hi = int(indices.min().item()), int(indices.max().item())
        if lo < -numel or hi >= numel:
            raise ValueError(f"'indices' must be in range [{-numel}, {numel - 1}]")
    flat = indices.to(_dtype.int64)
    flat = em.where(flat.lt(0), flat + numel, flat)
    coords = []
    for s in reversed(shape):
        coords.append(flat % s if s else flat * 0)
        flat = flat // s if s else flat
    return tuple(reversed(coords))


@tensor_method("fill_diagonal_")
def _fill_diagonal_(self, fill_value, wrap=False):
    em = ember_namespace()
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.ndim > 2:
        n = self.shape[0]
        idx = em.arange(n, device=self.device)
        index = (idx,) * self.ndim
    else:
        rows, cols = self.shape
        if wrap and rows > cols + 1:
            pos = em.arange(0, rows * cols, cols + 1, device=self.device)
            index = (pos // cols, pos % cols)
        else:
            k = em.arange(min(rows, cols), device=self.device)
            index = (k, k)
    value = em.tensor(fill_value, dtype=self.dtype, device=self.device)
    return self.index_put_(index, value.expand(index[0].shape[0]))


# -- ember.func: batching rules --------------------------------------------------------------------
def _batched_indices(self_batched, indices, idims, size):
    """The physical index list: the batch gets an arange index of its own when ``self`` is
    batched, batched index tensors line up after it; plus the permutation that puts the result
    back in the example's order (advanced indices not at the front move ahead of the dims
    before them once the batch index joins them)."""
    positions = [d for d, t in enumerate(indices) if t is not None]
    shapes = [t._shape[1:] if dd is not None else t._shape
              for t, dd in zip(indices, idims) if t is not None]
    rank = len(broadcast_shapes(*shapes)) if shapes else 0
    phys = []
    for t, dd in zip(indices, idims):
        if t is None:
            phys.append(None)
        elif dd is not None:
            phys.append(_batching.pad_logical(t, rank))
        else:
            phys.append(t)
    if not self_batched:
        return phys, None
    ar = _fac.arange(size, dtype=_dtype.int64, device=next(
        t for t in indices if t is not None).device)
    phys = [view_op(ar, (size,) + (1,) * rank)] + phys
    adjacent = positions == list(range(positions[0], positions[-1] + 1))
    start = positions[0]
    if not adjacent or start == 0:
        return phys, None
    # result: (batch, index dims..., dims before the block..., dims after it...)
    order = [0] + list(range(1 + rank, 1 + rank + start)) + list(range(1, 1 + rank))
    return phys, order


def _index_batch_rule(args, bdims, layer):
    self, indices = args
    ds, idims = bdims[0], bdims[1]
    if ds is None and all(d is None for d in idims):
        return index_op(self, indices), None
    if any(t is not None and t.dtype in (_dtype.bool_, _dtype.uint8) for t in indices) or \
            all(t is None for t in indices):
        return _batching.loop(index_op, args, bdims, layer)
    size = next(t._shape[0] for t, d in zip([self] + list(indices), (ds,) + tuple(idims))
                if d is not None)
    phys, order = _batched_indices(ds is not None, list(indices), idims, size)
    out = index_op(self, phys)
    if ds is None:   # the batch sits where the index block lands in the example
        positions = [d for d, t in enumerate(indices) if t is not None]
        adjacent = positions == list(range(positions[0], positions[-1] + 1))
        return out, (positions[0] if adjacent else 0)
    if order is not None:
        order = order + list(range(len(order), out.ndim))
        out = out.permute(*order)
    return out, 0


def _index_put_physical(x, indices, idims, values, vdim, accumulate):
    """index_put_ into ``x`` (batched physical, written in place)."""
    size = x._shape[0]
    example = tuple(x._shape[1:])
    full = list(indices) + [None] * (len(example) - len(indices))
    positions = [d for d, t in enumerate(full) if t is not None]
    block = broadcast_shapes(*[t._shape[1:] if d is not None else t._shape
                               for t, d in zip(indices, idims) if t is not None])
    if positions == list(range(positions[0], positions[-1] + 1)):
        target = example[:positions[0]] + tuple(block) + example[positions[-1] + 1:]
    else:
        target = tuple(block) + tuple(s for s, t in zip(example, full) if t is None)
    phys, order = _batched_indices(True, list(indices), idims, size)
    v = values
    if vdim is not None:
        v = _batching.pad_logical(v, len(target))
    else:
        v = _batching.unsqueeze_at(v, 0) if v.ndim else v
    v = expand_op(v, (size,) + tuple(target)) if v.ndim else v
    if order is not None and v.ndim:
        inverse = [0] * len(order)
        for i, o in enumerate(order):
            inverse[o] = i
        v = v.permute(*(inverse + list(range(len(inverse), v.ndim))))
    index_put__op(x, phys, v, accumulate)
    return x


def _index_put__batch_rule(args, bdims, layer):
    self, indices, values, accumulate = args
    _batching.inplace_check(index_put__op, args, bdims)
    if bdims[0] is None:
        return index_put__op(*args), None
    if any(t is not None and t.dtype in (_dtype.bool_, _dtype.uint8) for t in indices):
        return _batching.loop(index_put__op, args, bdims, layer)
    return _index_put_physical(self, indices, bdims[1], values, bdims[2], accumulate), 0


def _index_put_batch_rule(args, bdims, layer):
    self, indices, values, accumulate = args
    if all(d is None for d in (bdims[0], bdims[2])) and all(d is None for d in bdims[1]):
        return index_put_op(*args), None
    if any(t is not None and t.dtype in (_dtype.bool_, _dtype.uint8) for t in indices):
        return _batching.loop(index_put_op, args, bdims, layer)
    size = _batching.batch_size_of(args, bdims, layer)
    x = _conv.to_copy_op(_batching.materialize(self, bdims[0], size), self.dtype)
    return _index_put_physical(x, indices, bdims[1], values, bdims[2], accumulate), 0


index_op.def_batch_rule(_index_batch_rule)
index_put__op.def_batch_rule(_index_put__batch_rule)
index_put_op.def_batch_rule(_index_put_batch_rule)
index_op.def_jvp(_tangents.linear(index_op))
index_put_op.def_jvp(_tangents.linear(index_put_op, (0, 2)))
