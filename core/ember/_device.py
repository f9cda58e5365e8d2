"""``ember.device`` (defined in ``ember.runtime.devices``) and ``as_device``, which turns a
user's device argument into a concrete device."""
from __future__ import annotations

from .runtime.devices import concrete, device

__all__ = ["device", "as_device"]

#: ``ember.set_default_device``'s device (``ember._defaults`` sets it); None: the CPU
default_device = [None]
_cpu = []   # device("cpu"), made on first use (devices are interned: always the same object)


def as_device(value) -> "device":
    """Normalize a user's device argument to a concrete device (with index for non-cpu backends);
    None is the default device (``ember.set_default_device``)."""
    if value.__class__ is device:
        d = value
    elif value is None:
        d = default_device[0]
        if d is not None:
            return d
        if not _cpu:
            _cpu.append(device("cpu"))
        return _cpu[0]
    else:
        d = device(value)
    return concrete(d)
