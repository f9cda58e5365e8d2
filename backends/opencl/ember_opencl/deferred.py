"""Errors found by kernels, raised at the next point where the host waits anyway.

Checks that need tensor values (an index out of bounds, a probability outside [0, 1]) cannot
raise when the op is called without making every such op wait for the device. Like PyTorch's
device-side asserts on CUDA, the kernel records the first failure in a small per-device buffer
and skips the bad element; ``check`` reads that record where the host blocks already (reading
values back, ``synchronize``) and raises the error the CPU backend raises for the same input.

A kernel that may record takes ``__global long* rec`` (``buffer(state)``) as an argument and
uses ``C_RECORD``: ``RECORD(rec, code, value, dim, size)`` keeps the first failure only.
"""
from __future__ import annotations

import numpy as np

BOUNDS_INDEX = 1         # IndexError, as index / index_put_ raise it
BOUNDS_RUNTIME = 2       # RuntimeError: gather, scatter, index_add
BOUNDS_SELECT = 3        # IndexError with the op's name: index_select
BERNOULLI_P = 4
NORMAL_STD = 5
MULTINOMIAL_VALUES = 6
MULTINOMIAL_SUM = 7
NLL_TARGET = 8           # IndexError: a class target outside [0, C) (nll_loss)

_BOUNDS = "index {v} is out of bounds for dimension {d} with size {s}"
MESSAGES = {
    BOUNDS_INDEX: (IndexError, _BOUNDS),
    BOUNDS_RUNTIME: (RuntimeError, _BOUNDS),
    BOUNDS_SELECT: (IndexError, "index_select(): " + _BOUNDS),
    BERNOULLI_P: (RuntimeError, "Expected p_in >= 0 && p_in <= 1 to be true, but got false."),
    NORMAL_STD: (RuntimeError, "normal expects all elements of std >= 0.0"),
    MULTINOMIAL_VALUES: (RuntimeError, "probability tensor contains either `inf`, `nan` or "
                                       "element < 0"),
    MULTINOMIAL_SUM: (RuntimeError, "invalid multinomial distribution (sum of probabilities "
                                    "<= 0)"),
    NLL_TARGET: (IndexError, "Target {v} is out of bounds. (nll_loss: {s} classes, "
                             "ignore_index={d})"),
}

# the code word is claimed with a 32-bit compare-and-swap (core OpenCL); the winner then
# writes the details, which nobody else touches
C_RECORD = """
inline void RECORD(__global long* rec, int code, long v, long d, long s) {
  if (atomic_cmpxchg((volatile __global int*)rec, 0, code) == 0) {
    rec[1] = v; rec[2] = d; rec[3] = s;
  }
}
"""


def buffer(state):
    """The device's record buffer; a launch passing it marks the device as needing a check."""
    rec = getattr(state, "_deferred", None)
    if rec is None:
        import pyopencl as cl
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        rec = state._deferred = cl.Buffer(state.context, flags, hostbuf=np.zeros(4, np.int64))
    state._deferred_armed = True
    return rec


def check(state, queue) -> None:
    """Raise the first recorded failure of the kernels queued on ``queue`` so far (blocks on
    ``queue``; called only where the host waits for the device anyway)."""
    if not getattr(state, "_deferred_armed", False):
        return
    import pyopencl as cl
    rec = np.zeros(4, np.int64)
    cl.enqueue_copy(queue, rec, state._deferred, is_blocking=True)
    code = int(rec[0]) & 0xFFFFFFFF
    if not code:
        return
    cl.enqueue_copy(queue, state._deferred, np.zeros(4, np.int64), is_blocking=True)
    exc, text = MESSAGES.get(code, (RuntimeError, "opencl kernel error {c}"))
    raise exc(text.format(v=int(rec[1]), d=int(rec[2]), s=int(rec[3]), c=code)
              + " (reported by an earlier opencl kernel: the check runs on the device and "
                "surfaces at the next synchronization)")
