"""The default device (``ember.set_default_device``)."""
from __future__ import annotations

from ._device import as_device, default_device


def get_default_device():
    return as_device(None)


def set_default_device(dev) -> None:
    default_device[0] = None if dev is None else as_device(dev)
