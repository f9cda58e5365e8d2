"""Streams are worker threads; events are markers in a stream's queue.

A real accelerator runs kernels asynchronously, in order, per stream. The emulation is literal:
each ``Stream`` owns a ``Worker`` (a thread and a FIFO of kernels). Launching a kernel appends to
the FIFO and returns at once; the host waits only where it must read values (``synchronize``,
``.item()``, ``.cpu()``). numpy releases the GIL inside its loops and BLAS, so a queued matmul
really runs while Python goes on launching.

Memory safety needs no ``record_stream``: a queued kernel holds its tensors, so their blocks go
back to the allocator only after the worker has run it and dropped the references.

Entering ``with stream:`` orders the stream after the work already queued on the stream that
was current; beyond that, streams synchronize only through events (``wait_event``).

A kernel that raises on the worker is an *asynchronous error*, as on CUDA: the stream keeps
going and the error is raised, naming the kernel, by the next ``synchronize()`` (or host read)
of that stream.
"""
from __future__ import annotations

import collections
import threading
import time
import weakref

import numpy as np

from ember.runtime import EventBase, StreamBase


class Worker:
    """One thread executing ``(name, fn, args)`` items in submission order."""

    def __init__(self, name: str):
        self.name = name
        self.launched = 0      # items submitted; a ticket is the count after submitting
        self.finished = 0      # items run (or failed)
        self._items = collections.deque()
        self._cv = threading.Condition(threading.Lock())
        self._error = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def ident(self) -> int:
        return self._thread.ident

    def submit(self, name: str, fn, args=()) -> int:
        with self._cv:
            self._items.append((name, fn, args))
            self.launched += 1
            ticket = self.launched
            self._cv.notify_all()
        return ticket

    def stop(self) -> None:
        with self._cv:
            self._items.append((None, None, None))
            self._cv.notify_all()

    def _run(self):
        # IEEE results (log(0) = -inf, 0/0 = nan) without warnings, as PyTorch computes them.
        # numpy keeps this state per thread, so it only affects the kernels run here.
        np.seterr(all="ignore")
        items, cv = self._items, self._cv
        while True:
            with cv:
                while not items:
                    cv.wait()
                name, fn, args = items.popleft()
            if fn is None:
                return
            try:
                fn(*args)
            except Exception as e:  # reported by the next synchronize, like a CUDA error
                if self._error is None:
                    self._error = (name, e)
            # drop the kernel's tensors before counting it done: a waiter may then free them
            name = fn = args = None
            with cv:
                self.finished += 1
                cv.notify_all()

    def wait(self, ticket: int) -> None:
        """Block until the item with this ticket (and all before it) has run."""
        if self.finished >= ticket:
            return
        if threading.get_ident() == self.ident:
            raise RuntimeError(f"{self.name}: a kernel waited for its own stream (deadlock)")
        with self._cv:
            while self.finished < ticket:
                self._cv.wait()

    def raise_pending(self, device) -> None:
        err = self._error
        if err is not None:
            self._error = None
            name, e = err
            raise RuntimeError(f"{device}: kernel '{name}' failed asynchronously on "
                               f"{self.name}: {type(e).__name__}: {e}") from e


class Stream(StreamBase):
    """An in-order queue of kernels on one device (``ember.openreg.Stream()``). ``device``,
    ``wait_stream``, ``record_event`` and the ``with`` protocol come from ``StreamBase``."""

    def __init__(self, backend, device_index=None, priority=0):
        if device_index is None:
            device_index = backend.current_device()
        backend.check_index(device_index)
        self.backend = backend
        self.device_index = device_index
        self.priority = priority  # accepted for API compatibility; one thread per stream anyway
        self._worker = Worker(f"openreg:{device_index} stream {id(self):#x}")
        backend.workers(device_index).add(self._worker)
        weakref.finalize(self, self._worker.stop)  # the thread ends with its stream

    def launch(self, name: str, fn, *args) -> int:
        """Queue ``fn(*args)``; returns its ticket. ``args`` must hold every tensor it touches."""
        return self._worker.submit(name, fn, args)

    def query(self) -> bool:
        """True when everything queued so far has run (never blocks)."""
        w = self._worker
        return w.finished >= w.launched

    def synchronize(self) -> None:
        w = self._worker
        w.wait(w.launched)
        w.raise_pending(self.device)

    def wait_event(self, event) -> None:
        """Later kernels on this stream start after ``event`` (the host does not block)."""
        if event._worker is None or event._worker is self._worker:
            return  # an unrecorded event is complete; a stream is ordered with itself
        self._worker.submit("wait_event", event._worker.wait, (event._ticket,))

    def __enter__(self):
        prev = self.backend.current_stream(self.device_index)
        if prev is not None:
            # what was queued before the switch (x = zeros(...) on the default stream) is
            # visible inside the block, as CUDA's legacy default stream guarantees; streams
            # entered one after another still overlap with each other
            self.wait_stream(prev)
        return super().__enter__()

    def __eq__(self, other):
        return isinstance(other, Stream) and other._worker is self._worker

    def __hash__(self):
        return hash(id(self._worker))

    def __repr__(self):
        return f"<ember.openreg.Stream device={self.device} {self._worker.name!r}>"


class Event(EventBase):
    """A marker queued on a stream: complete when every kernel before it has run; with
    ``enable_timing`` the marker notes the time at which the worker reached it. ``record`` and
    ``wait`` without a stream, and the checks of ``elapsed_time``, come from ``EventBase``."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        super().__init__(enable_timing, blocking, interprocess)
        self._worker = None
        self._ticket = 0
        self._time = None

    @property
    def is_recorded(self) -> bool:
        return self._worker is not None

    def _record(self, stream) -> None:
        token = self._token = object()  # a re-record makes older markers no-ops
        self._time = None

        def mark():
            if self._token is token:
                self._time = time.perf_counter()
        self._worker = stream._worker
        self._ticket = stream.launch("event", mark)

    def query(self) -> bool:
        return self._worker is None or self._worker.finished >= self._ticket

    def synchronize(self) -> None:
        if self._worker is not None:
            self._worker.wait(self._ticket)

    def _elapsed_ms(self, end) -> float:
        return (end._time - self._time) * 1e3
