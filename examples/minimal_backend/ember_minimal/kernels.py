"""The native kernels: module-level functions taking the backend first, and their ``TABLE``.

A kernel gets exactly its op's arguments, in the order of the op's schema
(``ember.runtime.get_op("add").schema`` is ``add(Tensor self, Tensor other, Scalar alpha, dtype
compute) -> Tensor``); the op layer has validated shapes and chosen the compute dtype. An
operand in a ``Tensor`` position may be a Python scalar (``x + 1``). A kernel returns new
tensors on the backend's device, of the shape and dtype the op's meta function gives (ember
checks this for plug-ins), or the mutated argument for in-place ops (``fill_``, ``copy_``).
Everything else runs on the CPU fallback.
"""
from __future__ import annotations

from types import MethodType
from typing import Any, Callable

import numpy as np

from ember.runtime import broadcast_shapes, is_tensor, to_numpy_dtype


def _operand(be, x, dt):
    """A tensor's values in numpy dtype ``dt``, or a Python scalar as it is."""
    if is_tensor(x):
        a = be.native(x)
        return a if a.dtype == dt else a.astype(dt)
    return x


def _shape(x):
    return tuple(x.shape) if is_tensor(x) else ()


def _device(a, b):
    return a.device if is_tensor(a) else b.device


def _output(be, values, shape, dtype, device):
    """A new tensor holding ``values`` (cast to ``dtype``)."""
    out = be.new_tensor(shape, dtype, device)
    with np.errstate(all="ignore"):
        np.copyto(be.native(out), values, casting="unsafe")
    return out


def _accumulator(dtype):
    """Half precision is summed and multiplied in float32, as PyTorch does."""
    return np.float32 if dtype.is_floating_point and dtype.itemsize == 2 else \
        to_numpy_dtype(dtype)


def add(be, a, b, alpha, compute):
    dt = to_numpy_dtype(compute)
    y = _operand(be, b, dt)
    if alpha != 1:
        y = y * alpha  # a Python scalar stays one: numpy takes it in the array's dtype
    with np.errstate(all="ignore"):
        r = np.add(_operand(be, a, dt), y)
    return _output(be, r, broadcast_shapes(_shape(a), _shape(b)), compute, _device(a, b))


def mul(be, a, b, compute):
    dt = to_numpy_dtype(compute)
    with np.errstate(all="ignore"):
        r = np.multiply(_operand(be, a, dt), _operand(be, b, dt))
    return _output(be, r, broadcast_shapes(_shape(a), _shape(b)), compute, _device(a, b))


def neg(be, x, compute):
    return _output(be, np.negative(_operand(be, x, to_numpy_dtype(compute))), _shape(x),
                   compute, x.device)


def sum_(be, x, dim, keepdim, dtype):
    # dim: a sorted tuple of the dims to reduce; dtype: the result dtype (both resolved)
    with np.errstate(all="ignore"):
        r = np.sum(be.native(x), axis=dim, keepdims=keepdim, dtype=_accumulator(dtype))
    return _output(be, r, np.shape(r), dtype, x.device)


def matmul(be, a, b):
    acc = _accumulator(a.dtype)
    r = np.matmul(_operand(be, a, acc), _operand(be, b, acc))
    return _output(be, r, r.shape, a.dtype, a.device)


def full(be, size, fill_value, dtype, device):
    out = be.new_tensor(size, dtype, device)
    return fill_(be, out, fill_value)


def fill_(be, self, value):
    a = be.native(self)
    if isinstance(value, int) and a.dtype.kind in "iu":
        value = np.asarray(value).astype(a.dtype)  # uint8 filled with -1 wraps, as a cast does
    a[...] = value
    return self


def copy_(be, dst, src):
    return be.copy_(dst, src)


def to_copy(be, x, dtype):
    with np.errstate(all="ignore"):  # nan/inf to integers cast quietly, as in PyTorch
        return be.copy_(be.new_tensor(x.shape, dtype, x.device), x)


TABLE: dict[str, Callable[..., Any]] = {
    "add": add, "mul": mul, "neg": neg, "sum": sum_, "matmul": matmul, "full": full,
    "fill_": fill_, "copy_": copy_, "_to_copy": to_copy}


def register(backend) -> None:
    """Bind every kernel of ``TABLE`` to ``backend``."""
    for name, fn in TABLE.items():
        backend.kernels.register(name, MethodType(fn, backend))
