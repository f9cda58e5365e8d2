"""Contract suites: device API, copies, allocator, streams/events, RNG, views, error messages.

Each case is a function ``case(device)`` that raises AssertionError (or any exception) on a
violation and returns None on success, or the string "skip: why" when it does not apply.
"""
from __future__ import annotations

import gc

import numpy as np

import ember
from ember.runtime.registry import registry


def _module(device):
    return getattr(ember, device.type)


# -- device module --------------------------------------------------------------------------------
def device_module_basics(device):
    mod = _module(device)
    assert mod.is_available(), f"ember.{device.type}.is_available() is False"
    n = mod.device_count()
    assert n >= 1, f"device_count() = {n}"
    assert 0 <= mod.current_device() < n
    mod.synchronize()


def device_string_parsing(device):
    name = device.type
    d = ember.device(f"{name}:1")
    assert (d.type, d.index) == (name, 1) and str(d) == f"{name}:1"
    assert ember.device(name, 1) is d
    for bad in (f"{name}:-1", f"{name}:x", f"{name}:1:2"):
        try:
            ember.device(bad)
        except RuntimeError:
            continue
        raise AssertionError(f"device({bad!r}) did not raise")


def set_device_round_trip(device):
    mod = _module(device)
    prev = mod.current_device()
    with mod.device(device.index or 0):
        assert mod.current_device() == (device.index or 0)
    assert mod.current_device() == prev


# -- copies ---------------------------------------------------------------------------------------
def copy_round_trip_all_dtypes(device):
    backend = registry.get(device.type)
    rng = np.random.default_rng(0)
    for dt in ember._dtype.all_dtypes:
        if dt not in backend.dtypes or dt.np is None:
            continue
        host = (rng.standard_normal((3, 5)) * 10).astype(dt.np)
        t = ember.tensor(host, device=device)
        assert t.device is device and t.dtype is dt
        back = t.cpu().numpy()
        assert back.dtype == host.dtype and np.array_equal(back, host, equal_nan=True), dt


def copy_non_contiguous_and_non_blocking(device):
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = ember.tensor(host).t()                      # a transposed CPU view
    moved = t.to(device, non_blocking=True)
    _module(device).synchronize()
    assert np.array_equal(moved.cpu().numpy(), host.T)
    dst = ember.zeros(6, 4, device=device)
    dst.copy_(t)                                    # cross-device copy_ into a device tensor
    assert np.array_equal(dst.cpu().numpy(), host.T)


def copy_between_devices(device):
    mod = _module(device)
    if mod.device_count() < 2:
        return "skip: one device"
    other = ember.device(device.type, 1 - (device.index or 0))
    t = ember.arange(10, device=device)
    u = t.to(other)
    assert u.device is other and u.tolist() == list(range(10))


# -- allocator ------------------------------------------------------------------------------------
def allocator_statistics(device):
    backend = registry.get(device.type)
    alloc = backend.allocator(device.index or 0)
    if alloc is None:
        return "skip: the backend does not track memory (like PyTorch's CPU)"
    mod = _module(device)
    gc.collect()
    mod.synchronize()
    base = mod.memory_allocated()
    t = ember.empty(1 << 20, dtype=ember.uint8, device=device)
    assert mod.memory_allocated() >= base + (1 << 20), "allocation not counted"
    assert mod.memory_reserved() >= mod.memory_allocated()
    peak = mod.max_memory_allocated()
    assert peak >= base + (1 << 20)
    del t
    gc.collect()
    assert mod.memory_allocated() == base, "memory not returned when the tensor died"
    assert mod.memory_reserved() >= base + (1 << 20), "freed block not kept in the cache"
    u = ember.empty(1 << 20, dtype=ember.uint8, device=device)   # reuse: reserved stays put
    reserved = mod.memory_reserved()
    del u
    gc.collect()
    mod.empty_cache()
    assert mod.memory_reserved() < reserved, "empty_cache() did not release cached memory"
    mod.reset_peak_memory_stats()
    assert mod.max_memory_allocated() == mod.memory_allocated()


# -- streams and events ---------------------------------------------------------------------------
def events_and_timing(device):
    mod = _module(device)
    start, end = mod.Event(enable_timing=True), mod.Event(enable_timing=True)
    start.record()
    x = ember.ones(256, 256, device=device)
    for _ in range(5):
        x = x * 1.0001
    end.record()
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0.0


def stream_ordering_with_wait_event(device):
    mod = _module(device)
    s1, s2 = mod.Stream(), mod.Stream()
    x = ember.zeros(1000, device=device)
    s1.wait_stream(mod.current_stream())   # x is written on the current stream: order s1 after
    with mod.stream(s1):
        x.add_(1)
        done = mod.Event()
        done.record(s1)
    s2.wait_event(done)
    with mod.stream(s2):
        y = x * 2
    s2.synchronize()
    assert float(y.sum().item() if hasattr(y, "sum") else y.cpu().numpy().sum()) == 2000.0
    mod.synchronize()


# -- RNG ------------------------------------------------------------------------------------------
def rng_reproducible(device):
    if not hasattr(ember, "rand"):
        return "skip: random ops not available"
    ember.manual_seed(1234)
    a = ember.rand(100, device=device).cpu().numpy()
    ember.manual_seed(1234)
    b = ember.rand(100, device=device).cpu().numpy()
    assert np.array_equal(a, b), "manual_seed does not reproduce rand()"
    c = ember.rand(100, device=device).cpu().numpy()
    assert not np.array_equal(b, c), "consecutive draws are equal"


def rng_distributions(device):
    if not hasattr(ember, "randn"):
        return "skip: random ops not available"
    ember.manual_seed(0)
    u = ember.rand(200_000, device=device).cpu().numpy()
    assert 0.0 <= u.min() and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - 0.2887) < 0.01
    n = ember.randn(200_000, device=device).cpu().numpy()
    assert abs(n.mean()) < 0.01 and abs(n.std() - 1.0) < 0.01


# -- views and in-place semantics -----------------------------------------------------------------
def views_share_storage(device):
    base = ember.zeros(4, 6, device=device)
    v = base.t().narrow(0, 1, 2)                   # columns 1..2 of base
    v.add_(5)
    host = base.cpu().numpy()
    assert (host[:, 1:3] == 5).all() and host.sum() == 5 * 8
    assert base._version == v._version == 1
    assert not v.is_contiguous() and v.contiguous().is_contiguous()


# -- error messages -------------------------------------------------------------------------------
def device_mismatch_message(device):
    if device.type == "cpu":
        return "skip: needs a second device type"
    a = ember.ones(3, device=device)
    b = ember.ones(3)
    try:
        a + b
    except RuntimeError as e:
        assert "Expected all tensors to be on the same device, but found at least two " \
               "devices" in str(e) and str(device) in str(e) and "cpu" in str(e), str(e)
    else:
        raise AssertionError("adding tensors on two devices did not raise")
    scalar = ember.tensor(2.0)                     # 0-d CPU tensors act as scalars
    assert (a * scalar).device is device


def unsupported_dtype_message(device):
    backend = registry.get(device.type)
    missing = [d for d in ember._dtype.all_dtypes if d not in backend.dtypes]
    if not missing:
        return "skip: the backend supports every dtype"
    d = missing[0]
    try:
        ember.ones(3, dtype=d, device=device)
    except (TypeError, RuntimeError) as e:
        assert d.name in str(e), str(e)
    else:
        raise AssertionError(f"creating a {d} tensor on {device} did not raise")


SUITES = {
    "device": [device_module_basics, device_string_parsing, set_device_round_trip],
    "copies": [copy_round_trip_all_dtypes, copy_non_contiguous_and_non_blocking,
               copy_between_devices],
    "allocator": [allocator_statistics],
    "streams": [events_and_timing, stream_ordering_with_wait_event],
    "rng": [rng_reproducible, rng_distributions],
    "views": [views_share_storage],
    "errors": [device_mismatch_message, unsupported_dtype_message],
}
