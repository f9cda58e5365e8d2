"""The reusable caching allocator (ember.runtime.allocator)."""
import gc

import pytest

from ember.runtime.allocator import CachingAllocator, OutOfMemoryError, round_size


class FakeDevice:
    """A device with a fixed capacity; handles are bytearrays so leaks would show."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.used = 0
        self.live = set()

    def alloc(self, n):
        if self.used + n > self.capacity:
            raise MemoryError("device full")
        self.used += n
        h = bytearray(n)
        self.live.add(id(h))
        return h

    def free(self, h):
        self.used -= len(h)
        self.live.discard(id(h))


def make(capacity=1 << 20):
    dev = FakeDevice(capacity)
    return dev, CachingAllocator(dev.alloc, dev.free, "fake:0")


def test_round_size():
    assert round_size(1) == 512
    assert round_size(512) == 512
    assert round_size(513) == 1024
    assert round_size((1 << 20) + 1) == 2 << 20


def test_stats_move_as_documented_and_blocks_are_reused():
    dev, a = make()
    b = a.allocate(1000)
    assert a.memory_allocated() == 1024 and a.memory_reserved() == 1024
    handle = b.handle
    del b
    gc.collect()
    assert a.memory_allocated() == 0 and a.memory_reserved() == 1024  # cached, not freed
    c = a.allocate(900)                                                # same size class
    assert c.handle is handle
    assert a.memory_stats()["cache_hits"] == 1
    assert a.max_memory_allocated() == 1024
    d = a.allocate(4096)
    assert a.max_memory_allocated() == 1024 + 4096
    del d
    a.reset_peak_memory_stats()
    assert a.max_memory_allocated() == 1024
    del c
    a.empty_cache()
    assert a.memory_reserved() == 0 and dev.used == 0


def test_oom_frees_cache_and_retries_before_raising():
    dev, a = make(capacity=4096)
    x = a.allocate(2048)
    del x                                   # 2048 cached
    y = a.allocate(3072)                    # needs the cache emptied first; then fits
    assert a.memory_reserved() == 3072 and dev.used == 3072
    with pytest.raises(OutOfMemoryError, match=r"fake:0: out of memory trying to allocate "
                                               r"4.00 KiB; 3.00 KiB allocated"):
        a.allocate(4096)
    del y


def test_memory_limit_gives_clear_error():
    dev = FakeDevice(1 << 30)
    a = CachingAllocator(dev.alloc, dev.free, "fake:1", limit_bytes=1024)
    held = a.allocate(1024)
    with pytest.raises(OutOfMemoryError, match=r"limit 1.00 KiB"):
        a.allocate(10)
    assert held.size == 1024
