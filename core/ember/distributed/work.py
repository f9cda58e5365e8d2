"""``Work``: the handle of one asynchronous collective (``torch.distributed.Work``).

A backend subclasses Work and implements ``_poll()`` (one non-blocking progress step; True once
the transfer is done) and ``_drive(deadline)`` (block until done, raising the backend's timeout
error at ``deadline``). Completion runs the *post steps* — unstaging host buffers, copying a
flat result out to the caller's list of tensors — on whichever thread completed it (the waiter
or the communication thread), then completes the future.
"""
from __future__ import annotations

import threading
import time
from datetime import timedelta

from ._types import DistBackendError
from ..futures import Future

__all__ = ["Work"]


def as_seconds(timeout, fn="wait") -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        s = timeout.total_seconds()
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        s = float(timeout)
    else:
        raise TypeError(f"{fn}: timeout must be a datetime.timedelta (or seconds), got "
                        f"{type(timeout).__name__}")
    if s < 0:
        raise ValueError(f"{fn}: timeout must not be negative, got {timeout}")
    return s


class Work:
    """A pending collective: ``wait()``, ``is_completed()``, ``get_future()``, ``result()``."""

    def __init__(self, op: str = "", outputs=()):
        self._op = op
        self._outputs = list(outputs)
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._completing = False
        self._exc = None
        self._post = []
        self._future = None
        self._source = -1

    # -- for backends ----------------------------------------------------------------------------
    def _poll(self) -> bool:
        return self._done.is_set()

    def _drive(self, deadline: float | None) -> None:
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._done.wait(remaining):
            raise DistBackendError(f"{self._op}: wait timed out")

    def _add_post(self, fn) -> None:
        """Run ``fn()`` when the transfer is done, before waiters return and the future
        completes (now if it already completed successfully)."""
        with self._lock:
            if not self._completing:
                self._post.append(fn)
                return
        self._done.wait()
        if self._exc is None:
            fn()

    def _complete(self, exc: BaseException | None = None) -> None:
        """Mark the transfer done (or failed); runs the post steps once."""
        with self._lock:
            if self._completing:
                return
            self._completing = True
            posts, self._post = self._post, []
        if exc is None:
            try:
                for fn in posts:
                    fn()
            except BaseException as e:  # delivered to the waiter / the future
                exc = e
        with self._lock:
            self._exc = exc
            self._done.set()
            fut = self._future
        if fut is not None:
            self._resolve(fut)

    def _resolve(self, fut) -> None:
        if self._exc is not None:
            fut.set_exception(self._exc)
        else:
            fut.set_result(self._outputs)

    # -- PyTorch's API ---------------------------------------------------------------------------
    def is_completed(self) -> bool:
        if not self._done.is_set():
            self._poll()
        return self._done.is_set()

    def is_success(self) -> bool:
        if not self._done.is_set():
            raise RuntimeError(f"Work.is_success: {self._op} has not completed yet")
        return self._exc is None

    def exception(self):
        return self._exc

    def wait(self, timeout=None) -> bool:
        """Block until the collective is done; raise its error (a timeout error names the op,
        the group and the missing ranks). ``timeout`` (timedelta) bounds this wait only."""
        limit = as_seconds(timeout, "Work.wait")
        if not self._done.is_set():
            deadline = None if limit is None else time.monotonic() + limit
            self._drive(deadline)
            self._done.wait()
        if self._exc is not None:
            raise self._exc
        return True

    def synchronize(self) -> None:
        self.wait()

    def result(self) -> list:
        self.wait()
        return self._outputs

    def source_rank(self) -> int:
        """The sender of a ``recv`` from any rank."""
        if self._source < 0:
            raise RuntimeError("source_rank() is only defined for recv works that completed "
                               "(src=None)")
        return self._source

    def get_future(self):
        """An ``ember.futures.Future`` completed with the list of output tensors."""
        with self._lock:
            fut = self._future
            if fut is None:
                fut = self._future = Future()
                fut._driver = self._drive_for_future
                done = self._done.is_set()
            else:
                return fut
        if done:
            self._resolve(fut)
        return fut

    def _drive_for_future(self) -> None:
        try:
            self.wait()
        except BaseException:  # noqa: BLE001 - the future carries it
            pass

    def __repr__(self):
        state = "completed" if self._done.is_set() else "pending"
        return f"<ember.distributed.Work {self._op} {state}>"


class CompletedWork(Work):
    """Work that had nothing to transfer (a group of one, empty tensors)."""

    def __init__(self, op="", outputs=()):
        super().__init__(op, outputs)
        self._complete()
