"""Device memory: ember's own caching pool, stream-aware, with PyTorch's statistics and
out-of-memory error.

The pool is a private ``cupy.cuda.MemoryPool`` (C size classes; a freed block is reused on the
stream it was allocated on, as PyTorch's caching allocator does). It serves ember's memory only:
it is not installed as cupy's process-wide allocator, but made the allocator of the calling
thread for the duration of each ember kernel and transfer (``CupyAPI.using_allocator``), so a
program's own cupy arrays stay in cupy's pool and ember's tensors in ember's.

``PoolAllocator.malloc`` hands out a pointer that keeps a small ``_Live`` record alive; when the
last array using the memory dies, the record's ``__del__`` gives the block back. A block that
``Tensor.record_stream`` marked as used by other streams is not given back at once: an event is
recorded on each of those streams and the block is held until every event has completed
(checked, without waiting, at the next allocation), so a stream still reading the memory never
sees it reused -- PyTorch's ``record_stream`` contract. ``memory_allocated`` counts a block until
it is given back; its peak is exact without walking the pool. ``memory_reserved`` is the pool's
total.

When the pool cannot allocate, held blocks are waited for and given back, every cached block is
freed and the allocation retried once; if it still fails, ``OutOfMemoryError`` names the
device, the request, what the driver reports free and total, and what ember holds.
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
    """Owned by the pointer cupy's arrays hold: keeps the pool's block while arrays use it, and
    hands it back to the allocator (``_release``) when the last one dies."""

    __slots__ = ("pooled", "size", "allocator", "stream_ptr", "streams", "__weakref__")

    def __init__(self, pooled, size, allocator, stream_ptr):
        self.pooled = pooled
        self.size = size
        self.allocator = allocator
        self.stream_ptr = stream_ptr   # the stream it was allocated on (reuse is ordered there)
        self.streams = None            # other streams that used the block (record_stream)

    def __del__(self):
        self.allocator._release(self)


class PoolAllocator:
    """The allocator function (``malloc``) over one private ``MemoryPool`` for all devices, the
    per-device statistics ``ember.cuda.memory_*`` read (``DeviceMemory``), and
    ``record_stream``'s deferred reuse."""

    def __init__(self, api, pool=None):
        self._api = api
        self.pool = pool if pool is not None else api.memory_pool()
        self.stats = [DeviceStats() for _ in range(api.device_count)]
        # re-entrant: a collection inside malloc may run a _Live.__del__ on this thread
        self._lock = threading.RLock()
        self._held = []         # (pooled, size, device, [events]): freed, other streams pending

    def malloc(self, nbytes: int):
        api, pool = self._api, self.pool
        if self._held:
            self._give_back_finished()
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
        return api.tracked_pointer(pooled, _Live(pooled, size, self, api.current_stream().ptr))

    # -- streams ----------------------------------------------------------------------------------
    def record_stream(self, owner, stream) -> None:
        """The block of ``owner`` (a ``_Live``) is used by ``stream`` (a cupy stream): when it is
        freed, it is not reused before the work queued on ``stream`` by then has finished."""
        if stream.ptr == owner.stream_ptr:
            return   # the stream it was allocated on: reuse there is ordered already
        with self._lock:
            if owner.streams is None:
                owner.streams = []
            if all(s is not stream for s in owner.streams):
                owner.streams.append(stream)

    def _release(self, live) -> None:
        pooled = live.pooled
        if live.streams:
            api = self._api
            events = []
            with api.on_device(pooled.device_id):
                for s in live.streams:
                    ev = api.new_event(False, False, False)
                    ev.record(s)
                    events.append(ev)
            with self._lock:
                self._held.append((pooled, live.size, pooled.device_id, events))
            return
        self._freed(pooled.device_id, live.size)

    def _freed(self, index, size) -> None:
        st = self.stats[index]
        with self._lock:
            st.allocated -= size
            st.num_frees += 1

    def _give_back_finished(self, wait=False) -> None:
        """Give the pool the held blocks whose streams are done (all of them, waiting for their
        events, when ``wait``)."""
        with self._lock:
            held, self._held = self._held, []
        keep = []
        for entry in held:
            pooled, size, index, events = entry
            if wait:
                for ev in events:
                    self._api.event_synchronize(ev)
            elif not all(ev.done for ev in events):
                keep.append(entry)
                continue
            self._freed(index, size)   # dropping ``pooled`` returns the block to the pool
        if keep:
            with self._lock:
                self._held.extend(keep)

    def _retry(self, nbytes):
        api, pool = self._api, self.pool
        index = api.get_device()
        st = self.stats[index]
        st.num_retries += 1
        self._give_back_finished(wait=True)
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
        self._give_back_finished()
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
