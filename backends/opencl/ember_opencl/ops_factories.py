"""Factory kernels (``ember.ops.factories``): constants and ranges written on the device.

Values are computed the way the CPU backend computes them (ranges in float64, or int64 for
integer ranges) and converted to the requested dtype on store.
"""
from __future__ import annotations

import math

import numpy as np

from ember.kit.binding import bind
from ember.runtime import dtypes as D

from .codegen import Body, run

# each computes in int64 or the widest float and converts on store, so one build serves every
# output dtype (any_output)
FULL = Body("full", "r = p0;", kinds="fibc", any_output=True)
ARANGE_INT = Body("arange_int", "r = p0 + i * p1;", any_output=True)
ARANGE_FLOAT = Body("arange_float", "r = (CT)i * p1 + p0;", any_output=True)
# PyTorch's symmetric linspace: both endpoints exact
_LIN = "CT v = i < p3 ? p0 + p2 * (CT)i : p1 - p2 * (CT)(p4 - 1 - i);"
LINSPACE = Body("linspace", _LIN + " r = v;", any_output=True)
LINSPACE_TRUNC = Body("linspace_trunc", _LIN + " r = trunc(v);", any_output=True)
EYE = Body("eye", "r = (i / p0) == (i % p0);", any_output=True)


def fill_argument(value, dtype, wide):
    """(value, dtype it is passed in): int64 for bool and integer dtypes, the widest float for
    floats; the store converts it exactly as numpy's ``full`` does."""
    if dtype.category == D.COMPLEX:
        return complex(value), wide.to_complex()
    if dtype.category == D.FLOATING:
        return float(value.real if isinstance(value, complex) else value), wide
    if isinstance(value, (bool, int)):
        return int(value), D.int64  # wraps on store like an integer cast
    return int(np.full((), value, dtype=dtype.np).item()), D.int64  # 2.7 -> 2, nan -> True


def full(be, size, fill_value, dtype, device):
    st, q = be.state_queue(device)
    out = be.new_tensor(st, tuple(size), dtype, device)
    value, ct = fill_argument(fill_value, dtype, st.wide)
    return run(st, q, FULL, out, (), (), ct, ct, params=((value, ct),))


def arange(be, start, end, step, dtype, device):
    st, q = be.state_queue(device)
    n = max(math.ceil((end - start) / step), 0)
    out = be.new_tensor(st, (n,), dtype, device)
    if dtype.category < D.FLOATING and all(isinstance(v, int) for v in (start, end, step)):
        return run(st, q, ARANGE_INT, out, (), (), D.int64, D.int64,
                   params=((start, D.int64), (step, D.int64)))
    w = st.wide
    return run(st, q, ARANGE_FLOAT, out, (), (), w, w, params=((start, w), (step, w)))


def linspace(be, start, end, steps, dtype, device):
    st, q = be.state_queue(device)
    out = be.new_tensor(st, (steps,), dtype, device)
    w = st.wide
    start, end = float(start.real if isinstance(start, complex) else start), \
        float(end.real if isinstance(end, complex) else end)
    step = 0.0 if steps <= 1 else (end - start) / (steps - 1)
    if steps == 1:
        end = start
    body = LINSPACE_TRUNC if dtype.category <= D.INTEGRAL else LINSPACE
    return run(st, q, body, out, (), (), w, w,
               params=((start, w), (end, w), (step, w), (steps // 2, D.int64),
                       (steps, D.int64)))


def eye(be, n, m, dtype, device):
    st, q = be.state_queue(device)
    out = be.new_tensor(st, (n, m), dtype, device)
    return run(st, q, EYE, out, (), (), D.int64, D.bool_, params=((max(m, 1), D.int64),))


TABLE = {"full": full, "arange": arange, "linspace": linspace, "eye": eye}


def register(backend):
    bind(backend, TABLE)
