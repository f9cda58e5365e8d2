"""Keep freed host memory for reuse, as a caching allocator would.

CPU kernels allocate their outputs through numpy, i.e. glibc's malloc. By default glibc gives
memory back to the system whenever the free space at the top of its heap passes a threshold
that it adapts at run time; whether a training step's large temporaries (a 784×256 weight
gradient is 800 KB) are then reused or faulted in afresh, page by page, every step depends on
where small Python objects happened to land in the heap. Measured on an MLP step: 214 page
faults and 2× the step time in one import layout, none in another. PyTorch avoids this with its
own caching allocators; here the same effect comes from fixing glibc's thresholds once: blocks
under 32 MiB come from the heap, and up to 256 MiB of free heap is kept.

Only on glibc, only when the user has not set ``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_``
themselves, and ``EMBER_CPU_KEEP_FREED_MEMORY=0`` turns it off.
"""
from __future__ import annotations

import ctypes
import os

MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers

_done = False


def keep_freed_memory() -> bool:
    """Apply the thresholds (once per process); True when they are in effect."""
    global _done
    if _done:
        return True
    if os.environ.get("EMBER_CPU_KEEP_FREED_MEMORY", "1") == "0":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # glibc only: other C libraries have other knobs
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    ok = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and \
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
    _done = ok
    return ok
