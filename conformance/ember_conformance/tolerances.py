"""Tolerances and comparison: the same rules as ``ember.testing.assert_close``, plus the error
figures a report states (largest absolute and relative error, and the worst as a multiple of the
allowed tolerance ``atol + rtol·|expected|``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ember.testing import DEFAULT_TOLERANCES as DEFAULT  # noqa: F401
from ember.testing import compare, tolerance  # noqa: F401


@dataclass
class Deviation:
    ok: bool
    worst: float             # max over elements of |actual - expected| / (atol + rtol·|expected|)
    max_abs: float | None    # max |actual - expected| (None: shapes or dtypes differ)
    max_rel: float | None    # max |actual - expected| / |expected| over nonzero expected
    rtol: float
    atol: float
    message: str             # compare()'s explanation when not ok


def measure(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> Deviation:
    """``compare`` decides; the figures beside it are for people reading a failure."""
    ok, worst, message = compare(actual, expected, rtol, atol)
    if expected.dtype.kind in "biu":   # compare() counts differing elements: exact dtypes have
        worst = 0.0 if ok else float("inf")  # no tolerance to take a multiple of
    if actual.shape != expected.shape or actual.dtype != expected.dtype or actual.size == 0:
        return Deviation(ok, worst, None, None, rtol, atol, message)
    kind = np.complex128 if expected.dtype.kind == "c" else np.float64
    a, e = actual.astype(kind), expected.astype(kind)
    both = np.isfinite(a) & np.isfinite(e)       # NaN/inf placement is compare()'s business
    if not both.any():
        return Deviation(ok, worst, 0.0, 0.0, rtol, atol, message)
    diff = np.where(both, np.abs(np.where(both, a, 0) - np.where(both, e, 0)), 0.0)
    scale = np.abs(np.where(both, e, 0))
    nonzero = both & (scale > 0)
    max_rel = float(np.max(diff[nonzero] / scale[nonzero])) if nonzero.any() else None
    if not ok and "elements differ" not in message and diff.any() and \
            np.isfinite(worst) and worst > 1:
        allowed = atol + rtol * scale
        outside = int((diff > allowed).sum())
        i = int(np.argmax(np.where(both, diff / np.maximum(allowed, np.finfo(float).tiny), 0)))
        message = (f"{outside} of {a.size} elements outside the tolerance; the worst at flat "
                   f"index {i}: {_value(actual.reshape(-1)[i])}, expected "
                   f"{_value(expected.reshape(-1)[i])}")
    elif not ok and expected.dtype.kind in "biu" and diff.any():
        i = int(np.argmax(diff))
        message += (f"; e.g. at flat index {i}: {_value(actual.reshape(-1)[i])}, expected "
                    f"{_value(expected.reshape(-1)[i])}")
    return Deviation(ok, worst, float(np.max(diff)), max_rel, rtol, atol, message)


def _value(x) -> str:
    return repr(x.item()) if hasattr(x, "item") else repr(x)
