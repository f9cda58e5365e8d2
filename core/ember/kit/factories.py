"""Factory kernels (constants and ranges) for array-module backends."""
from __future__ import annotations

import math

from ..runtime import dtypes
from .array_backend import allocate
from .binding import bind


def full(be, size, fill_value, dtype, device):
    xp = be.xp
    dt = dtype.np
    if fill_value == 0 and not (fill_value.__class__ is float and math.copysign(1, fill_value) < 0):
        # zeros (not -0.0): xp.zeros is one C call where xp.full is a Python wrapper, and on
        # the host its pages are zero until first written
        return be.wrap(allocate(be, xp.zeros, size, dt, "full"), device)
    if isinstance(fill_value, int) and dt.kind in "iu":
        fill = xp.asarray(fill_value).astype(dt)  # wraps like an integer cast
    else:
        fill = fill_value
    return be.wrap(allocate(be, xp.full, size, dt, "full", fill), device)



def arange(be, start, end, step, dtype, device):
    xp = be.xp
    n = max(math.ceil((end - start) / step), 0)
    if dtype.category <= dtypes.INTEGRAL and all(isinstance(v, int) for v in (start, end, step)):
        r = xp.arange(start, start + n * step, step, dtype=xp.int64)[:n]
    else:
        r = xp.arange(n, dtype=xp.float64) * step + start
    return be.wrap(r.astype(dtype.np), device)


def linspace(be, start, end, steps, dtype, device):
    xp = be.xp
    kind = "c" if dtype.category == dtypes.COMPLEX else "f"
    work = xp.complex128 if kind == "c" else xp.float64
    if steps == 1:
        r = xp.asarray([start], dtype=work)
    else:
        # PyTorch's symmetric formula: the first half steps up from start, the second half
        # steps down from end, so both endpoints are exact
        step = (end - start) / (steps - 1)
        i = xp.arange(steps, dtype=xp.float64)
        half = steps // 2
        r = xp.where(i < half, start + step * i, end - step * (steps - 1 - i))
    if dtype.category <= dtypes.INTEGRAL:
        r = xp.trunc(r.real) if kind == "c" else xp.trunc(r)
    return be.wrap(r.astype(dtype.np), device)


def eye(be, n, m, dtype, device):
    return be.wrap(be.xp.eye(n, m, dtype=dtype.np), device)


TABLE = {"full": full, "arange": arange, "linspace": linspace, "eye": eye}


def register(backend) -> None:
    bind(backend, TABLE)
