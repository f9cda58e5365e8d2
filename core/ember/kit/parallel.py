"""Large elementwise work on several threads (``ember.set_num_threads``): a ufunc over
C-contiguous operands of one shape split into contiguous chunks, each written into its slice of
one fresh output by a pool thread (numpy releases the GIL in its loops). Anything else — small
arrays, broadcasting, strided operands, non-ufunc functions — returns None and the caller runs
the op as before."""
from __future__ import annotations

import math

from .. import _threads

MIN_PARALLEL = _threads.MIN_PARALLEL


def ufunc(be, f, dt, *operands):
    """``f(*operands)`` (a ufunc; Python scalars allowed) into a new array of dtype ``dt``,
    computed in chunks on the intra-op threads; None when not worth it or not applicable."""
    if not be.values_on_host:
        # device arrays: one kernel launch is already parallel, and a pool thread would launch
        # on its own stream instead of the caller's
        return None
    xp = be.xp
    shape = None
    for o in operands:
        if o.__class__ is be._ndarray:
            if shape is None:
                shape = o.shape
            elif o.shape != shape:
                return None
            if not o.flags.c_contiguous:
                return None
    if shape is None or not isinstance(f, xp.ufunc):
        return None
    n = math.prod(shape)
    ranges = _threads.chunks(n)
    if ranges is None:
        return None
    flat = [o.reshape(-1) if o.__class__ is be._ndarray else o for o in operands]
    arrays = [o.__class__ is be._ndarray for o in operands]
    out = xp.empty(n, dtype=dt)
    ieee = be.ieee

    def work(a, b):
        ieee(f, *[x[a:b] if is_arr else x for x, is_arr in zip(flat, arrays)], out[a:b])

    _threads.run_chunks(work, ranges)
    return out.reshape(shape)



def run_ranges(n, fn):
    """``fn(start, stop)`` over ``[0, n)``: one call when ``n`` is small, else one call per
    chunk on the intra-op threads (``ember.set_num_threads``), the first on this thread.
    Returns the calls' results. For kernels that release the GIL (ctypes calls into
    compiled code, numpy loops): ember runs no OpenMP runtime of its own, so its threads and
    the BLAS library's are the only ones competing for the cores."""
    ranges = _threads.chunks(n)
    if ranges is None:
        return [fn(0, n)]
    return _threads.run_chunks(fn, ranges)
