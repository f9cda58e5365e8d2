"""``ember.device`` (defined in ``ember.runtime.devices``) and ``as_device``, which turns a
user's device argument into a concrete device."""
from __future__ import annotations

from .runtime.devices import concrete, device

__all__ = ["device", "as_device"]


def as_device(value) -> "device":
    """Normalize a user's device argument to a concrete device (with index for non-cpu backends);
    None is the default device (``ember.set_default_device``)."""
    if value.__class__ is device:
        d = value
    elif value is None:
        from ._defaults import get_default_device  # cycle: ember._defaults
        return get_default_device()
    else:
        d = device(value)
    return concrete(d)
