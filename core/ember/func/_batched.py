"""``BatchedTensor``: what a function under ``vmap`` sees — one example of a batch.

The wrapper holds the physical tensor ``_value`` (the batch in dim 0, always) and the vmap
``_level`` it belongs to. Its own metadata is the logical example's: ``shape`` without the batch
dim, the strides of one example, the physical storage (so the version counter is shared and an
in-place op on the batch is seen by every view of it). Its key set holds ``BATCHED`` and its
device's bit, so every op on it reaches the ``ember.func`` handler, which calls the op's batching
rule on ``_value``.

Reading values (``item``, ``tolist``, ``numpy``, printing as a plain tensor) has no meaning for
one example of a batch, and raises PyTorch's vmap errors.
"""
from __future__ import annotations

from .._tensor import Tensor
from ..dispatch import keys as K
from ..ops.views import permute_op
from ..ops._util import as_shape

_BATCHED = K.BATCHED
_AG = K.AUTOGRAD

_DATA_DEPENDENT = ("vmap: It looks like you're attempting to use a Tensor in some data-dependent "
                   "control flow. We don't support that yet, please shout over at "
                   "https://github.com/pytorch/functorch/issues/257 .")


def _item_error(what):
    return RuntimeError(f"vmap: It looks like you're calling .{what}() on a Tensor. We don't "
                        f"support vmap over calling .{what}() on a Tensor, please try to rewrite "
                        f"what you're doing with other operations. If error is occurring "
                        f"somewhere inside PyTorch internals, please file a bug report.")


class BatchedTensor(Tensor):
    __slots__ = ("_value", "_level")

    # -- values have no meaning for one example ------------------------------------------------
    def item(self):
        raise _item_error("item")

    def tolist(self):
        raise _item_error("tolist")

    def numpy(self, *, force=False):
        raise _item_error("numpy")

    def _host(self):
        raise _item_error("numpy")

    def __array__(self, dtype=None, copy=None):
        raise _item_error("numpy")

    def __bool__(self):
        raise RuntimeError(_DATA_DEPENDENT)

    def __int__(self):
        raise RuntimeError(_DATA_DEPENDENT)

    def __float__(self):
        raise RuntimeError(_DATA_DEPENDENT)

    def __index__(self):
        raise RuntimeError(_DATA_DEPENDENT)

    def __dlpack__(self, stream=None, **kwargs):
        raise _item_error("__dlpack__")

    def data_ptr(self) -> int:
        raise RuntimeError("Cannot access data pointer of Tensor that doesn't have storage "
                           "(a vmap BatchedTensor)")

    def __reduce_ex__(self, protocol):
        raise RuntimeError("vmap: a BatchedTensor can't be pickled or saved: return it from the "
                           "vmapped function instead")

    def __repr__(self, *, tensor_contents=None):
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r}\n)"

    __str__ = __repr__

    def __format__(self, spec):
        return repr(self)

    # -- autograd: detach cuts every level, an internal alias keeps the physical history ------
    def detach(self):
        return make_batched(self._value.detach(), self._level)

    def _alias(self):
        return make_batched(self._value, self._level)

    def _like_factory(self, fn, *args, **kwargs):
        """``zeros_like`` & co. of a batched tensor are batched (torch's batching rule)."""
        return make_batched(fn(self._value, *args, **kwargs), self._level)


def make_batched(value: Tensor, level: int) -> BatchedTensor:
    """Wrap ``value`` (batch in dim 0) as the example tensor of vmap level ``level``."""
    t = object.__new__(BatchedTensor)
    t._storage = value._storage
    t._shape = value._shape[1:]
    t._stride = value._stride[1:]
    t._offset = value._offset
    t.dtype = value.dtype
    t.device = value.device
    t._ks = _BATCHED | (value.device._key or K.device_key(value.device))
    t._native = None
    t._ag = None
    t._value = value
    t._level = level
    return t


def _new_factory(name):
    """``x.new_zeros(size)`` & co. of a batched tensor: one new tensor per example (torch's
    batching rule), so library code can fill a fresh buffer with batched values."""
    def method(self, *size, **kwargs):
        physical = getattr(self._value, name)
        if name == "new_full":
            shape, rest = as_shape((size[0],), name), size[1:]
        else:
            shape, rest = as_shape(size, name), ()
        value = physical((self._value._shape[0],) + tuple(shape), *rest, **kwargs)
        return make_batched(value, self._level)
    method.__name__ = name
    return method


for _name in ("new_empty", "new_zeros", "new_ones", "new_full"):
    setattr(BatchedTensor, _name, _new_factory(_name))


def move_bdim_to_front(t, dim):
    n = t.ndim
    dim = dim % n
    if dim == 0:
        return t
    order = (dim,) + tuple(i for i in range(n) if i != dim)
    return permute_op(t, order)
