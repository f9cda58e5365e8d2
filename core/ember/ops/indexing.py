"""Indexing: ``t[...]`` / ``t[...] = v`` and the gather/scatter family.

Basic indices (ints, slices, None, Ellipsis) build a view with the ops of ``views.py``, so
writes through the result change the base. Tensor, list and bool-mask indices are advanced:
they go to the ``index`` / ``index_put_`` kernels with one index tensor (or None) per dim of
that view. Index tensors arrive broadcastable to each other (``index_put_``'s values already
expanded to the indexing result); the kernels place the advanced result dims like PyTorch and
numpy (in place when the indexed dims are adjacent, else first) and check the bounds.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
from ..dispatch.dispatcher import define
from . import _meta
from ._util import _dtype_title, broadcast_shapes, tensor_method, write_out
from .views import view_op, expand_op, select_op, slice_op, unsqueeze

__all__ = ["gather", "scatter", "scatter_add", "index_select", "index_add", "index_copy",
           "index_put", "masked_fill", "masked_select", "nonzero", "argwhere", "take",
           "one_hot"]

index_op = define("index(Tensor self, Tensor?[] indices) -> Tensor", meta=_meta.index)
index_put_op = define("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, "
                      "bool accumulate) -> Tensor(a!)", meta=_meta.index_put_)
gather_op = define("gather(Tensor self, int dim, Tensor index) -> Tensor", meta=_meta.gather)
scatter_op = define("scatter(Tensor self, int dim, Tensor index, Tensor src, str? reduce) -> "
                    "Tensor", meta=_meta.scatter)
index_select_op = define("index_select(Tensor self, int dim, Tensor index) -> Tensor",
                         meta=_meta.index_select)
index_add_op = define("index_add(Tensor self, int dim, Tensor index, Tensor source, "
                      "Scalar alpha) -> Tensor", meta=_meta.index_add)
masked_fill_op = define("masked_fill(Tensor self, Tensor mask, Tensor value) -> Tensor",
                        meta=_meta.masked_fill)
masked_select_op = define("masked_select(Tensor self, Tensor mask) -> Tensor")
nonzero_op = define("nonzero(Tensor self) -> Tensor")

_INDEX_DTYPES = (_dtype.int64, _dtype.int32, _dtype.uint8, _dtype.bool_)
_MASK_DTYPES = (_dtype.bool_, _dtype.uint8)
_SELECT_DTYPES = (_dtype.int64, _dtype.int32, _dtype.int16, _dtype.int8)


# -- parsing an index ---------------------------------------------------------------------------
def _index_tensor(obj, device):
    """A list, tuple, ndarray or Tensor used as an index -> an index Tensor on ``device``."""
    if isinstance(obj, Tensor):
        t = obj
    else:
        from .factories import tensor
        data = list(obj) if isinstance(obj, range) else obj
        # an empty list carries no dtype: PyTorch reads it as an empty long index
        t = tensor(data, dtype=_dtype.int64 if np.size(data) == 0 else None, device=device)
    if t.dtype not in _INDEX_DTYPES:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
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
    entries = [_entry(e, self.device) for e in (index if isinstance(index, tuple) else (index,))]
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_dims_used(e) for e in entries)
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
    from .factories import tensor
    return tensor([0] if value else [], dtype=_dtype.int64, device=device)


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


@tensor_method("__getitem__")
def _getitem(self, index):
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
    values = _values(value, self, _result_shape(view._shape, indices), strip=True)
    index_put_op(view, indices, values, False)
    self._storage.version += 1


def _values(value, self, target, strip, advanced=True):
    """``value`` as a tensor of ``self``'s dtype and device, expanded to ``target``."""
    if isinstance(value, Tensor):
        v = value if value.device is self.device else value.to(self.device)
        v = v if v.dtype is self.dtype else v.to(self.dtype)
    else:
        from .factories import tensor
        v = tensor(value, dtype=self.dtype, device=self.device)
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


@tensor_method()
def index_put_(self, indices, values, accumulate=False):
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
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_dtype_title(self.dtype)} for the destination and "
                           f"{_dtype_title(values.dtype)} for the source.")
    n_used = sum(_dims_used(t) for t in indices)
    if n_used > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim} (got {n_used})")
    # the indices apply as in t[indices]: 0-d integer tensors select, masks expand
    view, full = _resolve(self, tuple(_index_tensor(t, self.device) for t in indices))
    if full is None:  # only 0-d integer indices: they selected a sub-tensor
        full, target = [None] * view.ndim, view._shape
    else:
        target = _result_shape(view._shape, full)
    index_put_op(view, full, _values(values, self, target, strip=False), bool(accumulate))
    self._storage.version += 1
    return self


@tensor_method()
def index_put(input, indices, values, accumulate=False):
    return index_put_(input.clone(), indices, values, accumulate)


# -- gather / scatter ---------------------------------------------------------------------------
def _check_index(op, input, dim, index, src=None):
    if not isinstance(index, Tensor) or index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"{op}(): Expected dtype int64 for index")
    d = _wrap_dim(dim, input.ndim, op)
    if index.ndim != input.ndim and not (index.ndim <= 1 and input.ndim <= 1):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'input' if src is None else 'self'} tensor")
    if input.ndim == 0 or index.ndim == 0:
        return d
    too_big = [k for k in range(index.ndim) if k != d and index._shape[k] > input._shape[k]]
    if src is None:
        if too_big:
            raise RuntimeError(f"Size does not match at dimension {too_big[0]} expected index "
                               f"{list(index._shape)} to be no larger than self "
                               f"{list(input._shape)} apart from dimension {d}")
    elif too_big or (src.ndim and any(index._shape[k] > src._shape[k]
                                      for k in range(index.ndim))):
        raise RuntimeError(f"Expected index {list(index._shape)} to be no larger than self "
                           f"{list(input._shape)} apart from dimension {d} and to be no larger "
                           f"size than src {list(src._shape)}")
    return d


@tensor_method()
def gather(input, dim, index, *, sparse_grad=False, out=None):
    d = _check_index("gather", input, dim, index)
    r = gather_op(input, d, index)
    return r if out is None else write_out(out, r, "gather")


def _scatter(op_name, input, dim, index, src, reduce):
    if src is None:
        raise TypeError(f"{op_name}(): expected a src tensor or a value")
    if not isinstance(src, Tensor):
        from .factories import full
        src = full(index._shape if isinstance(index, Tensor) else (), src, dtype=input.dtype,
                   device=input.device)
    elif src.dtype is not input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    d = _check_index(op_name, input, dim, index, src)
    return scatter_op(input, d, index, src, reduce)


@tensor_method()
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    return _scatter("scatter", input, dim, index, value if src is None else src, reduce)


@tensor_method()
def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    return _assign(self, scatter(self, dim, index, src, value=value, reduce=reduce))


@tensor_method()
def scatter_add(input, dim, index, src):
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add(): argument 'src' must be Tensor, not "
                        f"{type(src).__name__}")
    return _scatter("scatter_add", input, dim, index, src, "add")


@tensor_method()
def scatter_add_(self, dim, index, src):
    return _assign(self, scatter_add(self, dim, index, src))


def _assign(self, result):
    """In-place variant: the out-of-place kernel, then a copy (bumps the version)."""
    return self.copy_(result)


# -- index_select / index_add / index_copy ------------------------------------------------------
def _vector_index(op, index):
    if not isinstance(index, Tensor) or index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    return index.reshape(-1)


@tensor_method()
def index_select(input, dim, index, *, out=None):
    d = _wrap_dim(dim, input.ndim, "index_select")
    index = _vector_index("index_select", index)
    if input.ndim == 0 and index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{index.numel()} value(s)")
    r = index_select_op(input, d, index)
    return r if out is None else write_out(out, r, "index_select")


def _check_source(op, input, d, index, source):
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not "
                        f"{type(source).__name__}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): self ({_dtype_title(input.dtype)}) and source "
                           f"({_dtype_title(source.dtype)}) must have the same scalar type")
    n = index.numel()
    src_shape = source._shape if source.ndim else (1,)
    self_shape = input._shape if input.ndim else (1,)
    if len(src_shape) != len(self_shape) or any(
            k != d and src_shape[k] != self_shape[k] for k in range(len(self_shape))):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input._shape)} "
                           f"source.shape = {list(source._shape)}")
    if src_shape[d] != n:
        raise RuntimeError(f"{op}(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({src_shape[d]}), for dim: {d}")


@tensor_method()
def index_add(input, dim, index, source, *, alpha=1):
    d = _wrap_dim(dim, input.ndim, "index_add")
    index = _vector_index("index_add_", index)
    _check_source("index_add_", input, d, index, source)
    if input.dtype.category <= _dtype.INTEGRAL:
        alpha = int(alpha)
    return index_add_op(input, d, index, source, alpha)


@tensor_method()
def index_add_(self, dim, index, source, *, alpha=1):
    return _assign(self, index_add(self, dim, index, source, alpha=alpha))


@tensor_method()
def index_copy_(self, dim, index, source):
    d = _wrap_dim(dim, self.ndim, "index_copy")
    index = _vector_index("index_copy_", index)
    _check_source("index_copy_", self, d, index, source)
    size = self._shape[d] if self.ndim else 1
    if index.numel():
        lo, hi = int(index.min().item()), int(index.max().item())
        if lo < 0 or hi >= size:
            raise IndexError(f"index_copy_(): index {lo if lo < 0 else hi} is out of bounds for "
                             f"dimension {d} with size {size}")
    target = self.reshape(1) if self.ndim == 0 else self
    shape = target._shape[:d] + (index.numel(),) + target._shape[d + 1:]
    indices = [None] * target.ndim
    indices[d] = index
    index_put_op(target, indices, source.reshape(shape), False)
    self._storage.version += 1
    return self


@tensor_method()
def index_copy(input, dim, index, source):
    return index_copy_(input.clone(), dim, index, source)


# -- masks --------------------------------------------------------------------------------------
@tensor_method()
def masked_fill(input, mask, value):
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool_:
        raise RuntimeError("masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        value = value.to(device=input.device, dtype=input.dtype)
    else:
        from .factories import tensor
        value = tensor(value, dtype=input.dtype, device=input.device)
    broadcast_shapes(input._shape, mask._shape)
    return masked_fill_op(input, mask, value)


@tensor_method()
def masked_fill_(self, mask, value):
    r = masked_fill(self, mask, value)
    if r._shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast "
                           f"shape {list(r._shape)}")
    return _assign(self, r)


@tensor_method()
def masked_select(input, mask, *, out=None):
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    broadcast_shapes(input._shape, mask._shape)
    r = masked_select_op(input, mask)
    return r if out is None else write_out(out, r, "masked_select")


@tensor_method()
def nonzero(input, *, out=None, as_tuple=False):
    r = nonzero_op(input)
    if not as_tuple:
        return r if out is None else write_out(out, r, "nonzero")
    if input.ndim == 0:
        from .factories import zeros
        return (zeros(r._shape[0], dtype=_dtype.int64, device=input.device),)
    return tuple(r.select(1, k) for k in range(input.ndim))


@tensor_method()
def argwhere(input):
    return nonzero_op(input)


@tensor_method()
def take(input, index):
    if not isinstance(index, Tensor) or index.dtype is not _dtype.int64:
        got = _dtype_title(index.dtype) if isinstance(index, Tensor) else type(index).__name__
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {got}")
    n = input.numel()
    if index.numel():
        lo, hi = int(index.min().item()), int(index.max().item())
        if hi >= n or lo < -n:
            raise IndexError(f"out of range: tried to access index {hi if hi >= n else lo} on "
                             f"a tensor of {n} elements.")
    return index_op(input.reshape(-1), [index.reshape(-1)]).view(index._shape)


def one_hot(tensor, num_classes=-1):
    if not isinstance(tensor, Tensor) or tensor.dtype is not _dtype.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    from .factories import arange
    if tensor.numel():
        lo, hi = int(tensor.min().item()), int(tensor.max().item())
        if lo < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes <= 0:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    classes = arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()
