"""The intra-op thread count (``ember.set_num_threads`` / ``get_num_threads``, PyTorch's names).

Kernels that can split work over threads (the CPU backend's FFTs through scipy.fft's
``workers``) read it at each call; the default is every CPU the process may run on.
"""
from __future__ import annotations

import os


def _default() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not every platform has affinity masks
        return os.cpu_count() or 1


_num_threads = _default()


def get_num_threads() -> int:
    """The number of threads ops may use to parallelize their work."""
    return _num_threads


def set_num_threads(num: int) -> None:
    """Set the number of threads ops may use (a positive integer)."""
    global _num_threads
    if isinstance(num, bool) or not isinstance(num, int) or num < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {num!r}")
    _num_threads = num
