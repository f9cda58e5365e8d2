"""Streams and events: the bases every backend's classes share, and the synchronous defaults.

A *stream* is an in-order queue of work on one device; an *event* is a marker recorded on a
stream, complete when everything queued before it is. ``StreamBase`` and ``EventBase`` hold what
is the same on every backend (the ``device`` property, ``wait_stream``, ``record_event``, the
``with stream:`` protocol; default streams for ``record``/``wait``, the checks of
``elapsed_time``); a backend implements only what touches its queues. ``HostStream`` and
``HostEvent`` are complete implementations for backends that run each kernel to completion when
it is called (the CPU, the minimal backend template).
"""
from __future__ import annotations

import time

from .devices import device as _device


class StreamBase:
    """What every backend's stream shares.

    A subclass sets ``backend`` and ``device_index`` and implements ``query()`` (True when all
    work queued so far has finished, never blocking), ``synchronize()`` (block until it has) and
    ``wait_event(event)`` (later work on this stream waits for ``event``, without blocking the
    host). Equal streams (``__eq__``) are the same queue.
    """

    backend = None
    device_index = 0

    @property
    def device(self):
        """The concrete ``ember.device`` this stream belongs to."""
        return _device(self.backend.name, self.device_index)

    def wait_stream(self, stream) -> None:
        """Later work on this stream starts after everything queued on ``stream`` so far."""
        if stream != self:
            self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record ``event`` (a new ``backend.Event()`` when None) on this stream; return it."""
        event = event if event is not None else self.backend.Event()
        event.record(self)
        return event

    def __enter__(self):
        self._prev = self.backend.current_stream(self.device_index)
        self.backend.set_stream(self)
        return self

    def __exit__(self, *exc):
        self.backend.set_stream(self._prev)


class EventBase:
    """What every backend's event shares.

    Events are made as ``ember.<backend>.Event(enable_timing=False, blocking=False,
    interprocess=False)``; ``Backend.__init__`` gives each backend its own subclass whose
    ``backend`` is set, so ``record()``/``wait()`` without a stream use the current one. A
    subclass implements ``_record(stream)`` (put the marker on ``stream``), ``is_recorded``,
    ``query()``, ``synchronize()`` and ``_elapsed_ms(end)`` (milliseconds between two completed
    timing events).
    """

    backend = None

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self.blocking = blocking
        self.interprocess = interprocess

    @property
    def is_recorded(self) -> bool:
        """True once ``record`` was called."""
        raise NotImplementedError

    def _current_stream(self):
        b = self.backend
        if b is None:
            raise RuntimeError(f"{type(self).__name__}: no stream given and the event belongs to "
                               f"no backend; make events as ember.<backend>.Event()")
        return b.current_stream(b.current_device())

    def record(self, stream=None) -> None:
        """Mark the current point of ``stream`` (default: the backend's current stream)."""
        self._record(stream if stream is not None else self._current_stream())

    def _record(self, stream) -> None:
        raise NotImplementedError

    def query(self) -> bool:
        """True when the work before the marker has finished (never blocks); True when the
        event was never recorded."""
        raise NotImplementedError

    def synchronize(self) -> None:
        """Block the host until the work before the marker has finished."""
        raise NotImplementedError

    def wait(self, stream=None) -> None:
        """Make later work on ``stream`` (default: the current stream) wait for this event."""
        (stream if stream is not None else self._current_stream()).wait_event(self)

    def elapsed_time(self, end) -> float:
        """Milliseconds from this event to ``end``; both need ``enable_timing=True`` and must
        be recorded and complete."""
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("elapsed_time: both events must be created with enable_timing=True")
        if not (self.is_recorded and end.is_recorded):
            raise RuntimeError("elapsed_time: both events must be recorded first")
        if not (self.query() and end.query()):
            raise RuntimeError("elapsed_time: an event has not completed yet; call "
                               "event.synchronize() first")
        return self._elapsed_ms(end)

    def _elapsed_ms(self, end) -> float:
        raise NotImplementedError

    def __repr__(self):
        where = f"ember.{self.backend.name}." if self.backend is not None else ""
        return f"<{where}Event {'recorded' if self.is_recorded else 'unrecorded'}>"


class HostStream(StreamBase):
    """A stream for backends that execute each kernel to completion when it is called."""

    def __init__(self, backend, device_index=0, priority=0):
        self.backend = backend
        self.device_index = device_index
        self.priority = priority

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        self.backend.synchronize(self.device_index)

    def wait_event(self, event) -> None:
        event.synchronize()

    def wait_stream(self, stream) -> None:
        stream.synchronize()

    def __repr__(self):
        return f"<ember.{self.backend.name}.Stream device={self.device}>"


class HostEvent(EventBase):
    """An event on a synchronous backend: a timestamp taken when recorded."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        super().__init__(enable_timing, blocking, interprocess)
        self._time = None

    @property
    def is_recorded(self) -> bool:
        return self._time is not None

    def record(self, stream=None) -> None:
        # nothing is queued on a synchronous device: no stream is needed to mark "now"
        self._record(stream)

    def _record(self, stream) -> None:
        self._time = time.perf_counter()

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass

    def _elapsed_ms(self, end) -> float:
        return (end._time - self._time) * 1e3
