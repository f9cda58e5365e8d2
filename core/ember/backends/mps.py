"""``ember.backends.mps``: Apple's Metal (MPS) device. No ember package provides it, so
``is_available()`` and ``is_built()`` are False, as on PyTorch builds without MPS."""
from __future__ import annotations

from ..runtime.registry import registry as _registry


def is_built() -> bool:
    """True when a backend registers the ``mps`` device type."""
    return _registry.is_known("mps")


def is_available() -> bool:
    """True when an ``mps`` backend is installed and has a device."""
    return is_built() and _registry.unavailable_reason("mps") is None
