"""``ember.finfo`` and ``ember.iinfo``: the numerical limits of a dtype, as PyTorch reports them.

Values come from numpy's (and ml_dtypes' for bfloat16) ``finfo``/``iinfo`` of the dtype's host
representation; a complex dtype reports its real component's limits, as in PyTorch.
"""
from __future__ import annotations

import math

import numpy as np
import ml_dtypes

from . import _dtype

__all__ = ["finfo", "iinfo"]


def _check(dt, fn, position_name="type"):
    if not isinstance(dt, _dtype.dtype):
        raise TypeError(f"{fn}(): argument '{position_name}' (position 1) must be ember.dtype, "
                        f"not {type(dt).__name__}")


def _g(x) -> str:
    return f"{x:g}"


class finfo:
    """Limits of a floating-point (or complex) dtype: ``bits``, ``eps``, ``max``, ``min``,
    ``tiny`` (= ``smallest_normal``), ``resolution`` and ``dtype`` (its name). ``finfo()`` is
    the default dtype's."""

    __slots__ = ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype")

    def __init__(self, type=None):
        dt = _dtype.get_default_dtype() if type is None else type
        _check(dt, "finfo")
        if dt.category < _dtype.FLOATING:
            raise TypeError("ember.finfo() requires a floating point input type. Use "
                            "ember.iinfo to handle 'ember.finfo'")
        real = dt.to_real()
        info = _host_finfo(real)
        self.bits = real.itemsize * 8
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))
        self.dtype = real.name

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    __hash__ = None  # PyTorch's finfo is unhashable too

    def __repr__(self):
        return (f"finfo(resolution={_g(self.resolution)}, min={_g(self.min)}, "
                f"max={_g(self.max)}, eps={_g(self.eps)}, "
                f"smallest_normal={_g(self.smallest_normal)}, tiny={_g(self.tiny)}, "
                f"dtype={self.dtype})")

    __str__ = __repr__


def _host_finfo(dt):
    if dt.name == "bfloat16":
        return ml_dtypes.finfo(ml_dtypes.bfloat16)
    return np.finfo(dt.np)


class iinfo:
    """Limits of an integer dtype: ``bits``, ``max``, ``min``, ``dtype`` (its name)."""

    __slots__ = ("bits", "max", "min", "dtype")

    def __init__(self, type):
        _check(type, "iinfo")
        if type is _dtype.bool_:
            raise TypeError("ember.bool is not supported by ember.iinfo")
        if type.category != _dtype.INTEGRAL:
            raise TypeError("ember.iinfo() requires an integer input type. Use ember.finfo to "
                            "handle 'ember.iinfo'")
        info = np.iinfo(type.np)
        self.bits = type.itemsize * 8
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = type.name

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    __hash__ = None

    def __repr__(self):
        return f"iinfo(min={_g(self.min)}, max={_g(self.max)}, dtype={self.dtype})"

    __str__ = __repr__
