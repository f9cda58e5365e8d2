"""``Tensor.set_`` (every overload) and ``Tensor.__setstate__``: a tensor takes another
tensor's or a storage's memory in place (what torch's legacy pickling and some data loaders
call)."""
from __future__ import annotations

from .._tensor import Size, Tensor
from ..runtime.layout import contiguous_strides
from ..runtime.storage import Storage
from ._util import tensor_method


@tensor_method()
def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """``set_()``: an empty tensor; ``set_(source)``: share ``source``'s storage, size, stride
    and offset; ``set_(source, storage_offset, size, stride=None)``: a view of the tensor's or
    storage's memory with that geometry (contiguous strides by default)."""
    from .tensor_extras import _refuse_batched
    _refuse_batched(self, "set_")
    ag = self._ag
    if ag is not None and ag.requires_grad and ag.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    if source is None:
        from .factories import empty
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
        _default_setstate(self, state)      # an ordinary pickle of the object's attributes
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


def _default_setstate(obj, state):
    """What pickle does for an object without ``__setstate__``: the instance dict, then the
    slots."""
    slots = None
    if isinstance(state, tuple):
        state, slots = state
    if state:
        obj.__dict__.update(state)
    if slots:
        for name, value in slots.items():
            setattr(obj, name, value)


Tensor.__setstate__ = __setstate__
