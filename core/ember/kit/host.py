"""Host kernels for backends whose arrays live on a device (cupy): ``on_host(backend)`` is a
stand-in for ``be`` under which a kit kernel written against numpy/scipy (LAPACK through
scipy.linalg, numpy's samplers) reads its operands as host copies and uploads its results.

The device's own libraries lack what these kernels need (LAPACK's info per matrix for
PyTorch's errors, pivots, LDL, numpy's gamma/Poisson/binomial samplers), so a backend without
native kernels for them computes them where the CPU backend does, on the device's data and
with the device's generator (``numpy_generator``), rather than failing on a cupy array.
"""
from __future__ import annotations

import numpy as np

from .array_backend import ArrayBackend, ieee_caller


class on_host:  # noqa: N801 - used like a function: bind(on_host(backend), TABLE)
    """``backend`` seen by a numpy kernel: ``native`` downloads, ``wrap`` uploads."""

    def __init__(self, backend):
        self._backend = backend
        self.xp = np
        self.ieee = _numpy_ieee()

    @property
    def special(self):
        import scipy.special  # start-up: scipy.special (~350 ms)
        return scipy.special

    def native(self, t):
        return self._backend.to_numpy(t)

    def wrap(self, arr, device):
        return self._backend.from_numpy(np.asarray(arr, order="C"), device)  # (0-d stays 0-d)

    # the values are host copies: checks read them at once
    values_on_host = True

    device_assert = ArrayBackend.device_assert

    def __getattr__(self, name):  # kernels (the table), names of the backend
        return getattr(self._backend, name)


def _numpy_ieee():
    return ieee_caller(np)


def for_numpy_kernels(backend):
    """``backend`` itself when its arrays are numpy's, else its host stand-in."""
    return backend if backend.xp is np else on_host(backend)


def numpy_generator(gen):
    """A numpy ``Generator`` drawing from ``gen``'s stream: the generator itself on array-module
    backends; for a counter-based device generator (``take(n) -> (seed, first counter)``, the
    CUDA backend's Philox) a Philox keyed by the seed and the reserved counter, so each call
    draws an independent, reproducible stream and advances the device's state."""
    impl = getattr(gen, "impl", None)
    if impl is not None:
        return impl
    seed, start = gen.take(1)
    return np.random.Generator(np.random.Philox(key=(int(seed) << 64) | int(start)))
