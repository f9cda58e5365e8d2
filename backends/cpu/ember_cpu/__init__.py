"""ember's CPU backend: the numpy reference every other backend is checked against.

It is an ordinary plug-in: registered through the ``ember.backends`` entry point like any
third-party package, built from the core's array-module kit with ``xp = numpy``.
"""
from __future__ import annotations

import importlib

import numpy as np

from ember.kit import ArrayBackend, register_array_kernels
from ember.runtime import hookimpl

from .host_memory import keep_freed_memory


class _LazyModule:
    """scipy.special or scipy.fft, imported on first use (it costs ~0.1 s; most programs
    never need it)."""

    def __init__(self, name):
        self._name = name
        self._mod = None

    def __getattr__(self, attr):
        if self._mod is None:
            self._mod = importlib.import_module(self._name)
        return getattr(self._mod, attr)


class CPUBackend(ArrayBackend):
    name = "cpu"
    xp = np
    special = _LazyModule("scipy.special")
    fft_module = _LazyModule("scipy.fft")  # pocketfft, multi-threaded through ``workers``

    def __init__(self):
        super().__init__()
        keep_freed_memory()
        register_array_kernels(self)
        from .memory import tune_malloc
        tune_malloc()  # freed temporaries stay in the heap: no page faults per op (memory.py)

    def device_count(self) -> int:
        return 1

    def compile_pointwise(self, kernel):
        from .fusion import compile_pointwise
        return compile_pointwise(self, kernel)

    def compile_foreach(self, kernel):
        from .fusion import compile_foreach
        return compile_foreach(self, kernel)

    def compile_norm(self, name, dtype):
        from .norms import compile_norm
        return compile_norm(self, name, dtype)

    def device_name(self, index: int) -> str:
        import platform
        return platform.processor() or platform.machine() or "cpu"


@hookimpl
def ember_register_backends(registry):
    registry.add(CPUBackend())
