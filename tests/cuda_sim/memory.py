"""cupy's memory pool on the simulated GPU: blocks are real bytes (each with its memory record,
``arrays.Block``, kept across reuses), reused per (device, stream) as cupy's stream-aware pool
does, with its size limit and an injectable out-of-memory failure; pinned host buffers."""
from __future__ import annotations

import itertools

import numpy as np

from .arrays import Block

class _FakeMemory:
    def __init__(self, size):
        self.size = size


class FakePooled:
    """What cupy's pool hands out: ``ptr``, ``mem.size``, ``device_id``, plus the simulator's
    bytes (``buf``) and their memory record (``block``). When the last reference goes, the block
    returns to the free list of the stream it was allocated on (cupy's stream-aware pool)."""

    def __init__(self, pool, ptr, size, device_id, stream_ptr, buf, block):
        self.ptr, self.mem, self.device_id = ptr, _FakeMemory(size), device_id
        self.stream_ptr, self.buf, self.block = stream_ptr, buf, block
        self._pool = pool

    def __del__(self):
        self._pool.give_back(self)


class FakePool:
    """cupy.cuda.MemoryPool's interface: 512-byte rounding, per-device totals, a device size
    limit (raises ``oom`` when exceeded), cached free blocks per (device, stream)."""

    _ptrs = itertools.count(1 << 20, 1 << 12)

    def __init__(self, api, capacity=1 << 30, oom=MemoryError):
        self._api, self.capacity, self._oom = api, capacity, oom
        self.total = {}
        self.cached = {}   # (device, stream ptr) -> [(ptr, size, buf, block)]
        self.fail_next = 0
        self.mallocs = 0

    def malloc(self, nbytes):
        api = self._api
        dev = api.get_device()
        stream = api.current_stream().ptr
        size = max(512, (nbytes + 511) // 512 * 512)
        self.mallocs += 1
        free = self.cached.setdefault((dev, stream), [])
        for k, (ptr, sz, buf, block) in enumerate(free):
            if sz == size:
                del free[k]
                return FakePooled(self, ptr, size, dev, stream, buf, block)
        if self.fail_next or self.total.get(dev, 0) + size > self.capacity:
            self.fail_next = max(0, self.fail_next - 1)
            raise self._oom(f"out of memory allocating {nbytes} bytes")
        self.total[dev] = self.total.get(dev, 0) + size
        sim = getattr(api, "sim", None)
        block = Block(sim, dev) if sim is not None else None
        return FakePooled(self, next(self._ptrs), size, dev, stream, np.empty(size, np.uint8),
                          block)

    def give_back(self, pooled):
        self.cached.setdefault((pooled.device_id, pooled.stream_ptr), []).append(
            (pooled.ptr, pooled.mem.size, pooled.buf, pooled.block))

    def free_all_blocks(self):
        dev = self._api.get_device()
        for key in [k for k in self.cached if k[0] == dev]:
            for _, size, _, _ in self.cached.pop(key):
                self.total[dev] -= size

    def total_bytes(self):
        return self.total.get(self._api.get_device(), 0)

    def free_bytes(self):
        dev = self._api.get_device()
        return sum(size for key, free in self.cached.items() if key[0] == dev
                   for _, size, _, _ in free)


class FakePointer:
    """cupy's MemoryPointer over a pooled block, owning ``owner`` (ember's record)."""

    def __init__(self, pooled, owner):
        self.ptr, self.mem, self.owner = pooled.ptr, pooled, owner
        self.device_id = pooled.device_id


class _PinnedBuffer:
    """Page-locked host memory (a numpy byte buffer the fake registers as pinned)."""

    def __init__(self, api, nbytes):
        self.array = np.empty(max(nbytes, 1), np.uint8)
        self.ptr = self.array.ctypes.data
        api.pinned.append((self.ptr, self.array.nbytes, self.array))
