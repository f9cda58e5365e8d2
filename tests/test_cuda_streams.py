"""Streams and memory of the CUDA backend on the simulated GPU (``tests/cuda_sim``): streams
that overlap with the default stream, ``Tensor.record_stream`` and the stream-aware caching
allocator, stream-aware pinned memory for non-blocking copies, and ember's pool serving ember's
memory only."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import ember

from helpers_cuda import require_simulator, simulated_backend

cupy = pytest.importorskip("cupy")
require_simulator()

DEV = "simstream"


@pytest.fixture(scope="module")
def be():
    with simulated_backend(DEV, 2) as backend:
        yield backend


@pytest.fixture
def mod(be):
    m = getattr(ember, DEV)
    yield m
    be._api.sim.release()
    m.synchronize()


def test_streams_do_not_wait_for_the_default_stream_as_torch_s_do(mod):
    x = ember.full((4,), 3.0, device=DEV)         # queued on the default stream
    s = mod.Stream()
    with mod.stream(s):
        racy = x * 2                              # no wait: the side stream may run first
    with mod.stream(s):
        s.wait_stream(mod.default_stream())
        ordered = x * 2
    mod.synchronize()
    assert np.isnan(racy.cpu().numpy()).all(), "a side stream was implicitly ordered"
    assert ordered.cpu().tolist() == [6.0] * 4


def _side_reads_then_free(mod, be, record):
    """x made on the default stream, read by a side stream that has not finished, then freed
    on the host; the next allocation of the same size on the default stream."""
    s = mod.Stream()
    x = ember.full((256,), 3.0, device=DEV)
    s.wait_stream(mod.default_stream())
    with mod.stream(s):
        y = x * 2
    if record:
        x.record_stream(s)
    be._api.sim.stall(s._stream)                  # the side stream's work is still running
    del x
    gc.collect()
    z = ember.full((256,), 5.0, device=DEV)
    be._api.sim.release(s._stream)
    mod.synchronize()
    return y, z


def test_without_record_stream_a_freed_block_is_reused_under_the_side_stream(mod, be):
    y, z = _side_reads_then_free(mod, be, record=False)
    assert np.isnan(y.cpu().numpy()).all()        # what record_stream exists to prevent


def test_record_stream_keeps_the_block_until_the_side_stream_is_done(mod, be):
    before = be._allocator.pool.mallocs
    y, z = _side_reads_then_free(mod, be, record=True)
    assert y.cpu().tolist() == [6.0] * 256
    assert z.cpu().tolist() == [5.0] * 256
    assert be._allocator.pool.mallocs > before
    # once the side stream is done, the held block goes back and is reused
    held = len(be._allocator._held)
    ember.empty(1, device=DEV)
    assert len(be._allocator._held) < held or held == 0


def test_record_stream_on_a_cpu_tensor_is_a_no_op():
    ember.ones(3).record_stream(None)


def test_a_non_blocking_copy_to_the_host_lands_at_synchronization(mod):
    g = ember.arange(6.0, device=DEV) * 2
    h = g.to("cpu", non_blocking=True)
    assert h.is_pinned()
    mod.synchronize()
    assert h.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]


def test_pinned_blocks_are_not_reused_while_a_copy_still_uses_them(mod, be):
    s = mod.current_stream()
    g = ember.full((100,), 7.0, device=DEV)
    h = g.to("cpu", non_blocking=True)
    be._api.sim.stall(s._stream)                  # the copy has not run yet
    address = h.numpy().ctypes.data
    del h
    gc.collect()
    fresh = ember.ones(100).pin_memory()          # must not get the block the copy writes
    assert fresh.numpy().ctypes.data != address
    be._api.sim.release(s._stream)
    mod.synchronize()
    assert fresh.tolist() == [1.0] * 100
    # with the copy done, the block is free again
    again = ember.ones(100).pin_memory()
    del again


def test_a_pinned_upload_is_not_reused_before_the_copy_read_it(mod, be):
    s = mod.Stream()
    p = ember.full((64,), 2.0).pin_memory()
    with mod.stream(s):
        be._api.sim.stall(s._stream)
        g = p.to(DEV, non_blocking=True)
        address = p.numpy().ctypes.data
        del p
        gc.collect()
        q = ember.full((64,), -1.0).pin_memory()  # written by the host at once
        assert q.numpy().ctypes.data != address
        be._api.sim.release(s._stream)
    mod.current_stream().wait_stream(s)
    assert g.cpu().tolist() == [2.0] * 64


def test_ember_s_pool_serves_ember_s_memory_only(mod, be):
    before = mod.memory_allocated()
    theirs = be._api.xp.ones(1 << 16)             # a program's own cupy array
    assert mod.memory_allocated() == before
    ours = ember.ones(1 << 16, device=DEV)
    assert mod.memory_allocated() >= before + (1 << 16) * 4
    del theirs, ours


def test_the_real_backend_never_installs_a_process_wide_cupy_allocator():
    from ember_cuda.backend import CUDABackend
    from ember_cuda.cupy_api import CupyAPI
    default = cupy.cuda.get_allocator()
    backend = CUDABackend(load_api=lambda: CupyAPI(cupy, 1))
    assert backend.is_available()
    assert cupy.cuda.get_allocator() == default
    with backend.memory():
        assert cupy.cuda.get_allocator() == backend._allocator.malloc
    assert cupy.cuda.get_allocator() == default
