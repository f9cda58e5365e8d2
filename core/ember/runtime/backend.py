"""``Backend``: what a device plug-in provides.

Subclass it, set ``name``, fill ``self.kernels`` and implement the data-movement methods; the
rest has working defaults for a synchronous single-device backend. Everything a user sees
(``ember.<name>``, ``Tensor.<name>()``, ``device="<name>:i"``) is generated from this object.
"""
from __future__ import annotations

import time

from .. import _dtype
from .kernels import KernelTable


class Backend:
    #: device type users write: ``device="<name>:0"``
    name: str = ""
    #: dtypes this backend computes in; an op on any other dtype fails before a kernel runs
    dtypes: frozenset = frozenset(_dtype.all_dtypes)
    #: run ops that have no kernel here on the CPU (copy in, compute, copy back, warn once per op)
    cpu_fallback: bool = False
    #: False for devices whose tensors hold no values (meta): tools that read results skip them
    has_data: bool = True

    def __init__(self):
        if not self.name:
            raise TypeError(f"{type(self).__name__} must set a non-empty `name`")
        self.kernels = KernelTable(self.name)
        self._current_device = 0
        self._generators = {}

    # -- availability and devices ---------------------------------------------------------------
    def is_available(self) -> bool:
        """True when at least one device can run. Must not raise."""
        return True

    def unavailable_reason(self) -> str | None:
        """Why ``is_available()`` is False, in words a user can act on."""
        return None

    def device_count(self) -> int:
        return 1

    def current_device(self) -> int:
        return self._current_device

    def set_device(self, index: int) -> None:
        count = self.device_count()
        if not 0 <= index < count:
            raise RuntimeError(f"{self.name}: invalid device index {index}; this machine has "
                               f"{count} {self.name} device(s)")
        self._current_device = index

    def device_name(self, index: int) -> str:
        return f"{self.name}:{index}"

    # -- storage and data movement (required) ---------------------------------------------------
    def empty(self, shape, dtype, device):
        """A new contiguous Tensor with uninitialised memory on ``device``."""
        raise NotImplementedError

    def from_numpy(self, array, device, non_blocking=False):
        """A new Tensor on ``device`` holding a copy of the host numpy ``array``."""
        raise NotImplementedError

    def to_numpy(self, tensor):
        """A host numpy array with the tensor's values (blocks until they are ready)."""
        raise NotImplementedError

    def copy_(self, dst, src, non_blocking=False):
        """Copy ``src`` into ``dst`` (same shape; both on this backend, dtypes may differ)."""
        raise NotImplementedError

    def storage_nbytes(self, data) -> int:
        raise NotImplementedError

    # -- memory ---------------------------------------------------------------------------------
    def allocator(self, index: int):
        """The allocator of device ``index`` (see ``ember.runtime.allocator``), or None if the
        backend does not track its memory (the CPU, like PyTorch's)."""
        return None

    # -- streams and events ---------------------------------------------------------------------
    Stream = None  # set below to HostStream
    Event = None

    def current_stream(self, index: int):
        streams = self.__dict__.setdefault("_current_streams", {})
        s = streams.get(index)
        if s is None:
            s = streams[index] = self.Stream(self, index)
        return s

    def set_stream(self, stream) -> None:
        self.__dict__.setdefault("_current_streams", {})[stream.device_index] = stream

    def synchronize(self, index: int | None = None) -> None:
        """Block until all work queued on device ``index`` is done."""

    # -- random numbers -------------------------------------------------------------------------
    def create_generator(self, index: int, seed: int):
        """A generator state object for device ``index``: see ``ember.runtime.rng.HostGenerator``."""
        from .rng import HostGenerator
        return HostGenerator(seed)

    def default_generator(self, index: int):
        g = self._generators.get(index)
        if g is None:
            from .._generator import Generator, _pending_seed
            g = self._generators[index] = Generator._for_device(self, index)
            if _pending_seed[0] is not None:
                g.manual_seed(_pending_seed[0])
        return g

    def __repr__(self):
        return f"<{type(self).__name__} '{self.name}'>"


class StreamBase:
    """What every backend's stream shares. A backend's stream sets ``backend`` and
    ``device_index`` and implements ``query``, ``synchronize`` and ``wait_event``; equal
    streams (``__eq__``) are the same queue."""

    backend = None
    device_index = 0

    @property
    def device(self):
        from .._device import device
        return device(self.backend.name, self.device_index)

    def wait_stream(self, stream) -> None:
        """Later work on this stream starts after everything queued on ``stream`` so far."""
        if stream != self:
            self.wait_event(stream.record_event())

    def record_event(self, event=None):
        event = event if event is not None else self.backend.Event()
        event.record(self)
        return event

    def __enter__(self):
        self._prev = self.backend.current_stream(self.device_index)
        self.backend.set_stream(self)
        return self

    def __exit__(self, *exc):
        self.backend.set_stream(self._prev)


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


class HostEvent:
    """An event on a synchronous backend: a timestamp taken when recorded."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing = enable_timing
        self._time = None

    def record(self, stream=None):
        self._time = time.perf_counter()

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass

    def elapsed_time(self, end) -> float:
        """Milliseconds from this event to ``end``."""
        if not (self.enable_timing and end.enable_timing):
            raise RuntimeError("elapsed_time: both events must be created with enable_timing=True")
        if self._time is None or end._time is None:
            raise RuntimeError("elapsed_time: both events must be recorded first")
        return (end._time - self._time) * 1e3


Backend.Stream = HostStream
Backend.Event = HostEvent
