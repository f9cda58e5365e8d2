"""Methods that change a tensor's own metadata or memory in place: ``Tensor.set_`` (every
overload) and ``Tensor.__setstate__`` (a tensor takes another tensor's or a storage's memory:
what torch's legacy pickling and some data loaders call), ``resize_``/``resize_as_``, and the
in-place views ``squeeze_``, ``unsqueeze_``, ``t_``, ``transpose_``, ``swapaxes_``,
``swapdims_``, ``as_strided_``."""
from __future__ import annotations

import warnings

from .. import _memory_format as _mf
from .._tensor import Size, Tensor
from ..dispatch.grad_mode import is_grad_enabled, no_grad
from ..runtime.layout import contiguous_strides
from ..runtime.storage import Storage
from ._util import tensor_method
from .factories import empty
from .._warn import user_stacklevel


@tensor_method()
def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """``set_()``: an empty tensor; ``set_(source)``: share ``source``'s storage, size, stride
    and offset; ``set_(source, storage_offset, size, stride=None)``: a view of the tensor's or
    storage's memory with that geometry (contiguous strides by default)."""
    _refuse_batched(self, "set_")
    ag = self._ag
    if ag is not None and ag.requires_grad and ag.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if source is None:
        source = empty(0, dtype=self.dtype, device=self.device)
    if isinstance(source, Tensor):
        if source.dtype is not self.dtype:
            raise RuntimeError(f"set_: expected source of dtype {self.dtype}, got "
                               f"{source.dtype}")
        if source.device != self.device:
            raise RuntimeError(f"set_: expected source on {self.device}, got {source.device}")
        storage = source._storage
        if size is None:
            shape, strides, offset = source._shape, source._stride, source._offset
        else:
            shape, offset = tuple(int(s) for s in size), int(storage_offset)
            strides = tuple(int(s) for s in stride) if stride is not None else contiguous_strides(shape)
    elif isinstance(source, Storage):
        storage = source
        if storage.device != self.device:
            raise RuntimeError(f"set_: expected a storage on {self.device}, got one on "
                               f"{storage.device}")
        if size is None:
            shape = (storage.nbytes // self.dtype.itemsize,)
            strides, offset = (1,), int(storage_offset)
        else:
            shape, offset = tuple(int(s) for s in size), int(storage_offset)
            strides = tuple(int(s) for s in stride) if stride is not None else contiguous_strides(shape)
    else:
        raise TypeError(f"set_(): expected a Tensor or a storage as source, got "
                        f"{type(source).__name__}")
    if len(strides) != len(shape):
        raise RuntimeError(f"set_: size {list(shape)} and stride {list(strides)} have different "
                           f"lengths")
    if offset < 0 or any(n < 0 for n in shape):
        raise RuntimeError(f"set_: negative size {list(shape)} or storage offset {offset}")
    needed = 0 if 0 in shape else offset + 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    available = storage.nbytes // self.dtype.itemsize
    if needed > available:
        raise RuntimeError(f"setStorage: sizes {list(shape)}, strides {list(strides)}, storage "
                           f"offset {offset}, and itemsize {self.dtype.itemsize} requiring a "
                           f"storage size of {needed * self.dtype.itemsize} are out of bounds "
                           f"for storage of size {storage.nbytes}")
    self._storage, self._shape, self._stride, self._offset = storage, Size(shape), strides, offset
    self._native = None
    storage.version += 1
    return self


def __setstate__(self, state):
    """torch's legacy unpickling: (storage-or-tensor, offset, size, stride) for a Tensor, or
    the 5-tuple of a legacy Variable; then (requires_grad, _, backward_hooks)."""
    if isinstance(state, dict) or (isinstance(state, tuple) and len(state) == 2 and all(
            s is None or isinstance(s, dict) for s in state)):
        default_setstate(self, state)      # an ordinary pickle of the object's attributes
        return
    if self._ag is not None and self._ag.grad_fn is not None:
        raise RuntimeError("__setstate__ can be only called on leaf Tensors")
    if len(state) == 4:
        self.set_(*state)
        return
    if len(state) == 5:
        self.set_(state[0])
        state = (state[3], state[4], state[2])
    requires_grad, _, hooks = state
    if hooks:
        raise RuntimeError("__setstate__: backward hooks in a pickled state are not supported")
    self.requires_grad = requires_grad


def default_setstate(obj, state):
    """What pickle does for an object without ``__setstate__`` (its BUILD opcode): the
    instance dict, then the slots. The safe unpickler builds allowlisted objects with it too."""
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    if state:
        obj.__dict__.update(state)
    if slots:
        for name, value in slots.items():
            setattr(obj, name, value)


Tensor.__setstate__ = __setstate__


# -- resize_ and the in-place views --------------------------------------------------------------
def _refuse_batched(t, name):
    """Metadata changes in place cannot reach through ember.func.vmap's batched wrapper."""
    if type(t) is not Tensor and hasattr(t, "_like_factory"):
        raise RuntimeError(f"vmap: {name}() changes a tensor's shape in place, which is not "
                           f"supported under vmap; use the out-of-place form")


def _inplace_view(name, view):
    """``squeeze_`` and friends: the tensor itself takes the view's shape, strides and offset
    (its storage stays). A leaf that requires grad refuses, as in PyTorch; a tensor inside an
    autograd graph refuses too (ember does not rebase graphs on in-place view changes)."""
    def method(self, *args, **kwargs):
        _refuse_batched(self, name)
        if self.requires_grad and is_grad_enabled():
            if self.is_leaf:
                raise RuntimeError("a leaf Variable that requires grad is being used in an "
                                   "in-place operation.")
            raise RuntimeError(f"{name}(): changing the shape in place of a tensor inside an "
                               f"autograd graph is not supported by ember; use the "
                               f"out-of-place {name[:-1]}()")
        v = view(self, *args, **kwargs)
        self._shape, self._stride, self._offset, self._native = (v._shape, v._stride, v._offset,
                                                                 v._native)
        return self
    method.__name__ = name
    return method


@tensor_method("resize_")
def _resize_(self, *sizes, memory_format=None):
    """The tensor takes ``sizes`` (contiguous strides) in place, over its storage when that
    holds enough elements after its offset, else over new storage that starts with the old
    storage's elements (the rest uninitialized)."""
    _refuse_batched(self, "resize_")
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = tuple(sizes[0]) if len(sizes) == 1 and not isinstance(sizes[0], int) else \
        tuple(sizes)
    if any(n < 0 for n in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(shape)}")
    numel = 1
    for n in shape:
        numel *= n
    strides = _format_strides(shape, memory_format)
    capacity = self.untyped_storage().nbytes // self.element_size() - self._offset
    if numel <= capacity:
        self._shape, self._stride = Size(shape), strides
        self._native = self.as_strided(shape, strides, self._offset)._native
        return self
    grown = empty(numel, dtype=self.dtype, device=self.device)
    keep = min(capacity, numel)   # the old storage's elements survive, as in PyTorch
    if keep > 0:
        with no_grad():
            grown[:keep].copy_(self.as_strided((keep,), (1,), self._offset))
    view = grown.as_strided(shape, strides, 0)
    self._storage, self._shape, self._stride, self._offset, self._native = (
        view._storage, view._shape, view._stride, view._offset, view._native)
    return self


def _format_strides(shape, memory_format):
    """Contiguous strides of ``shape``, or channels-last ones under that memory format."""
    if memory_format in (_mf.channels_last, _mf.channels_last_3d):
        order = _mf.channels_last_order(len(shape), memory_format)
        permuted = contiguous_strides([shape[d] for d in order])
        strides = [0] * len(shape)
        for k, d in enumerate(order):
            strides[d] = permuted[k]
        return tuple(strides)
    return contiguous_strides(shape)


@tensor_method("resize_as_")
def _resize_as_(self, other, *, memory_format=None):
    return _resize_(self, tuple(other.shape), memory_format=memory_format)


@tensor_method("resize")
def _resize(self, *sizes):
    warnings.warn("non-inplace resize is deprecated", stacklevel=user_stacklevel())
    return self.reshape(*sizes)


@tensor_method("resize_as")
def _resize_as(self, other):
    warnings.warn("non-inplace resize_as is deprecated", stacklevel=user_stacklevel())
    return self.reshape(other.shape)


for _name, _view in (("squeeze_", lambda t, *a: t.squeeze(*a)),
                     ("unsqueeze_", lambda t, d: t.unsqueeze(d)),
                     ("t_", lambda t: t.t()),
                     ("transpose_", lambda t, a, b: t.transpose(a, b)),
                     ("swapaxes_", lambda t, a, b: t.transpose(a, b)),
                     ("swapdims_", lambda t, a, b: t.transpose(a, b)),
                     ("as_strided_", lambda t, size, stride, storage_offset=None:
                      t.as_strided(size, stride, storage_offset))):
    setattr(Tensor, _name, _inplace_view(_name, _view))
del _name, _view
