"""Factory kernels (constants and ranges) for array-module backends."""
from __future__ import annotations

import math


def register(backend):
    xp, wrap = backend.xp, backend.wrap
    K = backend.kernels.register

    def full(size, fill_value, dtype, device):
        dt = dtype.np
        if isinstance(fill_value, int) and dt.kind in "iu":
            fill = xp.asarray(fill_value).astype(dt)  # wraps like an integer cast
        else:
            fill = fill_value
        return wrap(xp.full(size, fill, dtype=dt), device)

    def arange(start, end, step, dtype, device):
        n = max(math.ceil((end - start) / step), 0)
        if dtype.category < 2 and all(isinstance(v, int) for v in (start, end, step)):
            r = xp.arange(start, start + n * step, step, dtype=xp.int64)[:n]
        else:
            r = xp.arange(n, dtype=xp.float64) * step + start
        return wrap(r.astype(dtype.np), device)

    def linspace(start, end, steps, dtype, device):
        kind = "c" if dtype.category == 3 else "f"
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
        if dtype.category <= 1:
            r = xp.trunc(r.real) if kind == "c" else xp.trunc(r)
        return wrap(r.astype(dtype.np), device)

    def eye(n, m, dtype, device):
        return wrap(xp.eye(n, m, dtype=dtype.np), device)

    K("full", full)
    K("arange", arange)
    K("linspace", linspace)
    K("eye", eye)
