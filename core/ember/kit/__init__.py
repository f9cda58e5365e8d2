"""The reusable kit for backend authors.

* ``ArrayBackend`` — a Backend over any numpy-like array module (numpy, cupy, …).
* ``register_array_kernels(backend)`` — every op of the core's op set, written once against
  ``backend.xp``; the CPU and CUDA backends are this plus their memory and streams.
* ``CachingAllocator`` (``ember.runtime.allocator``) — block caching with PyTorch's statistics.
"""
from .array_backend import ArrayBackend


def register_array_kernels(backend) -> None:
    """Fill ``backend.kernels`` with the array-module implementation of every core op."""
    import importlib
    for name in _KERNEL_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(backend)


# one module per op family; each exposes register(backend)
_KERNEL_MODULES = ["copy", "elementwise", "factories", "reduction", "linalg", "shape", "indexing",
                   "sorting", "random", "rnn"]

__all__ = ["ArrayBackend", "register_array_kernels"]
