"""Helpers for the hand-written kernels of issue #25's op families (``ops_spatial``,
``ops_resampling``, ``ops_bags``, ``ops_distances``, ``ops_ctc``): a program per (family,
dtype) built through ``progs.program`` with ``T`` (the operand type) and ``AT`` (the
accumulation type: float for half, else T) defined, argument-type strings, 1-D launches.

Operands are read through their own offset and strides (passed as ``long`` arguments), so no
kernel needs a contiguous copy; outputs are fresh contiguous tensors.
"""
from __future__ import annotations

import numpy as np

from ember.runtime import dtypes as D
from ember.runtime import offset_of, strides_of

from . import cltypes, progs

_ARG = {"b": None, "l": np.int64, "i": np.int32}


def program(state, family, dt, source, kernels):
    """{name: kernel} for ``family`` at dtype ``dt``; ``kernels`` maps each kernel name to its
    argument-type string: ``b`` buffer, ``l`` long, ``i`` int, ``T`` a scalar of ``dt``,
    ``A`` a scalar of the accumulation type."""
    at = D.float32 if dt is D.float16 else dt

    def types(spec):
        return [cltypes.np_type(dt) if c == "T" else cltypes.np_type(at) if c == "A" else _ARG[c]
                for c in spec]

    def make():
        return "\n".join([progs.header(state), f"typedef {cltypes.CTYPE[dt]} T;",
                          f"typedef {cltypes.CTYPE[at]} AT;", source])
    return progs.program(state, (family, dt), make, {k: types(v) for k, v in kernels.items()})


def strides(t, ndim=None):
    """(offset, *strides) of ``t`` as kernel arguments (padded in front to ``ndim`` dims)."""
    st = list(strides_of(t))
    if ndim is not None:
        st = [0] * (ndim - len(st)) + st
    return [offset_of(t)] + st


def launch(state, queue, kernel, n, *args):
    if n > 0:
        progs.launch(state, queue, kernel, n, *args)
