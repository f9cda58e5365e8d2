"""The reusable kit for backend authors.

* ``ArrayBackend`` — a Backend over any numpy-like array module (numpy, cupy, …).
* ``register_array_kernels(backend)`` — every op of the core's op set, written once against
  ``backend.xp``; the CPU and CUDA backends are this plus their memory and streams.
* ``CachingAllocator`` (``ember.runtime.allocator``) — block caching with PyTorch's statistics.
"""
import warnings

from .array_backend import ArrayBackend

# Kernels compute IEEE results (log(0) = -inf, 0/0 = nan) as PyTorch does, silently. Filtering
# numpy's RuntimeWarnings for the kit's own frames costs nothing per call, unlike np.errstate.
warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"ember\.kit\.")


def register_array_kernels(backend) -> None:
    """Fill ``backend.kernels`` with the array-module implementation of every core op."""
    import importlib
    for name in _KERNEL_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(backend)


# one module per op family; each exposes register(backend)
_KERNEL_MODULES = ["copy", "elementwise", "factories", "reduction", "linalg", "shape", "indexing",
                   "sorting", "random"]

__all__ = ["ArrayBackend", "register_array_kernels"]
