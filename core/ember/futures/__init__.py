"""``ember.futures``: PyTorch's ``torch.futures`` — a thread-safe Future with callbacks.

A ``Future`` is completed once, with a value (``set_result``) or an exception
(``set_exception``); ``wait()`` blocks until then and returns the value or raises the
exception. ``then(callback)`` chains a new future on the callback's result, and
``add_done_callback`` runs a callback on completion (immediately when already done).
``ember.jit.fork`` returns these: waiting on a forked task that no inter-op thread has started
yet runs it on the waiting thread, so nested forks never deadlock a full pool.
"""
from __future__ import annotations

import threading
import warnings
from typing import Generic, TypeVar
from .._warn import user_stacklevel

__all__ = ["Future", "collect_all", "wait_all"]

T = TypeVar("T")
S = TypeVar("S")


class Future(Generic[T]):
    """The result of an asynchronous computation (PyTorch's ``torch.futures.Future``).

    ``Future[T]`` may be used in annotations (``List[Future[Tensor]]``)."""

    def __init__(self, *, devices=None):
        self._cond = threading.Condition(threading.Lock())
        self._done = False
        self._value = None
        self._error = None
        self._callbacks = []
        self._task = None   # a forked task this future belongs to, runnable by a waiter

    def done(self) -> bool:
        """True once the future holds a value or an exception."""
        return self._done

    def wait(self) -> T:
        """Block until the future is complete; return its value or raise its exception."""
        task = self._task
        if task is not None and not self._done:
            task.run_if_pending()
        with self._cond:
            while not self._done:
                self._cond.wait()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self) -> T:
        """The value of a completed future (its exception is raised); call ``wait()`` first."""
        if not self._done:
            raise RuntimeError("Future.value(): the future has not completed yet; call wait() "
                               "first (or read it inside a callback)")
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback) -> "Future[S]":
        """A new future completed with ``callback(self)`` once this one completes; if the
        callback raises, the new future holds a RuntimeError naming that error."""
        out = Future()

        def run(fut):
            try:
                result = callback(fut)
            except Exception as e:
                err = RuntimeError(f"Got the following error when running the callback: "
                                   f"{type(e).__name__}: {e}")
                err.__cause__ = e
                out.set_exception(err)
            else:
                out.set_result(result)

        self.add_done_callback(run)
        return out

    def add_done_callback(self, callback) -> None:
        """Run ``callback(self)`` when the future completes (now, if it already has). An
        exception in the callback is reported as a warning, not raised."""
        with self._cond:
            if not self._done:
                self._callbacks.append(callback)
                return
        _run_callback(callback, self)

    def set_result(self, result: T) -> None:
        """Complete the future with ``result`` and run its callbacks."""
        self._complete(result, None)

    def set_exception(self, result) -> None:
        """Complete the future with the exception ``result``: ``wait()`` will raise it."""
        if not isinstance(result, BaseException):
            raise AssertionError(f"{result} is of type {type(result)}, not an Exception.")
        self._complete(None, result)

    def _complete(self, value, error):
        with self._cond:
            if self._done:
                raise RuntimeError("Attempting to mark a completed Future as complete again. "
                                   "Note that a Future can only be marked completed once.")
            self._value, self._error = value, error
            self._done = True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            _run_callback(cb, self)

    def __repr__(self):
        state = "pending" if not self._done else "error" if self._error is not None else "done"
        return f"<ember.futures.Future {state} at {id(self):#x}>"


def _run_callback(callback, fut):
    try:
        callback(fut)
    except Exception as e:
        warnings.warn(f"Got the following error when running the callback: "
                      f"{type(e).__name__}: {e}", RuntimeWarning, stacklevel=user_stacklevel())


def collect_all(futures) -> Future:
    """A future completed, with the list of ``futures``, once every one of them is."""
    futures = list(futures)
    out = Future()
    left = [len(futures)]
    lock = threading.Lock()
    if not futures:
        out.set_result([])
        return out

    def one_done(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out.set_result(futures)

    for f in futures:
        if not isinstance(f, Future):
            raise TypeError(f"collect_all expects a list of Futures, got {type(f).__name__}")
        f.add_done_callback(one_done)
    return out


def wait_all(futures) -> list:
    """Wait for every future; their values in order (the first exception met is raised)."""
    futures = list(futures)
    for f in futures:   # waiting (not collect_all) lets this thread run unstarted forked tasks
        try:
            f.wait()
        except BaseException:
            pass
    return [f.value() for f in futures]
