"""``ember.accelerator``: the current accelerator, as ``torch.accelerator`` presents it.

PyTorch's accelerator is the one device type it was built with besides the CPU. ember's devices
are plug-ins, so the accelerator is chosen among the installed backends other than ``cpu`` and
``meta``: the first one (registry order: the built-in backends, then plug-ins by name;
``EMBER_BACKENDS`` sets it) that is available, else the first one installed (then
``is_available()`` is False, as on a CUDA build without a GPU), else none. A device redirect
(``ember run --device cuda=opencl``) makes its target the accelerator. Every function
delegates to that backend's device module (``ember.<type>``).
"""
from __future__ import annotations

import warnings
import ember

from ._device import device as _device_cls
from .runtime.device_module import device_module as _device_module
from .runtime.devices import redirected_accelerator as _redirected_accelerator
from .runtime.registry import registry as _registry
from ._warn import user_stacklevel

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "current_stream",
           "device_count", "device_index", "empty_cache", "is_available", "max_memory_allocated",
           "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats",
           "reset_peak_memory_stats", "set_device_idx", "set_device_index", "set_stream",
           "synchronize"]

_NOT_ACCELERATORS = ("cpu", "meta")


def _candidates():
    return [n for n in _registry.names() if n not in _NOT_ACCELERATORS]


def _accelerator_name(check_available: bool):
    redirected = _redirected_accelerator()    # `ember run --device cuda=opencl`: OpenCL
    if redirected is not None:
        return redirected
    names = _candidates()
    for name in names:
        if _registry.unavailable_reason(name) is None:
            return name
    if check_available or not names:
        return None
    return names[0]


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as an ``ember.device`` (no index), or None when no
    accelerator backend is installed (or, with ``check_available=True``, none is available)."""
    name = _accelerator_name(check_available)
    return None if name is None else _device_cls(name)


def is_available() -> bool:
    """True when an accelerator backend is installed and has a usable device."""
    name = _accelerator_name(check_available=True)
    return name is not None


def device_count() -> int:
    """How many devices the current accelerator has (0 when there is none)."""
    acc = current_accelerator()
    return 0 if acc is None else _device_module(acc.type).device_count()


def _module():
    """The current accelerator's device module; PyTorch's error when none is available."""
    name = _accelerator_name(check_available=True)
    if name is None:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    return _device_module(name)


def _device_index(device, optional: bool) -> int:
    """PyTorch's ``_get_device_index``: an int, or a device of the accelerator's type."""
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str):
        device = _device_cls(device)
    index = None
    if isinstance(device, _device_cls):
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError("Accelerator expected")
        if acc.type != device.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator {acc}.")
        index = device.index
    elif device is not None:
        raise TypeError(f"ember.accelerator: expected a device, a device string or an int, got "
                        f"{type(device).__name__}")
    if index is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, "
                             f"but got:{device}")
        return current_device_index()
    return index


def current_device_index() -> int:
    """The index of the accelerator's current device."""
    return _module().current_device()


def set_device_index(device, /) -> None:
    """Make ``device`` (an index, or a device of the accelerator's type with an index) current.
    A negative index does nothing, as in PyTorch."""
    index = _device_index(device, optional=False)
    if index < 0:
        return
    _module().set_device(index)


def current_device_idx() -> int:
    warnings.warn("Use `current_device_index` instead.", FutureWarning,
                  stacklevel=user_stacklevel())
    return current_device_index()


def set_device_idx(device, /) -> None:
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=user_stacklevel())
    set_device_index(device)


class device_index:
    """Context manager: ``device`` (an index, or None for no change) is the accelerator's
    current device inside the block; the previous one is restored on exit."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info):
        if self.idx is not None and self.prev_idx >= 0:
            set_device_index(self.prev_idx)


def synchronize(device=None, /) -> None:
    """Wait for all work queued on the device (default: the current one) to finish."""
    mod = _module()
    mod.synchronize(_device_index(device, optional=True))


def current_stream(device=None, /):
    """The current stream of the device (default: the current one)."""
    return _module().current_stream(_device_index(device, optional=True))


def set_stream(stream) -> None:
    """Make ``stream`` current (and its device the current device)."""
    mod = _module()
    index = getattr(stream, "device_index", None)
    if index is None and getattr(stream, "device", None) is not None:
        index = stream.device.index
    if index is not None:
        mod.set_device(index)
    mod.set_stream(stream)


def empty_cache() -> None:
    """Release the accelerator's cached, unused memory (nothing when there is none)."""
    if is_available():
        _module().empty_cache()


def memory_stats(device_index=None, /) -> dict:
    """The allocator's statistics (PyTorch's keys); empty when no accelerator is available."""
    if not is_available():
        return {}
    return _module().memory_stats(_device_index(device_index, optional=True))


def memory_allocated(device_index=None, /) -> int:
    return memory_stats(device_index).get("allocated_bytes.all.current", 0)


def max_memory_allocated(device_index=None, /) -> int:
    return memory_stats(device_index).get("allocated_bytes.all.peak", 0)


def memory_reserved(device_index=None, /) -> int:
    return memory_stats(device_index).get("reserved_bytes.all.current", 0)


def max_memory_reserved(device_index=None, /) -> int:
    return memory_stats(device_index).get("reserved_bytes.all.peak", 0)


def reset_peak_memory_stats(device_index=None, /) -> None:
    if is_available():
        _module().reset_peak_memory_stats(_device_index(device_index, optional=True))


def get_device_module(device=None):
    """``ember.<type>`` for a device, device string or type name; None means the current
    accelerator's (the CPU's when there is none), as ``torch.get_device_module``."""
    if isinstance(device, _device_cls):
        name = device.type
    elif isinstance(device, str):
        name = _device_cls(device).type
    elif device is None:
        acc = current_accelerator()
        name = "cpu" if acc is None else acc.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or "
                           f"None")
    try:
        return getattr(ember, name)
    except AttributeError:
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as "
                           f"'ember.{name}'.") from None
