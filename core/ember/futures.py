"""``ember.futures``: PyTorch's ``torch.futures.Future``, the handle that asynchronous work
(``Work.get_future()``, DDP communication hooks) completes.

A Future holds a value or an exception once completed. Callbacks added with ``then`` /
``add_done_callback`` run on the thread that completes the future (inline when it is already
complete), as in PyTorch; for distributed work that is the communication thread.
"""
from __future__ import annotations

import threading

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """The result of an asynchronous computation (``torch.futures.Future``)."""

    def __init__(self, *, devices=None):
        self._cond = threading.Condition(threading.Lock())
        self._done = False
        self._value = None
        self._exc = None
        self._callbacks = []
        self._devices = list(devices or [])
        # set for futures of distributed work: waiting drives that work's progress on the
        # waiting thread (and enforces its timeout) instead of sleeping until another thread
        # completes it
        self._driver = None

    # -- completing ------------------------------------------------------------------------------
    def set_result(self, result) -> None:
        """Complete the future with ``result``; runs the callbacks. A future completes once."""
        self._complete(result, None)

    def set_exception(self, result) -> None:
        """Complete the future with an exception that ``wait()``/``value()`` raise."""
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._complete(None, result)

    def _complete(self, value, exc) -> None:
        with self._cond:
            if self._done:
                raise RuntimeError("Future can only be marked completed once.")
            self._value, self._exc, self._done = value, exc, True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for cb in callbacks:
            cb(self)

    # -- reading ---------------------------------------------------------------------------------
    def done(self) -> bool:
        return self._done

    def wait(self):
        """Block until complete; return the value or raise the exception."""
        if not self._done and self._driver is not None:
            self._driver()
        with self._cond:
            while not self._done:
                self._cond.wait()
        return self.value()

    def value(self):
        """The value of a completed future (raises its exception); does not block."""
        if not self._done:
            raise RuntimeError("Future.value() called before the future completed; call "
                               "wait() first")
        if self._exc is not None:
            raise self._exc
        return self._value

    # -- chaining --------------------------------------------------------------------------------
    def then(self, callback) -> "Future":
        """A new future completed with ``callback(self)`` once this one completes (with the
        exception instead if ``callback`` raises)."""
        out = Future(devices=self._devices)
        out._driver = self._driver

        def run(fut):
            try:
                result = callback(fut)
            except BaseException as e:  # delivered to whoever waits on ``out``
                out.set_exception(e)
            else:
                out.set_result(result)
        self.add_done_callback(run)
        return out

    def add_done_callback(self, callback) -> None:
        """Run ``callback(self)`` once complete (now, if it already is)."""
        with self._cond:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def __repr__(self):
        state = "done" if self._done else "pending"
        return f"<ember.futures.Future {state}>"


def collect_all(futures) -> Future:
    """A future completed with the list of ``futures`` once all of them are complete."""
    futures = list(futures)
    out = Future()
    left = [len(futures)]
    lock = threading.Lock()
    if not futures:
        out.set_result([])
        return out

    def one(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out.set_result(futures)
    for f in futures:
        f.add_done_callback(one)
    return out


def wait_all(futures) -> list:
    """Wait for every future and return their values (raises the first exception)."""
    return [f.wait() for f in futures]
