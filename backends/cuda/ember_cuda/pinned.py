"""Page-locked host memory that is reused only when the copies using it have finished.

Non-blocking copies between the host and a GPU need page-locked (pinned) host memory, and they
use it *after* the call returns: a copy to the host writes it when the stream gets there, a copy
from the host reads it then. cupy's pinned pool hands a freed block out again at once, so a CPU
tensor dropped before its copy finished could have its memory reused -- and overwritten by the
copy, or read by it after the new owner wrote it. This pool is PyTorch's CachingHostAllocator
over cupy's ``PinnedMemory``: every copy that uses a block records an event on its stream
(``record``); a block whose arrays are all gone goes back to the free list only once those
events have completed (checked without waiting at the next allocation).

A block is exposed as a numpy array over a ctypes buffer whose ``__del__`` returns it: numpy
views keep that buffer alive, so the block lives exactly as long as any array using it.
"""
from __future__ import annotations

import ctypes
import math
import threading

import numpy as np

_MIN_BLOCK = 512
_block_types = {}


def _size_class(nbytes: int) -> int:
    """Power-of-two block sizes from 512 bytes: few distinct sizes, so blocks get reused."""
    return max(_MIN_BLOCK, 1 << max(0, (nbytes - 1).bit_length()))


def _block_type(size: int):
    t = _block_types.get(size)
    if t is None:
        t = _block_types[size] = type(f"PinnedBlock{size}", (ctypes.c_ubyte * size,),
                                      {"__del__": _returned})
    return t


def _returned(block) -> None:
    pool = getattr(block, "pool", None)
    if pool is not None:
        pool._returned(block.raw, block.size, block.events)


def owner_block(array):
    """The pinned block under ``array`` (walking numpy's ``base``), or None."""
    o = array
    while o is not None:
        if type(o) in _block_types.values():
            return o
        o = getattr(o, "base", None)
    return None


class PinnedPool:
    """ember's pinned host memory (one per backend; blocks are not tied to a device)."""

    def __init__(self, api):
        self._api = api
        self._free = {}          # size -> [raw allocation]
        self._pending = []       # (raw, size, events): freed, copies still running
        self._lock = threading.Lock()

    def empty(self, shape, np_dtype):
        """A new numpy array of ``shape`` and ``np_dtype`` in pinned memory."""
        dt = np.dtype(np_dtype)
        count = math.prod(shape)
        size = _size_class(max(count * dt.itemsize, 1))
        if self._pending:
            self._reclaim()
        with self._lock:
            free = self._free.get(size)
            raw = free.pop() if free else None
        if raw is None:
            raw = self._api.pinned_alloc(size)
        block = _block_type(size).from_address(raw.ptr)
        block.pool, block.raw, block.size, block.events = self, raw, size, []
        return np.frombuffer(block, dtype=dt, count=count).reshape(shape)

    def record(self, array, stream) -> None:
        """A copy queued on ``stream`` uses ``array``'s block: it is not reused before the copy
        has finished (an array not from this pool is left alone)."""
        block = owner_block(array)
        if block is None:
            return
        event = self._api.new_event(False, False, False)
        event.record(stream)
        block.events.append(event)

    def _returned(self, raw, size, events) -> None:
        with self._lock:
            if events:
                self._pending.append((raw, size, events))
            else:
                self._free.setdefault(size, []).append(raw)

    def _reclaim(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        keep = []
        for raw, size, events in pending:
            if all(ev.done for ev in events):
                with self._lock:
                    self._free.setdefault(size, []).append(raw)
            else:
                keep.append((raw, size, events))
        if keep:
            with self._lock:
                self._pending.extend(keep)

    def is_pinned(self, array) -> bool:
        return owner_block(array) is not None

    def empty_cache(self) -> None:
        """Release the free blocks (those still used by a copy stay)."""
        self._reclaim()
        with self._lock:
            self._free.clear()
