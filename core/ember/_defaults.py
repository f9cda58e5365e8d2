"""The default device (``ember.set_default_device``)."""
from __future__ import annotations

from ._device import as_device, device

_default = [None]


def get_default_device():
    d = _default[0]
    return d if d is not None else device("cpu")


def set_default_device(dev) -> None:
    _default[0] = None if dev is None else as_device(dev)
