"""dtypes for backend authors: the dtype objects, their categories and numpy conversions.

``from ember.runtime import dtypes as D`` then ``D.float32``, ``D.ALL_DTYPES``,
``d.category == D.FLOATING``, ``D.from_numpy_dtype(arr.dtype)``, ``D.to_numpy_dtype(d)``. A
dtype knows its ``name``, ``itemsize`` (bytes), ``category``, ``is_signed``,
``is_floating_point`` and ``is_complex``.
"""
from __future__ import annotations

from .._dtype import (BOOL, COMPLEX, FLOATING, INTEGRAL, bfloat16, bool_, complex64,  # noqa: F401
                      complex128, dtype, float16, float32, float64, int8, int16, int32, int64,
                      uint8)
from .._dtype import all_dtypes as _all
from .._dtype import from_numpy_dtype as _from_np

#: every dtype ember has, in promotion order within each category
ALL_DTYPES = tuple(_all)
all_dtypes = ALL_DTYPES  # the name the core uses

#: categories, ordered: a higher category wins in type promotion
CATEGORIES = {"bool": BOOL, "integral": INTEGRAL, "floating": FLOATING, "complex": COMPLEX}


def from_numpy_dtype(np_dtype) -> dtype:
    """The ember dtype of a numpy dtype (``numpy.float32`` -> ``ember.float32``; ml_dtypes'
    bfloat16 -> ``ember.bfloat16``); TypeError naming the supported dtypes otherwise."""
    return _from_np(np_dtype)


def to_numpy_dtype(d: dtype):
    """The numpy dtype that holds values of ``d`` on the host (bfloat16: ml_dtypes')."""
    if d.np is None:
        raise TypeError(f"{d} has no numpy equivalent on this installation (install ml_dtypes "
                        f"for bfloat16)")
    return d.np


__all__ = ["ALL_DTYPES", "all_dtypes", "CATEGORIES", "BOOL", "INTEGRAL", "FLOATING", "COMPLEX",
           "dtype", "from_numpy_dtype", "to_numpy_dtype", "bool_", "uint8", "int8", "int16",
           "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64",
           "complex128"]
