"""``Backend``: what a device plug-in provides.

Subclass it, set ``name``, fill ``self.kernels`` and implement the five data-movement methods
(``empty``, ``from_numpy``, ``to_numpy``, ``copy_``, ``storage_nbytes``); the rest has working
defaults for a synchronous single-device backend. Everything a user sees (``ember.<name>``,
``Tensor.<name>()``, ``device="<name>:i"``) is generated from this object.
``docs/writing-a-backend.md`` is the full contract.
"""
from __future__ import annotations

import threading

from .. import _dtype
from .generator import Generator
from .kernels import KernelTable
from .rng import HostGenerator
from .streams import HostEvent, HostStream


class Backend:
    """A device type's implementation: what the registry holds and the dispatcher runs kernels
    of. Required: ``name``, ``empty``, ``from_numpy``, ``to_numpy``, ``copy_``,
    ``storage_nbytes``, and kernels in ``self.kernels``; the rest has defaults for a
    synchronous single-device backend."""

    #: device type users write: ``device="<name>:0"``
    name: str = ""
    #: dtypes this backend computes in; an op on any other dtype fails before a kernel runs
    dtypes: frozenset = frozenset(_dtype.all_dtypes)
    #: dtypes stored here but computed in a wider dtype, e.g. ``{bfloat16: float32}``: the
    #: dispatcher hands kernels those operands converted up and converts results that should
    #: have the stored dtype back (rounded); list them in ``dtypes`` too
    storage_dtypes: dict = {}
    #: kernels that move the storage dtypes themselves (``_to_copy``, ``copy_``): no conversion
    storage_native_ops: frozenset = frozenset()
    #: run ops that have no kernel here on the CPU (copy in, compute, copy back, warn once per op)
    cpu_fallback: bool = False
    #: False for devices whose tensors hold no values (meta): tools that read results skip them
    has_data: bool = True
    #: the stream class: ``Stream(backend, device_index, priority)``; see ``StreamBase``
    Stream = HostStream
    #: the event class (an ``EventBase``); ``__init__`` binds a subclass to this backend
    Event = HostEvent

    def kernel_dtypes(self, op_name: str) -> frozenset:
        """The dtypes this backend's kernel of ``op_name`` handles (a subset of ``dtypes``).
        Tensors of a dtype in ``dtypes`` but not here run that op through the CPU fallback
        when ``cpu_fallback`` is on (an error otherwise): a backend can declare a dtype (the
        OpenCL backend's complex64) before every kernel handles it."""
        return self.dtypes

    def __init__(self):
        if not self.name:
            raise TypeError(f"{type(self).__name__} must set a non-empty `name`")
        self.kernels = KernelTable(self.name)
        self._current_device = 0
        self._generators = {}
        self._generator_lock = threading.Lock()
        event_cls = type(self).Event
        if event_cls is not None and getattr(event_cls, "backend", None) is None:
            # ember.<name>.Event() must know its backend (for record()/wait() without a stream)
            self.Event = type("Event", (event_cls,), {"backend": self,
                                                      "__module__": event_cls.__module__})

    # -- availability and devices ---------------------------------------------------------------
    def is_available(self) -> bool:
        """True when at least one device can run. Should not raise (the registry treats an
        exception as "unavailable" with the exception as the reason)."""
        return True

    def unavailable_reason(self) -> str | None:
        """Why ``is_available()`` is False, in words a user can act on; None when available."""
        return None

    def device_count(self) -> int:
        """How many devices of this type there are (``ember.<name>.device_count()``)."""
        return 1

    def current_device(self) -> int:
        """The index ``device="<name>"`` (no index) means."""
        return self._current_device

    def set_device(self, index: int) -> None:
        """Make device ``index`` the current one (``ember.<name>.set_device``)."""
        count = self.device_count()
        if not 0 <= index < count:
            raise RuntimeError(f"{self.name}: invalid device index {index}; this machine has "
                               f"{count} {self.name} device(s)")
        self._current_device = index

    def device_name(self, index: int) -> str:
        """A human-readable name of device ``index`` (``ember info``)."""
        return f"{self.name}:{index}"

    # -- storage and data movement (required) ---------------------------------------------------
    def empty(self, shape, dtype, device):
        """A new contiguous Tensor with uninitialised memory on the concrete ``device``."""
        raise NotImplementedError

    def from_numpy(self, array, device, non_blocking=False):
        """A new Tensor on ``device`` holding a copy of the host numpy ``array`` (any strides;
        the caller may reuse ``array`` as soon as this returns)."""
        raise NotImplementedError

    def to_numpy(self, tensor):
        """A host numpy array with the tensor's values, shaped like it (blocks until the values
        are ready). It may be a view of the tensor's memory only on a host-memory backend."""
        raise NotImplementedError

    def copy_(self, dst, src, non_blocking=False):
        """Copy ``src`` into ``dst`` and return ``dst``: same shape, ``dst`` on this backend,
        dtypes may differ (cast as ``Tensor.to`` does); ``src`` may be on another device (the
        CPU fallback writes results back this way)."""
        raise NotImplementedError

    def storage_nbytes(self, data) -> int:
        """The size in bytes of a Storage ``data`` handle this backend made."""
        raise NotImplementedError

    # -- value checks ---------------------------------------------------------------------------
    def assert_values(self, op, ok, value, exc, message):
        """Fail ``op`` with ``exc(message)`` (``{value}`` replaced by the 0-d tensor ``value``'s
        value) unless the 0-d bool tensor ``ok`` is True: what the op layer calls for a check
        that needs tensor values (an embedding index in range). This default reads both at once;
        a device backend may check on the device and raise at its next synchronization, as
        PyTorch's device-side asserts do, so that the op does not wait for the device."""
        if not self.has_data:
            return
        if not bool(ok.item()):
            raise exc(message.format(value=None if value is None else value.item()))

    # -- memory ---------------------------------------------------------------------------------
    def allocator(self, index: int):
        """The allocator of device ``index`` (a ``CachingAllocator``, or an object with its
        statistics methods), or None if the backend does not track its memory (the CPU, like
        PyTorch's)."""
        return None

    # -- streams and events ---------------------------------------------------------------------
    def current_stream(self, index: int):
        """The stream kernels for device ``index`` are queued on now."""
        streams = self.__dict__.setdefault("_current_streams", {})
        s = streams.get(index)
        if s is None:
            s = streams.setdefault(index, self.Stream(self, index))
        return s

    def set_stream(self, stream) -> None:
        """Make ``stream`` the current stream of its device."""
        self.__dict__.setdefault("_current_streams", {})[stream.device_index] = stream

    def synchronize(self, index: int | None = None) -> None:
        """Block until all work queued on device ``index`` (None: the current one) is done."""

    # -- random numbers -------------------------------------------------------------------------
    def create_generator(self, index: int, seed: int):
        """A generator state object for device ``index`` with methods ``reseed(seed)``,
        ``state_bytes()``, ``load_state(data)`` and a ``state_size``; the default is a host
        Philox generator (``HostGenerator``) whose ``.impl`` is a numpy ``Generator``."""
        return HostGenerator(seed)

    def default_generator(self, index: int):
        """The ``ember.Generator`` that random ops on device ``index`` use by default."""
        g = self._generators.get(index)
        if g is None:
            with self._generator_lock:
                g = self._generators.get(index)
                if g is None:
                    g = self._generators[index] = Generator._for_device(self, index)
        return g

    # -- ember.compile ----------------------------------------------------------------------------
    def compile_pointwise(self, kernel):
        """Optional: a runner for a fused pointwise group of ``ember.compile``, or None.

        ``kernel`` is an ``ember.compiler.fusion.PointwiseKernel``: input dtypes, statements
        (``kernel.render(dialect_for, var)`` writes them as C-family code) and which
        statements are outputs. The runner is called with the input tensors (on this device,
        broadcastable to one shape) and returns the output tensors, freshly allocated in that
        shape. The default, None, keeps the group's ops as separate calls."""
        return None

    def compile_foreach(self, kernel):
        """Optional: a runner for a run of in-place foreach ops (an optimizer's update), or
        None.

        ``kernel`` is an ``ember.compiler.fusion.ForeachKernel``: per index, its ``slots``
        (the tensor lists the run reads) are operands, ``statements`` compute, ``writes``
        store statements back into slots in place. The runner gets the slot lists and returns
        True when it did the update, False to have the original ops run instead (tensors it
        can't handle). The default, None, keeps the ops."""
        return None

    def compile_norm(self, name, dtype):
        """Optional: a faster runner for a normalisation op of a compiled graph
        (``native_layer_norm`` / ``native_layer_norm_backward``) at ``dtype``, or None.

        The runner takes the op's arguments and returns its outputs as the kernel would, or
        None for operands it can't handle (then the eager kernel runs). The default, None,
        keeps the kernel."""
        return None

    def __repr__(self):
        return f"<{type(self).__name__} '{self.name}'>"
