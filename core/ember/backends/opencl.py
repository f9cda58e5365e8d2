"""``ember.backends.opencl``: the OpenCL backend's FFT plan cache.

``fft_plan_cache`` mirrors ``torch.backends.cuda.cufft_plan_cache``: ``fft_plan_cache.size``
(plans cached), ``fft_plan_cache.max_size`` (settable; 0 turns caching off) and
``fft_plan_cache.clear()`` act on the current OpenCL device; ``fft_plan_cache[i]`` is device
``i``'s cache. A plan (factorization, twiddle tables, Bluestein chirps, on the device) is kept
per (length, dtype, direction, layout), so repeated transforms of one shape do not re-plan.
"""
from __future__ import annotations


def _backend():
    from ..runtime.registry import registry
    backend = registry.get("opencl")
    if not backend.is_available():
        raise RuntimeError(f"ember.backends.opencl: the OpenCL backend is not available: "
                           f"{backend.unavailable_reason()}")
    return backend


def is_available() -> bool:
    """Whether the OpenCL backend has a usable device."""
    from ..runtime.registry import registry
    try:
        return registry.get("opencl").is_available()
    except Exception:
        return False


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

__all__ = ["fft_plan_cache", "is_available"]
