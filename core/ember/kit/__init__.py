"""The reusable kit for backend authors whose memory is a numpy-like array module.

* ``ArrayBackend`` — a Backend over any numpy-like array module ``xp`` (numpy, cupy, …).
* ``register_array_kernels(backend)`` — every op of the core's op set, written once against
  ``backend.xp``; the CPU backend is exactly this.
* one module per op family (``copy``, ``elementwise``, ``factories``, ``reduction``,
  ``linalg``, ``shape``, ``indexing``, ``sorting``, ``random``, ``special``, ``sampling``,
  ``attention``, ``rnn``, ``fft``, ``convolution``, ``pooling``, ``normalization``, ``foreach``,
  ``loss``, ``activation``, ``activation_backward``): module-level kernels taking the backend first, a ``TABLE``
  of them, and ``register(backend)`` binding them (``binding``).
"""
from . import (activation, activation_backward, attention, convolution, copy, elementwise,
               factories, fft, foreach, indexing, linalg, loss, normalization, pooling, random,
               reduction, rnn, sampling, shape, sorting, special)
from . import ctc, distances, embedding_bag, grid_sampling, resampling, spatial, ternary
from .array_backend import ArrayBackend

# one module per op family; each exposes register(backend)
KERNEL_MODULES = (copy, elementwise, activation, factories, reduction, linalg, shape, indexing,
                  sorting, random, special, sampling, attention, rnn, fft, activation_backward,
                  convolution, pooling, normalization, foreach, loss, ternary, spatial, resampling,
                  grid_sampling, embedding_bag, distances, ctc)


def register_array_kernels(backend) -> None:
    """Fill ``backend.kernels`` with the array-module implementation of every core op."""
    for module in KERNEL_MODULES:
        module.register(backend)


__all__ = ["ArrayBackend", "register_array_kernels", "KERNEL_MODULES"]
