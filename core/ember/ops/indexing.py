"""Indexing: ``t[...]`` / ``t[...] = v`` and the gather/scatter family.

Basic indices (ints, slices, None, Ellipsis) build a view with the ops of ``views.py``, so
writes through the result change the base. Tensor, list and bool-mask indices are advanced:
they go to the ``index`` / ``index_put_`` kernels with one index tensor (or None) per dim of
that view, which gives PyTorch's (and numpy's) placement of the advanced result dims.
"""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
from ..dispatch.dispatcher import define
from ._util import tensor_method, write_out
from .views import select_op, slice_op, unsqueeze

__all__ = ["gather", "scatter", "scatter_add", "index_select", "index_add", "masked_fill",
           "masked_select", "nonzero", "argwhere", "take", "one_hot", "index_put"]

index_op = define("index(Tensor self, Tensor?[] indices) -> Tensor")
index_put_op = define("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, "
                      "bool accumulate) -> Tensor(a!)")
gather_op = define("gather(Tensor self, int dim, Tensor index) -> Tensor")
scatter_op = define("scatter(Tensor self, int dim, Tensor index, Tensor src, str? reduce) -> "
                    "Tensor")
index_select_op = define("index_select(Tensor self, int dim, Tensor index) -> Tensor")
index_add_op = define("index_add(Tensor self, int dim, Tensor index, Tensor source, "
                      "Scalar alpha) -> Tensor")
masked_fill_op = define("masked_fill(Tensor self, Tensor mask, Tensor value) -> Tensor")
masked_select_op = define("masked_select(Tensor self, Tensor mask) -> Tensor")
nonzero_op = define("nonzero(Tensor self) -> Tensor")

_INDEX_DTYPES = (_dtype.int64, _dtype.int32, _dtype.int16, _dtype.int8, _dtype.uint8,
                 _dtype.bool_)


# -- parsing an index ---------------------------------------------------------------------------
def _as_index_tensor(obj, device):
    from .factories import tensor
    if isinstance(obj, Tensor):
        t = obj
    else:
        t = tensor(obj, device=device)
        if t.dtype.category == _dtype.FLOATING:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if t.dtype not in _INDEX_DTYPES:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if t.device is not device:
        t = t.to(device)
    return t


def _consumed(entry):
    if entry is None or entry is Ellipsis:
        return 0
    if isinstance(entry, Tensor) and entry.dtype in (_dtype.bool_, _dtype.uint8):
        return entry.ndim
    return 1


def _resolve(self, index):
    """Apply the basic part of ``index``; return (view, [(dim, index tensor)])."""
    if not isinstance(index, tuple):
        index = (index,)
    entries = []
    for e in index:
        if isinstance(e, bool):
            entries.append(e)
        elif isinstance(e, (list, range)) or (hasattr(e, "__array__") and
                                              not isinstance(e, Tensor)):
            entries.append(_as_index_tensor(list(e) if isinstance(e, range) else e,
                                            self.device))
        elif isinstance(e, Tensor) and e.ndim == 0 and e.dtype.category == _dtype.INTEGRAL \
                and e.dtype not in (_dtype.uint8,):
            entries.append(int(e.item()))
        else:
            entries.append(e)
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(_consumed(e) for e in entries if not isinstance(e, bool))
    if used > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    view, dim, advanced = self, 0, []
    for e in entries:
        if e is Ellipsis:
            dim += self.ndim - used
        elif e is None:
            view = unsqueeze(view, dim)
            dim += 1
        elif isinstance(e, bool):
            from .factories import tensor
            view = unsqueeze(view, dim)
            advanced.append((dim, tensor([0] if e else [], dtype=_dtype.int64,
                                         device=self.device)))
            dim += 1
        elif isinstance(e, slice):
            start, stop, step = (None if x is None else x.__index__() for x in
                                 (e.start, e.stop, e.step))
            if step is not None and step <= 0:
                raise ValueError("step must be greater than zero")
            view = slice_op(view, dim, start, stop, 1 if step is None else step)
            dim += 1
        elif isinstance(e, Tensor):
            if e.device is not self.device and not (e.device.type == "cpu"):
                raise IndexError(f"indices should be either on cpu or on the same device as the "
                                 f"indexed tensor ({self.device})")
            e = _as_index_tensor(e, self.device)
            if e.dtype in (_dtype.bool_, _dtype.uint8):
                mask_shape = view._shape[dim:dim + e.ndim]
                if e._shape != mask_shape:
                    raise IndexError(f"The shape of the mask {list(e._shape)} at index {dim} "
                                     f"does not match the shape of the indexed tensor "
                                     f"{list(view._shape)} at index {dim}")
                if e.ndim == 0:
                    view = unsqueeze(view, dim)
                    from .factories import tensor
                    advanced.append((dim, tensor([0] if e.item() else [], dtype=_dtype.int64,
                                                 device=self.device)))
                    dim += 1
                    continue
                for j, idx in enumerate(nonzero(e, as_tuple=True)):
                    advanced.append((dim + j, idx))
                dim += e.ndim
            else:
                advanced.append((dim, e))
                dim += 1
        elif hasattr(e, "__index__"):
            i = e.__index__()
            size = view._shape[dim]
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for dimension {dim} with size "
                                 f"{size}")
            view = select_op(view, dim, i)
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or "
                             f"byte Variables are valid indices (got {type(e).__name__})")
    return view, advanced


def _index_list(view, advanced):
    indices = [None] * view.ndim
    for d, t in advanced:
        indices[d] = t
    return indices


@tensor_method("__getitem__")
def _getitem(self, index):
    view, advanced = _resolve(self, index)
    if not advanced:
        # x[...] and x[:] are still new view objects, as in PyTorch
        return view if view is not self else self._view_of(self._shape, self._stride,
                                                           self._offset)
    return index_op(view, _index_list(view, advanced))


@tensor_method("__setitem__")
def _setitem(self, index, value):
    view, advanced = _resolve(self, index)
    if not advanced:
        view.copy_(value)
        self._storage.version = view._storage.version
        return
    values = _values_like(value, self)
    index_put_op(view, _index_list(view, advanced), values, False)
    self._storage.version += 1


def _values_like(value, self):
    from .factories import tensor
    if isinstance(value, Tensor):
        v = value if value.device is self.device else value.to(self.device)
        return v if v.dtype is self.dtype else v.to(self.dtype)
    return tensor(value, dtype=self.dtype, device=self.device)


def index_put(input, indices, values, accumulate=False):
    out = input.clone()
    return index_put_(out, indices, values, accumulate)


@tensor_method()
def index_put_(self, indices, values, accumulate=False):
    idx = [None if i is None else _as_index_tensor(i, self.device) for i in indices]
    if len(idx) > self.ndim:
        raise IndexError(f"too many indices for tensor of dimension {self.ndim}")
    idx += [None] * (self.ndim - len(idx))
    index_put_op(self, idx, _values_like(values, self), bool(accumulate))
    self._storage.version += 1
    return self


Tensor.index_put = index_put


# -- gather / scatter ---------------------------------------------------------------------------
def _check_index(op, input, dim, index, src=None):
    if not isinstance(index, Tensor) or index.dtype is not _dtype.int64:
        raise RuntimeError(f"{op}(): Expected dtype int64 for index")
    d = _wrap_dim(dim, input.ndim, op)
    if index.ndim != input.ndim and not (index.ndim <= 1 and input.ndim <= 1):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'input' if src is None else 'self'} tensor")
    for k in range(index.ndim):
        if k != d and input.ndim and index._shape[k] > input._shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(index._shape)} to be smaller than self "
                               f"{list(input._shape)} apart from dimension {d}")
        if src is not None and src.ndim and index._shape[k] > src._shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(index._shape)} to be smaller than src "
                               f"{list(src._shape)}")
    return d


@tensor_method()
def gather(input, dim, index, *, sparse_grad=False, out=None):
    d = _check_index("gather", input, dim, index)
    r = gather_op(input, d, index)
    return r if out is None else write_out(out, r, "gather")


def _scatter(op_name, input, dim, index, src, reduce):
    if not isinstance(src, Tensor):
        from .factories import full
        src = full(index._shape, src, dtype=input.dtype, device=input.device)
    elif src.dtype is not input.dtype:
        raise RuntimeError(f"{op_name}(): Expected self.dtype to be equal to src.dtype")
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError(f"{op_name}(): reduce argument must be either add or multiply, got "
                           f"{reduce!r}")
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
    return _scatter("scatter_add", input, dim, index, src, "add")


@tensor_method()
def scatter_add_(self, dim, index, src):
    return _assign(self, scatter_add(self, dim, index, src))


def _assign(self, result):
    """In-place variant via the out-of-place kernel plus a copy (one extra pass)."""
    self.copy_(result)
    return self


@tensor_method()
def index_select(input, dim, index, *, out=None):
    if not isinstance(index, Tensor) or index.dtype not in (_dtype.int64, _dtype.int32):
        raise IndexError("index_select(): Expected dtype int32/int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = _wrap_dim(dim, input.ndim, "index_select")
    r = index_select_op(input, d, index.reshape(-1))
    return r if out is None else write_out(out, r, "index_select")


@tensor_method()
def index_add(input, dim, index, source, *, alpha=1):
    d = _wrap_dim(dim, input.ndim, "index_add")
    if index.ndim > 1 or index.dtype not in (_dtype.int64, _dtype.int32):
        raise IndexError("index_add_(): Index is supposed to be a vector of int64/int32")
    expected = input._shape[:d] + (index.numel(),) + input._shape[d + 1:]
    if source.ndim and source._shape != expected:
        raise RuntimeError(f"index_add_(): Source/destination tensor must have same slice shapes "
                           f"(source {list(source._shape)}, expected {list(expected)})")
    if source.dtype is not input.dtype:
        raise RuntimeError("index_add_(): self (" + input.dtype.name + ") and source (" +
                           source.dtype.name + ") must have the same scalar type")
    return index_add_op(input, d, index.reshape(-1), source, alpha)


@tensor_method()
def index_add_(self, dim, index, source, *, alpha=1):
    return _assign(self, index_add(self, dim, index, source, alpha=alpha))


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
    from ._util import broadcast_shapes
    broadcast_shapes(input._shape, mask._shape)
    return masked_fill_op(input, mask, value)


@tensor_method()
def masked_fill_(self, mask, value):
    r = masked_fill(self, mask, value)
    if r._shape != self._shape:
        raise RuntimeError(f"masked_fill_: mask of shape {list(mask._shape)} can't be broadcast "
                           f"in place to {list(self._shape)}")
    return _assign(self, r)


@tensor_method()
def masked_select(input, mask):
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    return masked_select_op(input, mask)


@tensor_method()
def nonzero(input, *, as_tuple=False):
    r = nonzero_op(input)
    if not as_tuple:
        return r
    if input.ndim == 0:
        return (r.reshape(-1),)
    return tuple(r.select(1, k) for k in range(input.ndim))


def argwhere(input):
    return nonzero_op(input)


Tensor.argwhere = argwhere


@tensor_method()
def take(input, index):
    return index_op(input.reshape(-1), [index.reshape(-1)]).view(index._shape)


def one_hot(tensor, num_classes=-1):
    if tensor.dtype is not _dtype.int64:
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
    elif num_classes == -1:
        raise RuntimeError("Can not infer total number of classes from empty tensor.")
    classes = arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()
