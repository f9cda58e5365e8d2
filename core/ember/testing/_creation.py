"""``ember.testing.make_tensor``: a random tensor of any shape, dtype and device for tests,
with torch's value ranges and options (``torch.testing.make_tensor``)."""
from __future__ import annotations

import collections.abc
import math
import warnings

from .. import _dtype
from .._type_info import finfo, iinfo
from ..ops.factories import empty
from ..ops.random import randint
from ..ops.views import view_as_real

__all__ = ["make_tensor"]

_BOOLEAN_OR_INTEGRAL = {_dtype.bool_, _dtype.uint8, _dtype.int8, _dtype.int16, _dtype.int32,
                        _dtype.int64}
_FLOATING = {_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64}
_COMPLEX = {_dtype.complex64, _dtype.complex128}


def _low_high(dtype, low, high, *, lowest_inclusive, highest_exclusive, default_low,
              default_high):
    """``low``/``high`` or the defaults, checked and clamped to what ``dtype`` represents
    (integral bounds rounded up: randint's ``high`` is exclusive)."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in _FLOATING | _COMPLEX:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. Use "
                      "`torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest_inclusive or low >= highest_exclusive:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest_inclusive}, {highest_exclusive})")
    low = min(max(low, lowest_inclusive), highest_exclusive)
    high = min(max(high, lowest_inclusive), highest_exclusive)
    if dtype in _BOOLEAN_OR_INTEGRAL:
        return math.ceil(low), math.ceil(high)
    return low, high


def _uniform_(t, low, high):
    # uniform_ needs high - low to be finite in the dtype: scale the range down and back up
    if high - low >= finfo(t.dtype).max:
        return t.uniform_(low / 2, high / 2).mul_(2)
    return t.uniform_(low, high)


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of ``shape`` on ``device`` with values drawn uniformly from ``[low, high)``.

    Defaults: ``[0, 2)`` for bool, ``[0, 10)`` unsigned, ``[-9, 10)`` signed integral,
    ``[-9, 9)`` floating and complex (real and imaginary parts); bounds outside the dtype's
    finite range are clamped to it. ``noncontiguous=True`` returns a strided view (tensors of
    two or more elements); ``memory_format`` a copy in that format (not both).
    ``exclude_zero=True`` replaces zeros by 1 (bool, integral) or ``finfo(dtype).tiny``.
    ``requires_grad`` is for floating and complex dtypes only."""
    dtype = _dtype.as_dtype(dtype)
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    if requires_grad and dtype in _BOOLEAN_OR_INTEGRAL:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:  # twice the last dim, so the strided view does not repeat values
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype is _dtype.bool_:
        low, high = _low_high(dtype, low, high, lowest_inclusive=0, highest_exclusive=2,
                              default_low=0, default_high=2)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _BOOLEAN_OR_INTEGRAL:
        info = iinfo(dtype)
        # randint takes int64 bounds: int64's maximum is the exclusive end, not max + 1
        low, high = _low_high(dtype, low, high, lowest_inclusive=info.min,
                              highest_exclusive=info.max + (dtype is not _dtype.int64),
                              default_low=-9, default_high=10)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING | _COMPLEX:
        info = finfo(dtype)
        low, high = _low_high(dtype, low, high, lowest_inclusive=info.min,
                              highest_exclusive=info.max, default_low=-9, default_high=9)
        result = empty(shape, device=device, dtype=dtype)
        _uniform_(view_as_real(result) if dtype in _COMPLEX else result, low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        f"ember.testing.make_tensor().")
    if noncontiguous:
        result = result[..., 1::2]  # offset by one to also catch offset mistakes
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype in _BOOLEAN_OR_INTEGRAL else finfo(dtype).tiny
    if dtype in _FLOATING | _COMPLEX:
        result.requires_grad = requires_grad
    return result
