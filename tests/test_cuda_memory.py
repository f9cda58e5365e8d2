"""The CUDA allocator's statistics and out-of-memory handling, over a stand-in for cupy's pool
(the arithmetic is the backend's; the pool is faked: no GPU here)."""
from __future__ import annotations

import gc

import pytest

from ember.runtime import OutOfMemoryError
from ember_cuda.memory import PoolAllocator

from helpers_cuda import FakeCupyAPI, FakePool


@pytest.fixture
def alloc():
    api = FakeCupyAPI(device_count=2)
    pool = FakePool(api, capacity=1 << 20)
    a = PoolAllocator(api, pool)
    return api, pool, a


def test_allocated_reserved_and_peaks_follow_live_blocks(alloc):
    api, pool, a = alloc
    dev = a.device(0)
    p1 = a.malloc(1000)           # rounded to 1024 by the pool
    p2 = a.malloc(4096)
    assert dev.memory_allocated() == 1024 + 4096
    assert dev.memory_reserved() == 1024 + 4096
    del p1
    gc.collect()
    assert dev.memory_allocated() == 4096
    assert dev.max_memory_allocated() == 1024 + 4096
    assert dev.memory_reserved() == 1024 + 4096   # the freed block stays cached
    dev.reset_peak_memory_stats()
    assert dev.max_memory_allocated() == 4096
    p3 = a.malloc(512)
    assert dev.max_memory_allocated() == 4096 + 512
    s = dev.memory_stats()
    assert s["allocation.all.allocated"] == 3 and s["allocation.all.freed"] == 1
    assert s["allocation.all.current"] == 2
    dev.empty_cache()
    assert dev.memory_reserved() == 4096 + 512
    del p2, p3


def test_devices_are_counted_separately(alloc):
    api, pool, a = alloc
    with api.on_device(1):
        p = a.malloc(2048)
    assert a.device(1).memory_allocated() == 2048
    assert a.device(0).memory_allocated() == 0
    assert a.device(1).memory_reserved() == 2048 and a.device(0).memory_reserved() == 0
    del p


def test_out_of_memory_empties_the_cache_retries_once_then_names_sizes(alloc):
    api, pool, a = alloc
    keep = a.malloc(600 << 10)
    cached = a.malloc(300 << 10)
    del cached                             # a cached block the retry can free
    gc.collect()
    # 600 KiB live + 300 KiB cached: a 200 KiB request fits only after emptying the cache
    p = a.malloc(200 << 10)
    s = a.device(0).memory_stats()
    assert s["num_alloc_retries"] == 1 and s["num_ooms"] == 0
    with pytest.raises(OutOfMemoryError) as e:
        a.malloc(900 << 10)
    msg = str(e.value)
    assert "CUDA out of memory. Tried to allocate 900.00 KiB" in msg
    assert "GPU 0 has a total capacity of 80.00 GiB of which 70.00 GiB is free" in msg
    assert "800.00 KiB is allocated by ember" in msg
    assert "retried once" in msg
    assert a.device(0).memory_stats()["num_ooms"] == 1
    assert isinstance(e.value, RuntimeError)
    del keep, p


def test_memory_summary_is_a_table_with_current_and_peak(alloc):
    api, pool, a = alloc
    p = a.malloc(1 << 10)
    text = a.device(0).memory_summary()
    assert "ember CUDA memory summary, device ID 0" in text
    row = next(ln for ln in text.splitlines() if "Allocated memory" in ln)
    assert "1.00 KiB" in row
    assert "device free / total: 70.00 GiB / 80.00 GiB" in text
    del p
