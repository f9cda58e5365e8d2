"""Autocast's per-thread state: which device types autocast, to what dtype, and the weight cache.

While any device type has autocast enabled on a thread, the ``AUTOCAST`` dispatch key is in that
thread's include mask, so every op goes through the autocast handler (``amp/dispatch.py``);
otherwise ops never see it and autocast costs nothing.
"""
from __future__ import annotations

import threading

from .. import _dtype
from ..dispatch import keys as K
from ..runtime.registry import registry

# PyTorch's defaults: bfloat16 on the CPU, float16 on GPU-like devices
_DEFAULT_DTYPES = {"cpu": _dtype.bfloat16, "xpu": _dtype.bfloat16, "hpu": _dtype.bfloat16}


class _State(threading.local):
    def __init__(self):
        self.enabled = {}        # device type -> bool
        self.dtypes = {}         # device type -> dtype (set by autocast / set_autocast_dtype)
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}          # id(leaf weight) -> (weight, its low-precision copy)


state = _State()


def _sync_key() -> None:
    """AUTOCAST in the thread's include mask iff some device type autocasts."""
    include, keep = K.state.masks
    if any(state.enabled.values()):
        include |= K.AUTOCAST
    else:
        include &= ~K.AUTOCAST
    K.state.masks = (include, keep)


def default_dtype(device_type: str):
    """PyTorch's default for the type; for other installed backends float16 when they store
    it, else bfloat16 when they do (OpenCL devices without ``cl_khr_fp16``)."""
    if device_type in _DEFAULT_DTYPES:
        return _DEFAULT_DTYPES[device_type]
    backend = registry.loaded(device_type)
    if backend is not None and _dtype.float16 not in backend.dtypes and \
            _dtype.bfloat16 in backend.dtypes:
        return _dtype.bfloat16
    return _dtype.float16


def is_enabled(device_type: str) -> bool:
    return state.enabled.get(device_type, False)


def set_enabled(device_type: str, enabled: bool) -> None:
    state.enabled[device_type] = bool(enabled)
    _sync_key()


def get_dtype(device_type: str):
    return state.dtypes.get(device_type) or default_dtype(device_type)


def set_dtype(device_type: str, dtype) -> None:
    state.dtypes[device_type] = dtype


def target_dtype(device_type: str):
    """The autocast dtype for tensors of ``device_type``, or None when it does not autocast."""
    if not state.enabled.get(device_type, False):
        return None
    return state.dtypes.get(device_type) or default_dtype(device_type)


def clear_cache() -> None:
    state.cache.clear()
