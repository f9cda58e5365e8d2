"""Errors found by kernels, raised at the next point where the host waits anyway — naming the
op that caused them.

Checks that need tensor values (an index out of bounds, a probability outside [0, 1]) cannot
raise when the op is called without making every such op wait for the device. Like PyTorch's
device-side asserts on CUDA, a kernel records its first failure and skips the bad element;
``check`` reads the records where the host blocks already (reading values back,
``synchronize``) and raises the error the CPU backend raises for the same input.

Every launch that may record gets its own *slot* (``slot(state, op, *tensors)``): a small
region of one per-device buffer, handed to the kernel as a sub-buffer, with the op's name and
argument shapes kept on the host. So the error names the op that failed (not the op that
happened to synchronize), and every failure since the last check is reported, not only the
first. When every slot is taken, the slots are checked (which waits) and reused.

A kernel that may record takes ``__global long* rec`` as an argument and uses ``C_RECORD``:
``RECORD(rec, code, value, dim, size)`` keeps the launch's first failure.
"""
from __future__ import annotations

import threading

import numpy as np

from ember.runtime import shape_of

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
    BOUNDS_SELECT: (IndexError, _BOUNDS),
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

SLOTS = 64
_RECORD_LONGS = 4


class _Records:
    """A device's record buffer, its slots (sub-buffers) and what each taken slot is for."""

    def __init__(self, state):
        import pyopencl as cl
        align_bytes = max(state.device.mem_base_addr_align // 8, _RECORD_LONGS * 8)
        self.stride = align_bytes // 8  # longs per slot: sub-buffer origins must be aligned
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        self.host = np.zeros(SLOTS * self.stride, np.int64)
        self.buffer = cl.Buffer(state.context, flags, hostbuf=self.host)
        self.subs = [self.buffer.get_sub_region(i * align_bytes, _RECORD_LONGS * 8)
                     for i in range(SLOTS)]
        self.pending = []   # (op, shapes) per taken slot, in launch order
        self.lock = threading.Lock()


def _records(state) -> _Records:
    rec = getattr(state, "_records", None)
    if rec is None:
        rec = state._records = _Records(state)
    return rec


def slot(state, op: str, *tensors):
    """A record slot for one launch of ``op`` on ``tensors`` (its arguments, for the error)."""
    rec = _records(state)
    if len(rec.pending) == SLOTS:
        check(state, state.default_queue)  # every slot taken: wait once, then reuse them
    shapes = tuple(tuple(shape_of(t)) for t in tensors)
    with rec.lock:
        i = len(rec.pending)
        rec.pending.append((op, shapes))
    return rec.subs[i]


def _describe(op, shapes):
    return f"{op}({', '.join(str(list(s)) for s in shapes)})" if shapes else op


def check(state, queue) -> None:
    """Raise what the kernels queued so far recorded (blocks on ``queue``; called only where
    the host waits for the device anyway). The error names the op that failed, with its
    arguments' shapes; several failures are all listed."""
    rec = getattr(state, "_records", None)
    if rec is None or not rec.pending:
        return
    import pyopencl as cl
    with rec.lock:
        pending, rec.pending = rec.pending, []
    used = len(pending) * rec.stride
    host = rec.host[:used]
    cl.enqueue_copy(queue, host, rec.buffer, is_blocking=True)
    failures = []
    for i, (op, shapes) in enumerate(pending):
        code = int(host[i * rec.stride]) & 0xFFFFFFFF
        if code:
            v, d, s = (int(x) for x in host[i * rec.stride + 1:i * rec.stride + 4])
            exc, text = MESSAGES.get(code, (RuntimeError, "opencl kernel error {c}"))
            failures.append((exc, f"{op}: {text.format(v=v, d=d, s=s, c=code)}",
                             _describe(op, shapes)))
    if not failures:
        return
    host[:] = 0
    cl.enqueue_copy(queue, rec.buffer, host, is_blocking=True)
    exc, first, where = failures[0]
    message = f"{first} (in {where} on {state.name}; found on the device and raised at the " \
              f"next synchronization)"
    if len(failures) > 1:
        message += "; later failures: " + "; ".join(f"{m} (in {w})" for _, m, w in failures[1:])
    raise exc(message)
