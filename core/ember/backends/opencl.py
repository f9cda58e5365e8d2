"""``ember.backends.opencl``: the OpenCL backend (ember's own; PyTorch has no such entry).

Determinism: index_add/index_put(accumulate=True)/scatter accumulate without atomics (the
dims where writes collide are walked by one work-item in index order), reductions use fixed
work-group trees and sorting is a stable bitonic sort, so every OpenCL kernel gives the same
bits run after run on the same device; ``ember.use_deterministic_algorithms(True)`` never has
to refuse one. float16 exists where the device has ``cl_khr_fp16``. bfloat16 is emulated
storage on every device: 16 bits per value, converted on the device (round to nearest even) to
float32 for every kernel and back for results, so its values are float32's rounded once per op,
like PyTorch's CPU bfloat16 kernels; ``ember.autocast("opencl")`` uses it when float16 is
missing.

``fft_plan_cache`` mirrors ``torch.backends.cuda.cufft_plan_cache``: ``fft_plan_cache.size``
(plans cached), ``fft_plan_cache.max_size`` (settable; 0 turns caching off) and
``fft_plan_cache.clear()`` act on the current OpenCL device; ``fft_plan_cache[i]`` is device
``i``'s cache. A plan (factorization, twiddle tables, Bluestein chirps, on the device) is kept
per (length, dtype, direction, layout), so repeated transforms of one shape do not re-plan.
"""
from __future__ import annotations

from ..runtime.registry import registry as _registry


def is_built() -> bool:
    """True when the OpenCL backend is installed (the ``opencl`` extra)."""
    return _registry.is_known("opencl")


def is_available() -> bool:
    """True when the OpenCL backend loads and found a device whose compiler works."""
    return is_built() and _registry.unavailable_reason("opencl") is None


def supported_dtypes() -> frozenset:
    """The dtypes every OpenCL device in use stores and computes in (empty when unavailable)."""
    return frozenset(_registry.get("opencl").dtypes) if is_available() else frozenset()


def _backend():
    backend = _registry.get("opencl")
    if not backend.is_available():
        raise RuntimeError(f"ember.backends.opencl: the OpenCL backend is not available: "
                           f"{backend.unavailable_reason()}")
    return backend


class FFTPlanCacheManager:
    """Per-device FFT plan caches; attribute access goes to the current device's."""

    def __getitem__(self, index):
        return _backend().fft_plan_cache(int(index))

    def _current(self):
        return _backend().fft_plan_cache(None)

    @property
    def size(self) -> int:
        return self._current().size

    @property
    def max_size(self) -> int:
        return self._current().max_size

    @max_size.setter
    def max_size(self, value):
        self._current().max_size = value

    def clear(self) -> None:
        self._current().clear()

    def __repr__(self):
        return "<ember.backends.opencl.fft_plan_cache>"


fft_plan_cache = FFTPlanCacheManager()

__all__ = ["fft_plan_cache", "is_available", "is_built", "supported_dtypes"]
