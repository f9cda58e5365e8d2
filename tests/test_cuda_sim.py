"""The simulated GPU (``tests/cuda_sim``) catches what a real GPU would punish: each test shows
the simulator giving wrong data or raising where CUDA would, and the right answer once the
program orders its work correctly. Everything runs on numpy; no GPU is needed."""
from __future__ import annotations

import gc

import numpy as np
import pytest

from cuda_sim import SimulatedHang
from helpers_cuda import FakeCupyAPI, FakePool

pytest.importorskip("cupy", reason="the simulator checks calls against cupy's API (dev extra)")


@pytest.fixture
def api():
    return FakeCupyAPI(device_count=2)


def _host(api, a):
    return api.to_host(a)


def test_work_on_a_stream_is_invisible_to_another_until_it_waits(api):
    xp = api.xp
    side = api.new_stream(non_blocking=True)
    side.use()
    x = xp.arange(4.0) * 2          # queued on the side stream
    api.null_stream().use()
    early = _host(api, x + 1)       # the default stream never waited: stale memory
    assert np.isnan(early).all()
    ev = api.new_event(False, False, False)
    ev.record(side)
    api.null_stream().wait_event(ev)
    np.testing.assert_array_equal(_host(api, x + 1), [1, 3, 5, 7])


def test_the_legacy_default_stream_orders_blocking_streams_but_not_non_blocking_ones(api):
    xp = api.xp
    blocking = api.new_stream(non_blocking=False)
    blocking.use()
    a = xp.ones(3)
    api.null_stream().use()
    np.testing.assert_array_equal(_host(api, a * 2), [2, 2, 2])   # implicit sync with null
    free = api.new_stream(non_blocking=True)
    free.use()
    b = xp.ones(3)
    api.null_stream().use()
    assert np.isnan(_host(api, b * 2)).all()


def test_the_host_sees_a_stream_s_work_only_after_synchronizing(api):
    xp = api.xp
    side = api.new_stream(non_blocking=True)
    side.use()
    x = xp.full(3, 7.0)
    api.null_stream().use()
    with pytest.raises(AssertionError):
        np.testing.assert_array_equal(api.to_host(x), 7.0)   # copied on the default stream
    side.synchronize()
    np.testing.assert_array_equal(api.to_host(x), 7.0)


def test_a_non_blocking_copy_to_the_host_lands_at_the_synchronization(api):
    xp = api.xp
    x = xp.arange(5.0)
    host = np.zeros(5)
    api.to_host(x, out=host, stream=api.current_stream(), blocking=False)
    assert (host == 0).all()        # queued: not there yet
    api.synchronize(0)
    np.testing.assert_array_equal(host, np.arange(5.0))


def test_a_non_blocking_copy_from_pinned_memory_reads_it_when_it_runs(api):
    xp = api.xp
    host = np.arange(4.0)
    s = api.new_stream(non_blocking=True)
    d = api.from_host(host, stream=s)     # queued, not yet run
    host[:] = -1                          # the host overwrites the buffer too early
    s.synchronize()
    np.testing.assert_array_equal(api.to_host(d), -1)   # the copy read the new contents
    del xp


def test_device_affinity_is_enforced_without_peer_access(api):
    xp = api.xp
    with api.on_device(1):
        x = xp.ones(3)
    with pytest.raises(ValueError, match=r"resides \(1\) is different from the current "
                                         r"device \(0\). Peer access is unavailable"):
        x + 1
    with api.on_device(1):
        np.testing.assert_array_equal(api.to_host(x + 1), 2)


def test_out_of_range_indices_wrap_as_cupy_does(api):
    xp = api.xp
    x = xp.arange(5.0)
    i = xp.asarray(np.array([1, 7, -6]))
    np.testing.assert_array_equal(api.to_host(x[i]), [1, 2, 4])
    np.testing.assert_array_equal(api.to_host(xp.take(x, i)), [1, 2, 4])
    y = xp.zeros(5)
    y[i] = 1.0
    np.testing.assert_array_equal(api.to_host(y), [0, 1, 1, 0, 1])
    z = xp.zeros(5)
    xp.add.at(z, i, 1.0)
    np.testing.assert_array_equal(api.to_host(z), [0, 1, 1, 0, 1])


def test_host_arrays_are_refused_as_kernel_operands(api):
    xp = api.xp
    with pytest.raises(TypeError, match="Unsupported type"):
        xp.ones(3) + np.ones(3)
    with pytest.raises(TypeError, match="Unsupported type"):
        xp.concatenate([xp.ones(2), np.ones(2)])


def test_results_are_device_arrays_never_host_scalars(api):
    xp = api.xp
    s = xp.arange(4.0).sum()
    assert isinstance(s, api.ndarray) and s.shape == ()
    assert isinstance(xp.arange(4.0)[2], api.ndarray)


def test_asynchronous_errors_surface_at_the_next_synchronization(api):
    xp = api.xp
    x = xp.ones(3)
    api.sim.fail(0, RuntimeError("CUDA error: an illegal memory access was encountered"))
    y = x * 2                         # work goes on being queued
    with pytest.raises(RuntimeError, match="illegal memory access"):
        float(y.sum())
    assert float(y.sum()) == 6.0      # reported once


def test_host_synchronizations_are_counted(api):
    xp = api.xp
    x = xp.arange(3.0)
    before = api.syncs
    y = (x * 2).sum()
    assert api.syncs == before        # queued work: no synchronization
    assert float(y) == 6.0 and bool(y > 0) and y.item() == 6.0
    api.synchronize(0)
    api.current_stream().synchronize()
    assert api.syncs == before + 5


def test_a_stalled_stream_never_completes(api):
    s = api.new_stream(non_blocking=True)
    api.sim.stall(s)
    ev = api.new_event(False, False, False)
    ev.record(s)
    assert not ev.done
    with pytest.raises(SimulatedHang):
        ev.synchronize()
    api.sim.release(s)
    assert ev.done


def test_pool_blocks_are_reused_per_stream_and_reuse_under_a_pending_read_is_caught(api):
    xp = api.xp
    pool = FakePool(api)
    owners = []

    def malloc(n):
        p = pool.malloc(n)
        owners.append(p)
        return api.tracked_pointer(p, None)
    side = api.new_stream(non_blocking=True)
    with api.using_allocator(malloc):
        x = xp.full(64, 3.0)                       # on the default stream
        ev = api.new_event(False, False, False)
        ev.record(api.null_stream())
        side.wait_event(ev)
        side.use()
        y = x * 2                                  # the side stream reads x...
        api.null_stream().use()
        del x
        owners.clear()
        gc.collect()                               # ...which is freed on the host at once
        z = xp.full(64, 5.0)                       # the default stream reuses its block
        assert pool.mallocs == 3
    side.synchronize()
    api.synchronize(0)
    assert np.isnan(api.to_host(y)).all(), "the side stream read reused memory"
    np.testing.assert_array_equal(api.to_host(z), 5.0)
