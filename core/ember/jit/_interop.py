"""The inter-op thread pool that runs ``ember.jit.fork``'s tasks.

A task runs with the per-thread state its forking thread had (dispatch include/keep masks,
grad and inference mode, anomaly mode), installed for the task and restored after, so
``no_grad`` and a running profiler reach forked work as in PyTorch. numpy and pyopencl release
the GIL inside their kernels, so tasks on different threads overlap there.

``wait`` on a task that no pool thread has started yet runs it on the waiting thread: with
nested forks (a task that forks and waits) a full pool can never wait on work stuck behind it.

While forked tasks run, BLAS runs single-threaded (through threadpoolctl): OpenBLAS serializes
concurrent multi-threaded calls behind one lock (its threads spin meanwhile), so tasks doing
matrix products would not overlap at all; one thread per call lets each task's products run
on its own core — inter-op parallelism takes the place of intra-op, as in PyTorch. The limit
is lifted when the last running task ends.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from ..autograd import anomaly
from ..dispatch import keys as _keys
from ..profiler import _record

_lock = threading.Lock()
_pool = None
_num_threads = None
_fixed = False      # set_num_interop_threads was called, or the pool exists


def _default_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def get_num_interop_threads() -> int:
    """The number of threads of the inter-op pool (``ember.jit.fork``)."""
    return _num_threads if _num_threads is not None else _default_threads()


def set_num_interop_threads(nthreads: int) -> None:
    """Set the inter-op pool's size; only before any forked work and only once (PyTorch's
    rule)."""
    global _num_threads, _fixed
    if not isinstance(nthreads, int) or isinstance(nthreads, bool) or nthreads <= 0:
        raise RuntimeError(f"Expected positive number of threads, got {nthreads!r}")
    with _lock:
        if _fixed:
            raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                               "has started or set_num_interop_threads called")
        _num_threads = nthreads
        _fixed = True


def _executor():
    global _pool, _fixed
    pool = _pool
    if pool is None:
        with _lock:
            if _pool is None:
                _pool = ThreadPoolExecutor(max_workers=get_num_interop_threads(),
                                           thread_name_prefix="ember-interop")
                _fixed = True
            pool = _pool
    return pool


class _BlasLimit:
    """BLAS at one thread while any forked task runs (see the module doc)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.running = 0
        self.controller = None   # threadpoolctl's, made on first use (it scans loaded libs)
        self.limited = None

    def enter(self):
        with self.lock:
            if self.running == 0 and get_num_interop_threads() > 1:
                if self.controller is None:
                    # start-up: threadpoolctl, first use only
                    from threadpoolctl import ThreadpoolController
                    self.controller = ThreadpoolController()
                self.limited = self.controller.limit(limits=1, user_api="blas")
            self.running += 1   # counted once the limit is in place

    def exit(self):
        with self.lock:
            self.running -= 1
            if self.running == 0 and self.limited is not None:
                self.limited.restore_original_limits()
                self.limited = None


_blas = _BlasLimit()


def capture_state():
    """This thread's dispatch state, to install in a task that runs elsewhere."""
    st = _keys.state
    return (st.masks, st.grad_enabled, st.inference_mode, anomaly.is_anomaly_enabled(),
            anomaly.is_anomaly_check_nan_enabled())


def _install(saved):
    st = _keys.state
    st.masks, st.grad_enabled, st.inference_mode = saved[0], saved[1], saved[2]
    anomaly._set(saved[3], saved[4] if saved[3] else True)


class Task:
    """One forked call; runs once, on a pool thread or on the first thread that waits for it."""

    __slots__ = ("fn", "args", "kwargs", "future", "state", "_claimed", "__weakref__")

    def __init__(self, fn, args, kwargs, future):
        self.fn, self.args, self.kwargs, self.future = fn, args, kwargs, future
        self.state = capture_state()
        self._claimed = threading.Lock()

    def run_if_pending(self) -> None:
        if not self._claimed.acquire(blocking=False):
            return  # running or ran on another thread: the waiter blocks on the future
        own = capture_state()
        span = _record.UserRange(f"ember::jit::fork: {_name_of(self.fn)}")
        limited = False
        try:   # whatever fails, the future completes: a waiter must never hang
            _install(self.state)
            _blas.enter()
            limited = True
            span.enter()
            result = self.fn(*self.args, **self.kwargs)
        except BaseException as e:
            self._finish(None, e)
        else:
            self._finish(result, None)
        finally:
            span.exit()
            if limited:
                _blas.exit()
            _install(own)

    def _finish(self, result, error):
        fut = self.future
        fut._task = None
        self.fn = self.args = self.kwargs = None   # drop references to the inputs
        if error is None:
            fut.set_result(result)
        else:
            fut.set_exception(error)


def _name_of(fn) -> str:
    name = getattr(fn, "__qualname__", None)
    return name if name is not None else type(fn).__name__   # a Module instance


def submit(task: Task) -> None:
    _executor().submit(task.run_if_pending)
