"""``ember.<backend>``: the generated device module (``ember.cuda``-style API) of a backend.

It exists for every backend name the registry knows, before the backend is loaded;
``is_available()`` never raises (it is how users probe). Where the device is not there — the
backend cannot run here, or no backend provides the type (``MissingDeviceModule``) — each
function does what torch's build without that device does (``device_absence.py``: seeding and
cache calls do nothing, counters read 0, the rest raise the reason). Otherwise the functions
load the backend on first use.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import random
import sys
import threading
import types
import warnings

from . import device_absence, device_types, events
from .devices import device as _device_cls
from .devices import resolve_type
from .registry import registry
from .._warn import user_stacklevel


def _absent_aware(name, method):
    """``method``, answering as torch's device-less build does when the device is absent:
    its answer from the table, or the reason the device is missing."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        if not self.is_available():
            absent = self._without_device.get(name)
            if absent is not None:
                return absent(*args, **kwargs)
            if name in self._needs_device:
                try:
                    registry.get(self._name)
                except RuntimeError as e:  # why the device is missing, naming the call
                    raise type(e)(f"ember.{self._name}.{name}(): {e}") from None
        return method(self, *args, **kwargs)
    return call


def _nested(stats: dict) -> dict:
    """``{"a.b.c": v}`` -> ``{"a": {"b": {"c": v}}}`` (torch's memory_stats_as_nested_dict)."""
    out: dict = {}
    for key, value in stats.items():
        node = out
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return out


def _guard(cls):
    """Make every method of ``cls`` that torch answers without the device answer so too."""
    names = set().union(*(device_absence.torch_names(t) for t in device_absence.DEVICE_TYPES))
    for name in names - {"is_available"}:  # the probe itself
        method = cls.__dict__.get(name)
        if callable(method) and not hasattr(method, "__wrapped__"):
            setattr(cls, name, _absent_aware(name, method))



class DeviceModule(types.ModuleType):
    #: raised when a device allocation fails after the cache was emptied (torch.cuda's name)
    from .allocator import OutOfMemoryError

    def __init__(self, name: str):
        super().__init__(f"ember.{name}", f"The {name} device module.")
        self._name = name
        self._without_device = device_absence.without_device(name)
        self._needs_device = device_absence.needs_device(name)
        self._torch_names = device_absence.torch_names(name)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _guard(cls)

    def __getattr__(self, name):
        # torch's functions of this device type that ember has no generic form of
        # (torch.cuda.cudart, torch.mps.recommended_max_memory…): the backend's, if it has one
        if name.startswith("_") or name not in self.__dict__.get("_torch_names", ()):
            raise AttributeError(f"module 'ember.{self.__dict__.get('_name')}' has no "
                                 f"attribute '{name}'")
        return functools.partial(self._backend_function, name)

    def _backend_function(self, name, *args, **kwargs):
        absent = self._without_device.get(name)
        if absent is not None and not self.is_available():
            return absent(*args, **kwargs)
        fn = getattr(self._backend, name, None)  # raises why the device is missing
        if fn is None:
            raise RuntimeError(f"ember.{self._name}.{name}(): the {self._name} backend does not "
                               f"provide it")
        return fn(*args, **kwargs)

    def __dir__(self):
        return sorted(set(super().__dir__()) | self._torch_names)

    @property
    def _backend(self):
        try:
            return registry.get(self._name)
        except RuntimeError as e:  # BackendUnavailable, unknown device type
            raise type(e)(f"{self._caller()}: {e}") from None

    def _caller(self):
        """``ember.cuda.get_device_name()``: the public function that needed the backend, so
        the error names the call (every method reaches the backend through ``_backend``)."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_name.startswith("_"):
            frame = frame.f_back
        name = frame.f_code.co_name if frame is not None else "?"
        return f"ember.{self._name}.{name}()"

    def _index(self, device):
        if device is None:
            return self._backend.current_device()
        if isinstance(device, int):
            return device
        d = _device_cls(device) if not isinstance(device, _device_cls) else device
        if d.type != self._name:
            raise ValueError(f"ember.{self._name}: expected a {self._name} device, got {d}")
        return d.index if d.index is not None else self._backend.current_device()

    # availability and devices
    def is_available(self) -> bool:
        """True when the backend loads and has a device (never raises)."""
        return registry.unavailable_reason(self._name) is None

    def unavailable_reason(self):
        """Why ``is_available()`` is False (None when it is True)."""
        return registry.unavailable_reason(self._name)

    def device_count(self) -> int:
        return self._backend.device_count() if self.is_available() else 0

    def is_initialized(self) -> bool:
        """True once the backend has been loaded and found available."""
        backend = registry.loaded(self._name)
        return backend is not None and registry.unavailable_reason(self._name) is None

    def is_bf16_supported(self, including_emulation: bool = True) -> bool:
        """True when the backend stores and computes bfloat16 tensors."""
        if not self.is_available():
            return False
        return any(d.name == "bfloat16" for d in self._backend.dtypes)

    def current_device(self) -> int:
        return self._backend.current_device()

    def set_device(self, device) -> None:
        self._backend.set_device(self._index(device))

    def get_device_name(self, device=None) -> str:
        return self._backend.device_name(self._index(device))

    def synchronize(self, device=None) -> None:
        self._backend.synchronize(self._index(device))

    def set_sync_debug_mode(self, debug_mode) -> None:
        """Warn ("warn"/1) or raise ("error"/2) at every host synchronization, or neither
        ("default"/0), where the backend can tell (PyTorch's ``torch.cuda`` function)."""
        self._optional("set_sync_debug_mode")(debug_mode)

    def get_sync_debug_mode(self) -> int:
        return self._optional("get_sync_debug_mode")()

    def host_sync_count(self) -> int:
        """How many times the host has waited for this backend's devices so far (value reads,
        synchronizations); the difference over a training step is its synchronizations."""
        return self._optional("host_sync_count")()

    def _optional(self, method):
        """A backend method that only some backends have (device properties, driver memory
        info): the bound method, or RuntimeError naming what is missing."""
        fn = getattr(self._backend, method, None)
        if fn is None:
            raise RuntimeError(f"ember.{self._name}: this backend does not provide {method}()")
        return fn

    def get_device_properties(self, device=None):
        """The device's properties (name, total_memory, major, minor, ...)."""
        return self._optional("device_properties")(self._index(device))

    def get_device_capability(self, device=None):
        """(major, minor) compute capability."""
        return self._optional("device_capability")(self._index(device))

    def mem_get_info(self, device=None):
        """(free, total) bytes of the device, as its driver reports them."""
        return self._optional("mem_get_info")(self._index(device))

    @contextlib.contextmanager
    def device(self, device):
        prev = self.current_device()
        self.set_device(device)
        try:
            yield
        finally:
            self.set_device(prev)

    # streams and events
    @property
    def Stream(self):
        backend = self._backend

        def make(device=None, priority=0, **kwargs):
            return backend.Stream(backend, self._index(device), priority)
        return make

    @property
    def Event(self):
        return self._backend.Event

    def current_stream(self, device=None):
        return self._backend.current_stream(self._index(device))

    def default_stream(self, device=None):
        default = getattr(self._backend, "default_stream", None)
        if default is not None:
            return default(self._index(device))
        return self.current_stream(device)

    def stream(self, stream):
        return stream if stream is not None else contextlib.nullcontext()

    def set_stream(self, stream) -> None:
        self._backend.set_stream(stream)

    # memory
    def _allocator(self, device):
        a = self._backend.allocator(self._index(device))
        if a is None:
            raise RuntimeError(f"ember.{self._name}: this backend does not track memory "
                               f"statistics")
        return a

    def memory_allocated(self, device=None) -> int:
        return self._allocator(device).memory_allocated()

    def max_memory_allocated(self, device=None) -> int:
        return self._allocator(device).max_memory_allocated()

    def memory_reserved(self, device=None) -> int:
        return self._allocator(device).memory_reserved()

    def max_memory_reserved(self, device=None) -> int:
        return self._allocator(device).max_memory_reserved()

    def reset_peak_memory_stats(self, device=None) -> None:
        self._allocator(device).reset_peak_memory_stats()

    def memory_stats(self, device=None) -> dict:
        return self._allocator(device).memory_stats()

    def memory_summary(self, device=None, abbreviated=False) -> str:
        """A printable table of the device's memory statistics."""
        a = self._allocator(device)
        summary = getattr(a, "memory_summary", None)
        if summary is not None:
            return summary()
        return "\n".join(f"{k}: {v}" for k, v in a.memory_stats().items())

    def empty_cache(self) -> None:
        backend = self._backend
        for i in range(backend.device_count()):
            a = backend.allocator(i)
            if a is not None:
                a.empty_cache()

    def memory_cached(self, device=None) -> int:
        warnings.warn(f"ember.{self._name}.memory_cached has been renamed to "
                      f"ember.{self._name}.memory_reserved", FutureWarning,
                      stacklevel=user_stacklevel())
        return self.memory_reserved(device)

    def max_memory_cached(self, device=None) -> int:
        warnings.warn(f"ember.{self._name}.max_memory_cached has been renamed to "
                      f"ember.{self._name}.max_memory_reserved", FutureWarning,
                      stacklevel=user_stacklevel())
        return self.max_memory_reserved(device)

    def reset_max_memory_allocated(self, device=None) -> None:
        """Deprecated in torch: resets every peak, as ``reset_peak_memory_stats``."""
        warnings.warn(f"ember.{self._name}.reset_max_memory_allocated now calls "
                      f"ember.{self._name}.reset_peak_memory_stats, which resets /all/ peak "
                      f"memory stats.", FutureWarning, stacklevel=user_stacklevel())
        self.reset_peak_memory_stats(device)

    def reset_max_memory_cached(self, device=None) -> None:
        warnings.warn(f"ember.{self._name}.reset_max_memory_cached now calls "
                      f"ember.{self._name}.reset_peak_memory_stats, which resets /all/ peak "
                      f"memory stats.", FutureWarning, stacklevel=user_stacklevel())
        self.reset_peak_memory_stats(device)

    def memory_stats_as_nested_dict(self, device=None) -> dict:
        return _nested(self.memory_stats(device))

    def memory_snapshot(self) -> list:
        """The allocator's segments, where the backend's allocator records them."""
        a = self._allocator(None)
        snapshot = getattr(a, "snapshot", None)
        return snapshot() if snapshot is not None else []

    # ember keeps no pinned host memory of its own: the host statistics are empty
    def host_memory_stats(self) -> dict:
        return collections.OrderedDict()

    def host_memory_stats_as_nested_dict(self) -> dict:
        return {}

    def reset_peak_host_memory_stats(self) -> None:
        """Nothing to reset: ember keeps no pinned host memory."""

    def reset_accumulated_host_memory_stats(self) -> None:
        """Nothing to reset: ember keeps no pinned host memory."""

    # compilation targets: ember's kernels are compiled at run time for the device in use
    def get_arch_list(self) -> list:
        return list(getattr(self._backend, "arch_list", ()))

    def get_gencode_flags(self) -> str:
        return " ".join(f"-gencode compute={a},code={a}" for a in self.get_arch_list())

    def is_tf32_supported(self) -> bool:
        return bool(getattr(self._backend, "tf32_supported", False))

    def init(self) -> None:
        """Load the backend now (raising why it cannot run here)."""
        self._backend  # noqa: B018 - loading is the point

    # random numbers
    def manual_seed(self, seed) -> None:
        self._backend.default_generator(self.current_device()).manual_seed(seed)

    def manual_seed_all(self, seed) -> None:
        backend = self._backend
        for i in range(backend.device_count()):
            backend.default_generator(i).manual_seed(seed)

    def seed_all(self) -> None:
        """A fresh random seed, the same on every device (torch's ``seed_all``)."""
        self.manual_seed_all(random.getrandbits(63))

    def get_rng_state_all(self) -> list:
        return [self.get_rng_state(i) for i in range(self._backend.device_count())]

    def set_rng_state_all(self, new_states) -> None:
        for i, state in enumerate(new_states):
            self.set_rng_state(state, i)

    def seed(self) -> int:
        return self._backend.default_generator(self.current_device()).seed()

    def initial_seed(self) -> int:
        return self._backend.default_generator(self.current_device()).initial_seed()

    def get_rng_state(self, device=None):
        return self._backend.default_generator(self._index(device)).get_state()

    def set_rng_state(self, state, device=None) -> None:
        self._backend.default_generator(self._index(device)).set_state(state)

    def __repr__(self):
        return f"<ember device module '{self._name}'>"


class MissingDeviceModule(DeviceModule):
    """``ember.cuda`` (``xpu``, ``mps``…) when no installed backend provides that device type.

    Probing works as on a PyTorch build without the device (``device_absence.py``):
    ``is_available()`` is False (with ``unavailable_reason()``), ``device_count()`` is 0, the
    seeding functions do nothing (PyTorch seeds lazily, so scripts call them unconditionally),
    ``empty_cache()`` does nothing and the memory counters read 0. Everything that needs a
    device raises ``DeviceNotInstalled`` naming the package or extra that provides it.
    """

    def _missing(self):
        return device_types.not_installed(self._name)

    @property
    def _backend(self):
        e = self._missing()
        raise type(e)(f"{self._caller()}: {e}")

    def is_available(self) -> bool:
        """False: no installed backend provides this device type."""
        return False

    def unavailable_reason(self):
        return device_types.not_installed_reason(self._name)

    def __repr__(self):
        return f"<ember device module '{self._name}' (not installed)>"


_guard(DeviceModule)
_modules: dict = {}
_lock = threading.Lock()
_extensions: dict = {}   # attribute -> factory(device type) -> module; installed from above


def device_module(name: str) -> DeviceModule:
    """``ember.<name>``, made once (and registered in ``sys.modules``). A ``MissingDeviceModule``
    made before a backend registered ``name`` is replaced by the real one. A redirected type's
    module is its target's (``devices.redirect``)."""
    name = resolve_type(name)
    mod = _modules.get(name)
    if mod is None or mod.__class__ is MissingDeviceModule:
        with _lock:
            mod = _modules.get(name)
            if mod is None or mod.__class__ is MissingDeviceModule:
                mod = _install(DeviceModule(name))
    return mod


def missing_device_module(name: str) -> DeviceModule:
    """``ember.<name>`` for one of PyTorch's device-module names (``cuda``, ``xpu``, ``mps``…)
    that no installed backend provides; the real module once one does."""
    if registry.is_known(name) or resolve_type(name) != name:
        return device_module(name)
    mod = _modules.get(name)
    if mod is None:
        with _lock:
            mod = _modules.get(name)
            if mod is None:
                mod = _install(MissingDeviceModule(name))
    return mod


def _install(mod):
    _modules[mod._name] = mod
    sys.modules[f"ember.{mod._name}"] = mod
    for attr, factory in _extensions.items():
        _add_extension(mod, attr, factory)
    return mod


def _add_extension(mod, attr, factory):
    sub = factory(mod._name)
    setattr(mod, attr, sub)
    sys.modules[f"ember.{mod._name}.{attr}"] = sub


def _on_redirect(source: str, target: str) -> None:
    """``import ember.<source>`` (and ``ember.<source>.amp`` & co) gives the target's module
    while the redirect holds, the type's own again when it is undone (``target == source``)."""
    mod = device_module(target) if target != source else missing_device_module(source)
    sys.modules[f"ember.{source}"] = mod
    for attr in _extensions:
        sys.modules[f"ember.{source}.{attr}"] = getattr(mod, attr)
    parent = sys.modules.get("ember")
    if parent is not None and source in vars(parent):   # `import ember.cuda` set it
        setattr(parent, source, mod)


events.subscribe(events.DEVICE_REDIRECTED, _on_redirect)


def register_extension(attr: str, factory) -> None:
    """Give every device module (made now or later) ``ember.<device>.<attr> = factory(device)``,
    importable as ``ember.<device>.<attr>`` (PyTorch's ``torch.cuda.amp``). The layers above
    install these; the runtime does not import them."""
    with _lock:
        _extensions[attr] = factory
        for mod in list(_modules.values()):
            _add_extension(mod, attr, factory)
