"""``ember.Stream`` and ``ember.Event``: torch's device-generic stream and event.

Each call makes the stream or event of the device's own backend (``Backend.Stream`` /
``Backend.Event``, see ``ember.runtime.streams``), so ``ember.Stream("opencl")`` is an OpenCL
queue and ``ember.Event()`` an event of the current accelerator (the CPU when there is none).
Every backend's streams and events are instances of these names, as torch's device streams
subclass ``torch.Stream``.
"""
from __future__ import annotations

from . import accelerator
from ._device import as_device
from .runtime.registry import registry
from .runtime.streams import EventBase, StreamBase

__all__ = ["Event", "Stream"]


def _backend_and_index(device):
    if device is None:
        device = accelerator.current_accelerator() or "cpu"
    dev = as_device(device)
    backend = registry.get(dev.type)
    return backend, dev.index if dev.index is not None else backend.current_device()


class _StreamMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, StreamBase)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, StreamBase)


class _EventMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, EventBase)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, EventBase)


class Stream(metaclass=_StreamMeta):
    """``Stream(device=None, *, priority=0)``: a new in-order queue on ``device`` (default: the
    current accelerator, else the CPU), made by that device's backend."""

    def __new__(cls, device=None, *, priority=0):
        backend, index = _backend_and_index(device)
        return backend.Stream(backend, index, priority)


class Event(metaclass=_EventMeta):
    """``Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)``: an
    event of ``device``'s backend (default: the current accelerator, else the CPU)."""

    def __new__(cls, device=None, *, enable_timing=False, blocking=False, interprocess=False):
        backend, _ = _backend_and_index(device)
        return backend.Event(enable_timing=enable_timing, blocking=blocking,
                             interprocess=interprocess)
