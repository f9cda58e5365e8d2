"""Checks that need tensor values -- an index within its dimension, a class target within range,
a probability in [0, 1] -- written once for every array backend.

A kernel computes, with its array module, a 0-d *failed* flag and the value its message names,
and hands both to ``be.device_assert``. Where arrays are host memory (numpy) that reads them at
once and raises, as PyTorch's CPU kernels do; a device backend records them on the device and
raises at the next synchronization instead (the CUDA backend: ``ember_cuda/asserts.py``, like
PyTorch's device-side asserts), so no op waits for the device. Either way the kernel then runs on
(guards keep a bad index from reading outside the array: cupy wraps indices). Host index checks
that pass, the common case, return before building the flag (``bounds``).
"""
from __future__ import annotations

import numpy as np

_BOUNDS = "index {value} is out of bounds for dimension {dim} with size {size}"
_FEW = 16   # host indices up to this many are read as Python ints (two numpy reductions cost more)


def bounds(be, op, idx, size, dim, exc=IndexError, prefix="", negative=False):
    """``idx`` (an integer array) within ``[0, size)`` (``[-size, size)`` when ``negative``
    indices are allowed); the message names the largest offender above, else the smallest."""
    if idx.size == 0:
        return
    xp = be.xp
    if xp is np:   # host values, read now: in range is the common case and costs nothing more
        if idx.size <= _FEW:
            values = idx.ravel().tolist()
            hi, lo = max(values), min(values)
        else:
            hi, lo = idx.max(), idx.min()
        if (-size if negative else 0) <= lo and hi < size:
            return
    else:
        hi, lo = idx.max(), idx.min()
    over = hi >= size
    bad = over | (lo < (-size if negative else 0))
    be.device_assert(op, bad, xp.where(over, hi, lo), exc,
                     prefix + _BOUNDS.format(value="{value}", dim=dim, size=size))


def all_true(be, op, ok, exc, message):
    """Every element of the boolean array ``ok`` holds (the message names no value)."""
    if ok.size:
        be.device_assert(op, ~ok.all(), None, exc, message)


def first_failure(be, op, bad, values, exc, message):
    """No element of the boolean array ``bad`` is set; the message names the first offending
    element of ``values`` (same shape)."""
    if bad.size:
        xp = be.xp
        flat = bad.reshape(-1)
        be.device_assert(op, flat.any(), values.reshape(-1)[xp.argmax(flat)], exc, message)
