"""Streams and events are cupy's: ``ember.cuda.Stream`` wraps a ``cupy.cuda.Stream`` and making
it current (``with stream:``, ``ember.cuda.stream(s)``, ``set_stream``) makes it cupy's current
stream, so every kernel -- cupy's own and the backend's -- is queued on it. Nothing here
synchronizes the host unless asked (``synchronize``, ``Event.synchronize``, ``elapsed_time``'s
completion check is a query).
"""
from __future__ import annotations

from ember.runtime import EventBase, StreamBase


class Stream(StreamBase):
    """A CUDA stream of one device (``ember.cuda.Stream(device=None, priority=0)``)."""

    def __init__(self, backend, device_index=None, priority=0, _cupy_stream=None):
        self.backend = backend
        self.device_index = backend.current_device() if device_index is None else device_index
        self.priority = priority
        api = backend._api
        if _cupy_stream is not None:
            self._stream = _cupy_stream
        else:
            with api.on_device(self.device_index):
                self._stream = api.new_stream(priority)

    @property
    def cuda_stream(self) -> int:
        """The raw ``cudaStream_t`` (PyTorch's ``Stream.cuda_stream``)."""
        return self._stream.ptr

    def query(self) -> bool:
        return self._stream.done

    def synchronize(self) -> None:
        be = self.backend
        token = be._asserts.prefetch(self.device_index, self._stream)
        be._api.stream_synchronize(self._stream)
        be._raise_async(self.device_index)
        be._asserts.verify(token, str(self.device))

    def wait_event(self, event) -> None:
        if event._event is not None:
            self._stream.wait_event(event._event)

    def __eq__(self, other):
        return (isinstance(other, Stream) and other.device_index == self.device_index
                and other._stream.ptr == self._stream.ptr)

    def __hash__(self):
        return hash((self.device_index, self._stream.ptr))

    def __repr__(self):
        return (f"<ember.cuda.Stream device={self.device} "
                f"cuda_stream={self._stream.ptr:#x}>")


class Event(EventBase):
    """A CUDA event (``ember.cuda.Event(enable_timing=False, blocking=False,
    interprocess=False)``); made on first ``record``, on the recording stream's device."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        super().__init__(enable_timing, blocking, interprocess)
        self._event = None
        self.device_index = None

    @property
    def is_recorded(self) -> bool:
        return self._event is not None

    def _record(self, stream) -> None:
        api = self.backend._api
        if self._event is None:
            with api.on_device(stream.device_index):
                self._event = api.new_event(self.enable_timing, self.blocking, self.interprocess)
            self.device_index = stream.device_index
        elif self.device_index != stream.device_index:
            raise RuntimeError(f"Event device {self.device_index} does not match recording "
                               f"stream's device {stream.device_index}.")
        self._event.record(stream._stream)

    def query(self) -> bool:
        return True if self._event is None else self._event.done

    def synchronize(self) -> None:
        if self._event is not None:
            self.backend._api.event_synchronize(self._event)

    def _elapsed_ms(self, end) -> float:
        return self.backend._api.elapsed_ms(self._event, end._event)
