"""``ember.cuda.amp``, ``ember.cpu.amp``… (PyTorch's deprecated per-device forms):
``autocast(enabled=True, dtype=..., cache_enabled=True)``, ``GradScaler(...)``, ``custom_fwd``
and ``custom_bwd`` bound to the device type, each warning like PyTorch's (FutureWarning) and
then doing what ``ember.amp``'s does."""
from __future__ import annotations

import types
import warnings

from .autocast_mode import autocast as _autocast
from .autocast_mode import custom_bwd as _custom_bwd
from .autocast_mode import custom_fwd as _custom_fwd
from .grad_scaler import GradScaler as _GradScaler
from .._warn import user_stacklevel


def make(device_type: str) -> types.ModuleType:
    """The ``amp`` submodule of ``ember.<device_type>``."""
    mod = types.ModuleType(f"ember.{device_type}.amp",
                           f"Deprecated per-device autocast/GradScaler for '{device_type}': use "
                           f"ember.amp.autocast('{device_type}', ...) and "
                           f"ember.amp.GradScaler('{device_type}', ...).")

    class autocast(_autocast):
        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            warnings.warn(f"`ember.{device_type}.amp.autocast(args...)` is deprecated. Please "
                          f"use `ember.amp.autocast('{device_type}', args...)` instead.",
                          FutureWarning, stacklevel=user_stacklevel())
            super().__init__(device_type, dtype=dtype, enabled=enabled,
                             cache_enabled=cache_enabled)

    class GradScaler(_GradScaler):
        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                     growth_interval=2000, enabled=True):
            warnings.warn(f"`ember.{device_type}.amp.GradScaler(args...)` is deprecated. Please "
                          f"use `ember.amp.GradScaler('{device_type}', args...)` instead.",
                          FutureWarning, stacklevel=user_stacklevel())
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval,
                             enabled=enabled)

    def custom_fwd(fwd=None, *, cast_inputs=None):
        warnings.warn(f"`ember.{device_type}.amp.custom_fwd(args...)` is deprecated. Please use "
                      f"`ember.amp.custom_fwd(args..., device_type='{device_type}')` instead.",
                      FutureWarning, stacklevel=user_stacklevel())
        return _custom_fwd(fwd, device_type=device_type, cast_inputs=cast_inputs)

    def custom_bwd(bwd=None):
        warnings.warn(f"`ember.{device_type}.amp.custom_bwd(args...)` is deprecated. Please use "
                      f"`ember.amp.custom_bwd(args..., device_type='{device_type}')` instead.",
                      FutureWarning, stacklevel=user_stacklevel())
        return _custom_bwd(bwd, device_type=device_type)

    for obj in (autocast, GradScaler):
        obj.__module__ = mod.__name__
        obj.__qualname__ = obj.__name__
    mod.autocast, mod.GradScaler = autocast, GradScaler
    mod.custom_fwd, mod.custom_bwd = custom_fwd, custom_bwd
    return mod
