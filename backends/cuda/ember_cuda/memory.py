"""Device memory: cupy's MemoryPool, with PyTorch's statistics and out-of-memory error.

cupy's pool is the allocator (size-class caching in C, stream-aware: a freed block is reused on
the stream it was allocated on, as PyTorch's caching allocator does without ``record_stream``).
``PoolAllocator.malloc`` is installed as cupy's allocator, so every array -- the kit's kernels
included -- comes through it. It hands out a pointer that keeps a small ``_Live`` record alive;
when the last array using the memory dies, the record's ``__del__`` takes the bytes off the
device's count. That makes ``memory_allocated`` and its peak exact without walking the pool
(cupy's ``used_bytes`` is a walk over every live block). ``memory_reserved`` is the pool's total.

When the pool cannot allocate, every cached block of the pool is freed and the allocation retried
once; if it still fails, ``OutOfMemoryError`` names the device, the request, what the driver
reports free and total, and what ember holds.
"""
from __future__ import annotations

import threading

from ember.runtime import OutOfMemoryError, format_bytes


class DeviceStats:
    """The counters of one device (bytes are the pool's rounded block sizes)."""

    __slots__ = ("allocated", "peak_allocated", "peak_reserved", "num_allocs", "num_frees",
                 "num_retries", "num_ooms")

    def __init__(self):
        self.allocated = 0
        self.peak_allocated = 0
        self.peak_reserved = 0
        self.num_allocs = 0
        self.num_frees = 0
        self.num_retries = 0
        self.num_ooms = 0


class _Live:
    """Owned by the pointer cupy's arrays hold: keeps the pool's block and gives its bytes back
    to the statistics when collected."""

    __slots__ = ("pooled", "size", "stats", "lock", "__weakref__")

    def __init__(self, pooled, size, stats, lock):
        self.pooled = pooled
        self.size = size
        self.stats = stats
        self.lock = lock

    def __del__(self):
        st = self.stats
        with self.lock:
            st.allocated -= self.size
            st.num_frees += 1


class PoolAllocator:
    """cupy's allocator function (``malloc``) over one ``MemoryPool`` for all devices, and the
    per-device statistics ``ember.cuda.memory_*`` read (``DeviceMemory``)."""

    def __init__(self, api, pool=None):
        self._api = api
        self.pool = pool if pool is not None else api.memory_pool()
        self.stats = [DeviceStats() for _ in range(api.device_count)]
        # re-entrant: a collection inside malloc may run a _Live.__del__ on this thread
        self._lock = threading.RLock()

    def malloc(self, nbytes: int):
        api, pool = self._api, self.pool
        try:
            pooled = pool.malloc(nbytes)
        except api.oom_errors:
            pooled = self._retry(nbytes)
        index = pooled.device_id
        st = self.stats[index]
        size = pooled.mem.size
        reserved = self.reserved(index)
        with self._lock:
            st.num_allocs += 1
            st.allocated += size
            if st.allocated > st.peak_allocated:
                st.peak_allocated = st.allocated
            if reserved > st.peak_reserved:
                st.peak_reserved = reserved
        return api.tracked_pointer(pooled, _Live(pooled, size, st, self._lock))

    def _retry(self, nbytes):
        api, pool = self._api, self.pool
        index = api.get_device()
        st = self.stats[index]
        st.num_retries += 1
        pool.free_all_blocks()
        try:
            return pool.malloc(nbytes)
        except api.oom_errors:
            st.num_ooms += 1
            raise OutOfMemoryError(self.oom_message(index, nbytes)) from None

    def oom_message(self, index, nbytes) -> str:
        """PyTorch's message: the request, the device's capacity and free memory, and what ember
        holds (allocated by tensors, reserved by the pool but unallocated)."""
        fmt = format_bytes
        try:
            free, total = self._api.mem_get_info(index)
            device = f"GPU {index} has a total capacity of {fmt(total)} of which {fmt(free)} is free"
        except Exception as e:  # the driver may be unable to answer after the failure
            device = f"GPU {index} could not report its free memory ({type(e).__name__}: {e})"
        st = self.stats[index]
        reserved = self.reserved(index)
        return (f"CUDA out of memory. Tried to allocate {fmt(nbytes)}. {device}. Of the "
                f"allocated memory {fmt(st.allocated)} is allocated by ember, and "
                f"{fmt(max(reserved - st.allocated, 0))} is reserved by ember but unallocated. "
                f"The cache was emptied and the allocation retried once.")

    def reserved(self, index) -> int:
        api = self._api
        if api.get_device() == index:
            return self.pool.total_bytes()
        with api.on_device(index):
            return self.pool.total_bytes()

    def free_cached(self, index) -> int:
        with self._api.on_device(index):
            return self.pool.free_bytes()

    def empty_cache(self, index) -> None:
        with self._api.on_device(index):
            self.pool.free_all_blocks()

    def device(self, index) -> "DeviceMemory":
        return DeviceMemory(self, index)


class DeviceMemory:
    """One device's view of the allocator: what ``Backend.allocator(index)`` returns, with the
    statistics methods of ``ember.runtime.CachingAllocator`` plus ``memory_summary``."""

    def __init__(self, allocator: PoolAllocator, index: int):
        self._a = allocator
        self.index = index
        self.device_name = f"cuda:{index}"

    @property
    def _st(self) -> DeviceStats:
        return self._a.stats[self.index]

    def memory_allocated(self) -> int:
        return self._st.allocated

    def max_memory_allocated(self) -> int:
        return self._st.peak_allocated

    def memory_reserved(self) -> int:
        return self._a.reserved(self.index)

    def max_memory_reserved(self) -> int:
        return max(self._st.peak_reserved, self.memory_reserved())

    def reset_peak_memory_stats(self) -> None:
        st = self._st
        reserved = self.memory_reserved()
        with self._a._lock:
            st.peak_allocated = st.allocated
            st.peak_reserved = reserved

    def empty_cache(self) -> None:
        self._a.empty_cache(self.index)

    def memory_stats(self) -> dict:
        st = self._st
        reserved = self.memory_reserved()
        return {
            "allocated_bytes.all.current": st.allocated,
            "allocated_bytes.all.peak": st.peak_allocated,
            "reserved_bytes.all.current": reserved,
            "reserved_bytes.all.peak": max(st.peak_reserved, reserved),
            "inactive_split_bytes.all.current": self._a.free_cached(self.index),
            "allocation.all.allocated": st.num_allocs,
            "allocation.all.freed": st.num_frees,
            "allocation.all.current": st.num_allocs - st.num_frees,
            "num_alloc_retries": st.num_retries,
            "num_ooms": st.num_ooms,
        }

    def memory_summary(self) -> str:
        """A table like ``torch.cuda.memory_summary``: current and peak bytes, counts, the
        driver's free/total."""
        s = self.memory_stats()
        fmt = format_bytes
        try:
            free, total = self._a._api.mem_get_info(self.index)
            device_line = f"device free / total: {fmt(free)} / {fmt(total)}"
        except Exception as e:
            device_line = f"device free / total: unknown ({type(e).__name__})"
        rule = "=" * 75
        rows = [
            ("Allocated memory", fmt(s["allocated_bytes.all.current"]),
             fmt(s["allocated_bytes.all.peak"])),
            ("Reserved memory", fmt(s["reserved_bytes.all.current"]),
             fmt(s["reserved_bytes.all.peak"])),
            ("Cached free memory", fmt(s["inactive_split_bytes.all.current"]), "-"),
            ("Live allocations", str(s["allocation.all.current"]), "-"),
        ]
        lines = [rule, f"|{'ember CUDA memory summary, device ID ' + str(self.index):^73}|",
                 "|" + "-" * 73 + "|",
                 f"| {'Metric':<30}| {'Cur Usage':>18} | {'Peak Usage':>18} |", rule]
        lines += [f"| {name:<30}| {cur:>18} | {peak:>18} |" for name, cur, peak in rows]
        lines += [rule,
                  f"| allocations: {s['allocation.all.allocated']}, frees: "
                  f"{s['allocation.all.freed']}, cache-flush retries: {s['num_alloc_retries']}, "
                  f"OOMs: {s['num_ooms']}".ljust(74) + "|",
                  f"| {device_line}".ljust(74) + "|", rule]
        return "\n".join(lines)
