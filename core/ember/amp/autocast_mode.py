"""``ember.autocast`` / ``ember.amp.autocast`` and the functions that read and set its state.

``autocast(device_type, dtype=None, enabled=True, cache_enabled=None)`` is a context manager and
a decorator. Inside it, ops on tensors of ``device_type`` run in the dtypes PyTorch's autocast
lists give them (``amp/policy.py``); regions nest and ``enabled=False`` opens a region without
it. The state is per thread. ``dtype`` defaults to bfloat16 on the CPU and float16 elsewhere.
A device type whose backend is not installed or not available, or that cannot store ``dtype``,
warns and leaves autocast off (PyTorch's behaviour for CUDA without a GPU and for unsupported
dtypes). bfloat16 on the CPU is ml_dtypes' storage computed through float32, as PyTorch's CPU
kernels do; the OpenCL backend stores neither float16 (unless the device has ``cl_khr_fp16``)
nor bfloat16, so autocast on OpenCL is off there with the warning.
"""
from __future__ import annotations

import functools
import warnings

from .. import _dtype
from ..runtime import device_types
from ..runtime.devices import resolve_type
from ..runtime.registry import registry
from . import state as S
from .._tensor import Tensor
from .._warn import user_stacklevel

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]

_LOW = (_dtype.float16, _dtype.bfloat16)


def is_autocast_available(device_type: str) -> bool:
    """True for device types autocast knows: installed backends and PyTorch's device types."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    return registry.is_known(device_type) or device_types.is_torch_device_type(device_type)


def _unsupported_reason(device_type: str, dtype):
    """Why autocast can't run on ``device_type`` in ``dtype`` (None when it can)."""
    if not registry.is_known(device_type):
        return device_types.not_installed_reason(device_type)
    reason = registry.unavailable_reason(device_type)
    if reason is not None:
        return reason
    supported = [d for d in _LOW if d in registry.get(device_type).dtypes]
    if dtype not in supported:
        name = device_type.upper()
        listed = ", ".join(f"ember.{d.name}" for d in supported) or "none"
        return (f"In {name} autocast, but the target dtype is not supported. Disabling "
                f"autocast.\n{name} Autocast only supports dtypes of {listed} currently.")
    return None


class autocast:
    """Mixed precision for a region: see the module docstring."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        device_type = resolve_type(device_type)   # autocast("cuda") under a cuda=opencl redirect
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        if dtype is not None and not isinstance(dtype, _dtype.dtype):
            raise TypeError(f"autocast: dtype must be an ember.dtype, got "
                            f"{type(dtype).__name__}")
        self.device = device_type
        self.fast_dtype = S.get_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = S.state.cache_enabled if cache_enabled is None else cache_enabled
        if enabled:
            reason = None
            if self.fast_dtype not in _LOW:
                name = device_type.upper()
                reason = (f"In {name} autocast, but the target dtype is not supported. "
                          f"Disabling autocast.\n{name} Autocast only supports dtypes of "
                          f"ember.bfloat16, ember.float16 currently.")
            else:
                reason = _unsupported_reason(device_type, self.fast_dtype)
                if reason is not None and not reason.startswith("In "):
                    reason = (f"ember.autocast: device type '{device_type}' is not available "
                              f"({reason}). Disabling autocast.")
            if reason is not None:
                warnings.warn(reason, UserWarning, stacklevel=user_stacklevel())
                enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        self.prev_cache_enabled = S.state.cache_enabled
        self.prev = S.is_enabled(self.device)
        self.prev_fastdtype = S.get_dtype(self.device)
        S.set_enabled(self.device, self._enabled)
        S.set_dtype(self.device, self.fast_dtype)
        S.state.nesting += 1
        S.state.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        S.state.nesting -= 1
        if S.state.nesting == 0:
            S.clear_cache()
        S.set_enabled(self.device, self.prev)
        S.set_dtype(self.device, self.prev_fastdtype)
        S.state.cache_enabled = self.prev_cache_enabled
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got "
                            f"{type(func).__name__}. Did you mean to use autocast as a context "
                            f"manager? For example:\n    with ember.autocast(device_type=...):\n"
                            f"        output = model(input)")

        @functools.wraps(func)
        def decorated(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)
        return decorated

    def __repr__(self):
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled}, cache_enabled={self._cache_enabled})")


# -- the state functions ember (like torch) exposes at the top level ----------------------------
def is_autocast_enabled(device_type=None) -> bool:
    """Is autocast on for ``device_type`` in this thread (no argument: "cuda", as PyTorch)?"""
    return S.is_enabled(resolve_type("cuda" if device_type is None else device_type))


def set_autocast_enabled(device_type, enabled=None) -> None:
    """``set_autocast_enabled(device_type, enabled)`` (or PyTorch's old one-argument form for
    CUDA)."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    S.set_enabled(resolve_type(device_type), enabled)


def get_autocast_dtype(device_type: str):
    """The dtype autocast uses for ``device_type`` (its default until one is set)."""
    return S.get_dtype(resolve_type(device_type))


def set_autocast_dtype(device_type: str, dtype) -> None:
    S.set_dtype(resolve_type(device_type), dtype)


def get_autocast_cpu_dtype():
    warnings.warn("ember.get_autocast_cpu_dtype() is deprecated. Please use "
                  "ember.get_autocast_dtype('cpu') instead.", DeprecationWarning,
                  stacklevel=user_stacklevel())
    return S.get_dtype("cpu")


def get_autocast_gpu_dtype():
    warnings.warn("ember.get_autocast_gpu_dtype() is deprecated. Please use "
                  "ember.get_autocast_dtype('cuda') instead.", DeprecationWarning,
                  stacklevel=user_stacklevel())
    return S.get_dtype("cuda")


def is_autocast_cpu_enabled() -> bool:
    warnings.warn("ember.is_autocast_cpu_enabled() is deprecated. Please use "
                  "ember.is_autocast_enabled('cpu') instead.", DeprecationWarning,
                  stacklevel=user_stacklevel())
    return S.is_enabled("cpu")


def set_autocast_cpu_enabled(enabled) -> None:
    """Deprecated torch spelling of ``set_autocast_enabled("cpu", enabled)``."""
    warnings.warn("ember.set_autocast_cpu_enabled(enabled) is deprecated. Please use "
                  "ember.set_autocast_enabled('cpu', enabled) instead.", DeprecationWarning,
                  stacklevel=user_stacklevel())
    S.set_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype) -> None:
    warnings.warn("ember.set_autocast_cpu_dtype(dtype) is deprecated. Please use "
                  "ember.set_autocast_dtype('cpu', dtype) instead.", DeprecationWarning,
                  stacklevel=user_stacklevel())
    S.set_dtype("cpu", dtype)


def set_autocast_gpu_dtype(dtype) -> None:
    warnings.warn("ember.set_autocast_gpu_dtype(dtype) is deprecated. Please use "
                  "ember.set_autocast_dtype('cuda', dtype) instead.", DeprecationWarning,
                  stacklevel=user_stacklevel())
    S.set_dtype("cuda", dtype)


def is_autocast_cache_enabled() -> bool:
    return S.state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    S.state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    S.clear_cache()


def autocast_increment_nesting() -> int:
    S.state.nesting += 1
    return S.state.nesting


def autocast_decrement_nesting() -> int:
    S.state.nesting -= 1
    return S.state.nesting


# -- custom autograd Functions ------------------------------------------------------------------
def _cast_inputs(value, dtype, device_type):
    if isinstance(value, Tensor):
        ok = value.is_floating_point() and value.device.type == device_type and \
            value.dtype is not _dtype.float64
        return value.to(dtype) if ok else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_inputs(v, dtype, device_type) for v in value)
    if isinstance(value, dict):
        return {k: _cast_inputs(v, dtype, device_type) for k, v in value.items()}
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for a custom Function's ``forward``: remembers the autocast state for
    ``backward`` (``custom_bwd``); with ``cast_inputs``, runs the forward with autocast off on
    inputs cast to that dtype (when autocast is on)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast_inputs(args, cast_inputs, device_type),
                           **_cast_inputs(kwargs, cast_inputs, device_type))
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for a custom Function's ``backward``: runs it with the autocast state its
    forward had."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast,
                      dtype=args[0]._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
