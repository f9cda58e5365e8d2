"""Device memory: one arena per device, carved first-fit, under the core's caching allocator.

The arena is a single numpy ``uint8`` buffer that stands in for the device's DRAM. Nothing else
ever points into it: uploads and downloads copy, so a program that forgets a ``.to()`` fails
instead of silently sharing host memory. ``np.empty`` of the whole capacity only reserves
address space; pages are committed by the OS when a kernel first writes them, so a 1 GiB arena
costs nothing until it is used.

``Arena`` is the "driver": ``alloc(nbytes) -> Chunk`` and ``free(chunk)``. The core's
``CachingAllocator`` sits on top and gives us, for free, size-class caching, PyTorch's
statistics, ``empty_cache`` and the retry-then-``OutOfMemoryError`` path.
"""
from __future__ import annotations

import bisect
import os
import threading

import numpy as np

from ember.runtime import CachingAllocator

DEFAULT_CAPACITY = 1 << 30
_ALIGN = 512  # every chunk starts on a 512-byte boundary, like a real device's allocation unit
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10, "M": 1 << 20, "MB": 1 << 20,
          "MIB": 1 << 20, "G": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30}


def parse_size(text: str) -> int:
    """``"1G"``, ``"256MiB"``, ``"1048576"`` -> bytes (``EMBER_OPENREG_MEMORY``)."""
    s = text.strip().upper().replace(" ", "")
    digits = s.rstrip("BKMGI")
    unit = s[len(digits):]
    try:
        value = float(digits)
    except ValueError:
        value = -1.0
    if unit not in _UNITS or value <= 0:
        raise ValueError(f"EMBER_OPENREG_MEMORY={text!r}: expected a positive size such as "
                         f"'1G', '256M' or a number of bytes")
    return int(value * _UNITS[unit])


def capacity_from_env() -> int:
    text = os.environ.get("EMBER_OPENREG_MEMORY", "").strip()
    return parse_size(text) if text else DEFAULT_CAPACITY


class Chunk:
    """An allocated piece of the arena: ``mem`` is its bytes (a view of the arena)."""

    __slots__ = ("offset", "size", "mem")

    def __init__(self, offset, size, mem):
        self.offset, self.size, self.mem = offset, size, mem

    def __repr__(self):
        return f"<Chunk [{self.offset}, {self.offset + self.size})>"


class Arena:
    """First-fit allocation over one buffer; freed neighbours coalesce, so the free list stays
    short and a freed region can serve any later request that fits."""

    def __init__(self, capacity: int, name: str):
        self.capacity = capacity
        self.name = name
        self._buf = None              # made on first use: importing the plugin allocates nothing
        self._starts = [0]            # free segments, sorted by offset ...
        self._sizes = [capacity]      # ... and their sizes
        self._lock = threading.Lock()

    @property
    def buffer(self):
        if self._buf is None:
            self._buf = np.empty(self.capacity, dtype=np.uint8)
        return self._buf

    def alloc(self, nbytes: int) -> Chunk:
        size = max(_ALIGN, (nbytes + _ALIGN - 1) // _ALIGN * _ALIGN)
        with self._lock:
            for i, free in enumerate(self._sizes):
                if free >= size:
                    offset = self._starts[i]
                    if free == size:
                        del self._starts[i], self._sizes[i]
                    else:
                        self._starts[i] += size
                        self._sizes[i] -= size
                    break
            else:
                # MemoryError is what CachingAllocator treats as "device full": it empties its
                # cache, retries once, then raises OutOfMemoryError with the statistics
                raise MemoryError(f"{self.name}: no free range of {size} bytes in the arena")
        return Chunk(offset, size, self.buffer[offset:offset + size])

    def free(self, chunk: Chunk) -> None:
        with self._lock:
            start, size = chunk.offset, chunk.size
            i = bisect.bisect_left(self._starts, start)
            if i < len(self._starts) and self._starts[i] < start + size or \
                    i and self._starts[i - 1] + self._sizes[i - 1] > start:
                raise RuntimeError(f"{self.name}: double free of {chunk!r}")
            if i < len(self._starts) and self._starts[i] == start + size:  # merge with next
                size += self._sizes[i]
                del self._starts[i], self._sizes[i]
            if i and self._starts[i - 1] + self._sizes[i - 1] == start:   # merge with previous
                self._sizes[i - 1] += size
            else:
                self._starts.insert(i, start)
                self._sizes.insert(i, size)

    def free_bytes(self) -> int:
        return sum(self._sizes)

    def largest_free(self) -> int:
        return max(self._sizes, default=0)


def make_allocator(name: str, capacity: int | None = None) -> CachingAllocator:
    """The caching allocator of one device, over a fresh arena (``.arena`` is kept for tests)."""
    arena = Arena(capacity_from_env() if capacity is None else capacity, name)
    allocator = CachingAllocator(arena.alloc, arena.free, name, oom_errors=(MemoryError,),
                                 limit_bytes=arena.capacity)
    allocator.arena = arena
    return allocator
