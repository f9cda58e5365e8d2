"""``ember.set_num_threads`` / ``ember.get_num_threads``: how many threads the CPU kernels use
within one op (PyTorch's intra-op parallelism), and the pool they run on.

numpy releases the GIL inside its loops, so a large elementwise op or reduction split into
contiguous chunks runs on several cores from plain Python threads (numexpr was measured too:
it needs its own expression strings per op and gained nothing over chunked ufuncs on a single
op). Only work of at least ``MIN_PARALLEL`` elements is split: below that the hand-off costs
more than it saves (tens of microseconds), so small tensors never pay for it.
``set_num_threads`` also sets the BLAS library's threads (matmul, convolution GEMMs) through
threadpoolctl when it is installed, and the compiled kernels' own workers (csrc/threads.c:
pooling, im2col/col2im, relu, axpy split their work there, where a hand-off costs about a
microsecond instead of this pool's tens). The CPU backend's FFTs pass it to scipy.fft as
``workers``.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

MIN_PARALLEL = 1 << 18      # elements: 1 MiB of float32 per op before threads are worth it

_num_threads = None
_pool = None
_lock = threading.Lock()
_blas_limits = None


def _default() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _tell_compiled_kernels(n: int) -> None:
    """The compiled kernels split their work over their own spinning workers (csrc/threads.c:
    a Python pool's hand-off costs as much as those kernels take), as many as this count."""
    from . import _fastpath   # start-up: _fastpath loads the extension after this module
    if _fastpath.C is not None:
        _fastpath.C.set_threads(n)


def get_num_threads() -> int:
    """The number of threads used for intra-op parallelism on the CPU."""
    return _num_threads if _num_threads is not None else _default()


def set_num_threads(num_threads: int) -> None:
    """Set the number of threads used for intra-op parallelism on the CPU (elementwise ops,
    reductions and the BLAS under matmul/convolution)."""
    global _num_threads, _pool, _blas_limits
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads <= 0:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {num_threads!r}")
    with _lock:
        _num_threads = num_threads
        old, _pool = _pool, None
    if old is not None:
        old.shutdown(wait=False)
    _tell_compiled_kernels(num_threads)
    try:
        # start-up: threadpoolctl, only when the count is set
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    _blas_limits = threadpool_limits(limits=num_threads, user_api="blas")


def pool():
    """The executor of the extra threads (``get_num_threads() - 1`` of them; the calling
    thread works too), made on first use."""
    global _pool
    p = _pool
    if p is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max(1, get_num_threads() - 1),
                                           thread_name_prefix="ember-intraop")
            p = _pool
    return p


def chunks(n: int):
    """[start, stop) ranges splitting ``n`` elements over the threads, or None when ``n`` is
    too small to split (or one thread is configured)."""
    t = get_num_threads()
    if t <= 1 or n < MIN_PARALLEL:
        return None
    t = min(t, n // (MIN_PARALLEL // 2))
    step = -(-n // t)
    step += (-step) % 64  # chunk starts on 256-byte boundaries for float32
    return [(i, min(i + step, n)) for i in range(0, n, step)]


def run_chunks(fn, ranges):
    """``fn(start, stop)`` for every range, the first on this thread; returns the results in
    order (exceptions propagate)."""
    if len(ranges) == 1:
        return [fn(*ranges[0])]
    futures = [pool().submit(fn, a, b) for a, b in ranges[1:]]
    first = fn(*ranges[0])
    return [first] + [f.result() for f in futures]
