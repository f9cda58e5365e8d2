"""A reusable caching allocator with PyTorch's statistics, for backend authors.

A backend gives it two functions: ``raw_alloc(nbytes) -> handle`` (raising MemoryError, or any
exception the backend's driver raises for out-of-memory, when the device is full) and
``raw_free(handle)``. Freed blocks stay cached by rounded size and are reused; ``empty_cache``
returns them to the device. When ``raw_alloc`` fails, the cache is emptied and the allocation
retried once before ``OutOfMemoryError`` names the device and the sizes.

``allocate`` returns a ``Block``; when the last reference to it dies (the Storage holding it is
collected) the block goes back to the cache, so tensor lifetime drives reuse.
"""
from __future__ import annotations

import threading

_MIN_BLOCK = 512          # bytes: the rounding unit, like PyTorch's kMinBlockSize
_LARGE = 1 << 20          # above 1 MiB, round to 2 MiB multiples to limit fragmentation


class OutOfMemoryError(RuntimeError):
    """Raised when a device allocation fails even after the cache was emptied."""


class Block:
    """A live allocation: ``handle`` (what ``raw_alloc`` returned), its rounded ``size`` and the
    ``requested`` bytes. Keep it alive as long as the memory is in use (e.g. in
    ``Storage.cache``); when it is collected the handle goes back to the allocator's cache."""

    __slots__ = ("handle", "size", "requested", "_allocator", "__weakref__")

    def __init__(self, handle, size, requested, allocator):
        self.handle = handle
        self.size = size
        self.requested = requested
        self._allocator = allocator

    def __del__(self):
        allocator = self._allocator
        if allocator is not None:
            self._allocator = None
            allocator._release(self.handle, self.size, self.requested)


def round_size(nbytes: int) -> int:
    """The size class of a request: 512-byte multiples below 1 MiB, 2 MiB multiples above."""
    if nbytes <= 0:
        return _MIN_BLOCK
    if nbytes < _LARGE:
        return (nbytes + _MIN_BLOCK - 1) // _MIN_BLOCK * _MIN_BLOCK
    step = 2 * _LARGE
    return (nbytes + step - 1) // step * step


class CachingAllocator:
    """Size-class caching over a device's ``raw_alloc(nbytes) -> handle`` / ``raw_free(handle)``,
    with PyTorch's statistics (``memory_allocated``, ``max_memory_allocated``,
    ``memory_reserved``, ``max_memory_reserved``, ``reset_peak_memory_stats``,
    ``memory_stats``) and ``empty_cache``. ``oom_errors`` are the exceptions ``raw_alloc``
    raises when the device is full; ``limit_bytes`` caps what it reserves. Thread-safe.
    """

    def __init__(self, raw_alloc, raw_free, device_name: str, oom_errors=(MemoryError,),
                 limit_bytes: int | None = None):
        self._raw_alloc = raw_alloc
        self._raw_free = raw_free
        self.device_name = device_name
        self._oom_errors = tuple(oom_errors)
        self.limit_bytes = limit_bytes
        self._cache: dict = {}       # rounded size -> [handles]
        # reentrant: a garbage collection inside allocate() (raw_alloc makes Python objects) may
        # free a tensor on this thread, and its Block.__del__ -> _release takes the lock again
        self._lock = threading.RLock()
        self._allocated = 0          # bytes in live blocks (rounded sizes)
        self._reserved = 0           # bytes obtained from the device (live + cached)
        self._peak_allocated = 0
        self._peak_reserved = 0
        self._num_allocs = 0
        self._num_cache_hits = 0
        self._num_ooms = 0

    # -- allocation -----------------------------------------------------------------------------
    def allocate(self, nbytes: int) -> Block:
        """A ``Block`` of at least ``nbytes``: from the cache when a block of its size class is
        free, else from the device (emptying the cache and retrying once when it is full);
        ``OutOfMemoryError`` naming the device and the sizes when it still does not fit."""
        size = round_size(nbytes)
        with self._lock:
            self._num_allocs += 1
            bucket = self._cache.get(size)
            if bucket:
                handle = bucket.pop()
                self._num_cache_hits += 1
            else:
                handle = self._device_alloc(size, nbytes)
            self._allocated += size
            self._peak_allocated = max(self._peak_allocated, self._allocated)
        return Block(handle, size, nbytes, self)

    def _device_alloc(self, size, requested):
        for attempt in (0, 1):
            try:
                if self.limit_bytes is not None and self._reserved + size > self.limit_bytes:
                    raise MemoryError("memory limit")
                handle = self._raw_alloc(size)
                break
            except self._oom_errors:
                if attempt == 1 or not self._cache:
                    self._num_ooms += 1
                    fmt = format_bytes
                    limit = (f" (limit {fmt(self.limit_bytes)})"
                             if self.limit_bytes is not None else "")
                    raise OutOfMemoryError(
                        f"{self.device_name}: out of memory trying to allocate {fmt(requested)}; "
                        f"{fmt(self._allocated)} allocated by tensors, {fmt(self._reserved)} "
                        f"reserved in total{limit}. The cache was emptied and the allocation "
                        f"retried.") from None
                self._empty_cache_locked()
        self._reserved += size
        self._peak_reserved = max(self._peak_reserved, self._reserved)
        return handle

    def _release(self, handle, size, requested):
        with self._lock:
            self._allocated -= size
            self._cache.setdefault(size, []).append(handle)

    # -- cache and statistics -------------------------------------------------------------------
    def empty_cache(self) -> None:
        """Return every cached (free) block to the device."""
        with self._lock:
            self._empty_cache_locked()

    def _empty_cache_locked(self):
        # swap first: a block released during raw_free (see the lock) lands in the new cache
        cache, self._cache = self._cache, {}
        for size, handles in cache.items():
            for h in handles:
                self._raw_free(h)
                self._reserved -= size

    def memory_allocated(self) -> int:
        return self._allocated

    def max_memory_allocated(self) -> int:
        return self._peak_allocated

    def memory_reserved(self) -> int:
        return self._reserved

    def max_memory_reserved(self) -> int:
        return self._peak_reserved

    def reset_peak_memory_stats(self) -> None:
        with self._lock:
            self._peak_allocated = self._allocated
            self._peak_reserved = self._reserved

    def memory_stats(self) -> dict:
        return {
            "allocated_bytes.all.current": self._allocated,
            "allocated_bytes.all.peak": self._peak_allocated,
            "reserved_bytes.all.current": self._reserved,
            "reserved_bytes.all.peak": self._peak_reserved,
            "num_alloc_retries": self._num_ooms,
            "num_ooms": self._num_ooms,
            "allocation.all.allocated": self._num_allocs,
            "cache_hits": self._num_cache_hits,
        }


def format_bytes(n: int) -> str:
    """``1536 -> '1.50 KiB'``: sizes in messages, as the allocator writes them."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
    return str(n)


_fmt = format_bytes  # the old private name
