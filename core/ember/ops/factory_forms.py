"""torch's factories beyond constants and ranges (issue #30): a given memory layout
(``empty_strided``, ``empty_permuted``, ``Tensor.new_empty_strided``), a 0-d tensor of a number
(``scalar_tensor``), the deprecated inclusive ``range``, the coordinates of a triangle
(``tril_indices``, ``triu_indices``), and host memory shared with a Python buffer
(``frombuffer``; ``to_dlpack`` is ``from_dlpack``'s inverse). Each is a composition of the factory and view ops, so
every backend makes them on its own device.
"""
from __future__ import annotations

import builtins
import math
import warnings
import numpy as np

from .. import _dtype
from .._tensor import Tensor
from . import factories as _fac
from . import views as _views
from ._util import _dtype_title as title, as_shape, tensor_method, write_out
from .._warn import user_stacklevel

__all__ = ["empty_strided", "empty_permuted", "scalar_tensor", "range", "tril_indices",
           "triu_indices", "frombuffer", "to_dlpack"]


def _strided_storage_size(op, size, stride):
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality "
                           f"of strides ({len(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    if 0 in size:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(size, stride))


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=False,
                  requires_grad=False):
    """An uninitialized tensor of ``size`` laid out with ``stride`` (elements) over a storage
    just large enough (deterministic mode fills it, as ``empty``)."""
    size, stride = as_shape((size,), "empty_strided"), tuple(int(s) for s in stride)
    n = _strided_storage_size("empty_strided", size, stride)
    flat = _fac.empty(n, dtype=dtype, layout=layout, device=device)
    t = _views.as_strided_op(flat, size, stride, 0)
    del t._view_base  # new storage: to the user (and autograd) it is no view
    return t.requires_grad_(True) if requires_grad else t


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """An uninitialized tensor of ``size`` whose dims lie in memory in ``physical_layout`` order
    (outermost first): ``empty_permuted((2, 3, 4), (0, 2, 1))`` has strides (12, 1, 3)."""
    size, order = as_shape((size,), "empty_permuted"), tuple(physical_layout)
    if sorted(order) != list(builtins.range(len(size))):
        raise RuntimeError(f"empty_permuted: physical_layout {list(order)} is not a "
                           f"permutation of the {len(size)} dims of size {list(size)}")
    stride, step = [0] * len(size), 1
    for d in reversed(order):
        stride[d], step = step, step * size[d]
    return empty_strided(size, stride, dtype=dtype, layout=layout, device=device,
                         requires_grad=requires_grad)


@tensor_method()
def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None,
                      pin_memory=False, requires_grad=False):
    return empty_strided(size, stride, dtype=dtype or self.dtype, layout=layout,
                         device=device or self.device, requires_grad=requires_grad)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=False,
                  requires_grad=False):
    """A 0-d tensor of the number ``s`` in the default floating dtype unless told otherwise
    (``scalar_tensor(True)`` is ``tensor(1.)``, as torch's)."""
    if isinstance(s, Tensor):
        s = s.item()
    return _fac.full((), s, dtype=dtype or _dtype.get_default_dtype(), layout=layout,
                     device=device, requires_grad=requires_grad)


def range(start=0, end=None, step=1, *, out=None, dtype=None, layout=None,  # noqa: A001
          device=None, pin_memory=False, requires_grad=False):
    """Deprecated in torch: ``arange`` with ``end`` included, in the default floating dtype."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=user_stacklevel())
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    n = int(math.floor((end - start) / step)) + 1
    values = _fac.arange(n, dtype=_dtype.float64, device=device) * step + start
    result = values.to(dtype or _dtype.get_default_dtype())
    if out is not None:
        return write_out(out, result, "range")
    return result.requires_grad_(True) if requires_grad else result


def _triangle_indices(op, row, col, offset, dtype, layout, device, lower, requires_grad):
    dtype = _dtype.int64 if dtype is None else _dtype.as_dtype(dtype)
    _fac._check_layout(layout, op)
    if dtype not in (_dtype.int64, _dtype.int32):
        raise NotImplementedError(f'"{op}" not implemented for '
                                  f"'{_dtype_title(dtype)}'")
    for name, n in (("row", row), ("col", col)):
        if n < 0:
            raise RuntimeError(f"{name} must be non-negative, got{n}")
    r = _fac.arange(row, device=device).unsqueeze(1)
    c = _fac.arange(col, device=device).unsqueeze(0)
    inside = (c - r).le(offset) if lower else (c - r).ge(offset)
    out = inside.nonzero().t().to(dtype).contiguous()
    return out.requires_grad_(True) if requires_grad else out


def _dtype_title(d):
    return title(d)


def tril_indices(row, col, offset=0, *, dtype=None, layout=None, device=None,
                 pin_memory=False, requires_grad=False):
    """The (2, N) coordinates of the lower triangle (below diagonal ``offset``) of a
    row x col matrix, row by row."""
    return _triangle_indices("tril_indices", row, col, offset, dtype, layout, device, True,
                             requires_grad)


def triu_indices(row, col, offset=0, *, dtype=None, layout=None, device=None,
                 pin_memory=False, requires_grad=False):
    """The (2, N) coordinates of the upper triangle (from diagonal ``offset``) of a
    row x col matrix, row by row."""
    return _triangle_indices("triu_indices", row, col, offset, dtype, layout, device, False,
                             requires_grad)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D CPU tensor sharing memory with an object exposing the buffer protocol: ``count``
    elements of ``dtype`` (all of them: -1) from byte ``offset``."""
    d = _dtype.as_dtype(dtype)
    view = memoryview(buffer)
    if view.nbytes == 0:
        raise ValueError("both buffer length (0) and count (-1) must not be 0")
    if offset < 0 or offset >= view.nbytes:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({view.nbytes} bytes) minus 1")
    if count < 0 and (view.nbytes - offset) % d.itemsize:
        raise ValueError(f"buffer length ({view.nbytes - offset} bytes) after offset "
                         f"({offset} bytes) must be a multiple of element size ({d.itemsize})")
    array = np.frombuffer(buffer, dtype=d.np, count=count, offset=offset)
    t = _fac.from_numpy(array)
    return t.requires_grad_(True) if requires_grad else t


def to_dlpack(tensor):
    """A DLPack capsule of ``tensor`` (``tensor.__dlpack__()``), for another library's
    ``from_dlpack``."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dlpack(): argument 'tensor' must be Tensor, not "
                        f"{type(tensor).__name__}")
    return tensor.__dlpack__()
