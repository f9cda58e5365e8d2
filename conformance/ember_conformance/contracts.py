"""Contract suites: device API, copies, allocator, streams/events, RNG, views, error messages.

Each case is a function ``case(device)`` that raises ``ContractViolation`` (an AssertionError
saying what was expected and what happened) or any other exception on a violation, returns None
on success, or the string "skip: why" when it does not apply. On a data-less device
(``Backend.has_data`` False, as meta) the cases that read values back skip, and the view case
checks what metadata shows.
"""
from __future__ import annotations

import gc

import numpy as np

import ember
from ember.runtime.registry import registry


class ContractViolation(AssertionError):
    """A contract case's finding: what was expected and what happened."""


def expect(condition, expected: str, got) -> None:
    """Raise ContractViolation("expected <expected>, got <got>") unless ``condition``."""
    if not condition:
        raise ContractViolation(f"expected {expected}, got {got}")


def expect_equal(what: str, actual, wanted) -> None:
    if not _equal(actual, wanted):
        raise ContractViolation(f"expected {what} == {wanted!r}, got {actual!r}")


def _equal(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b, equal_nan=True)
    return a == b


def _module(device):
    return getattr(ember, device.type)


def _no_values(device):
    """The skip of a case that reads values back, on a device that holds none; else None."""
    if getattr(registry.get(device.type), "has_data", True):
        return None
    return f"skip: {device.type} holds no data (has_data False): no values to read back"


# -- device module --------------------------------------------------------------------------------
def device_module_basics(device):
    mod = _module(device)
    expect(mod.is_available(), f"ember.{device.type}.is_available() to be True",
           f"False ({registry.unavailable_reason(device.type)})")
    n = mod.device_count()
    expect(n >= 1, f"ember.{device.type}.device_count() >= 1", n)
    current = mod.current_device()
    expect(0 <= current < n, f"0 <= current_device() < device_count() = {n}", current)
    mod.synchronize()


def device_string_parsing(device):
    name = device.type
    d = ember.device(f"{name}:1")
    expect_equal(f"(device('{name}:1').type, .index)", (d.type, d.index), (name, 1))
    expect_equal(f"str(device('{name}:1'))", str(d), f"{name}:1")
    expect(ember.device(name, 1) is d, f"device({name!r}, 1) to be the same object as "
           f"device('{name}:1')", "a different object")
    for bad in (f"{name}:-1", f"{name}:x", f"{name}:1:2"):
        try:
            ember.device(bad)
        except RuntimeError:
            continue
        except Exception as e:
            raise ContractViolation(f"expected device({bad!r}) to raise RuntimeError, got "
                                    f"{type(e).__name__}: {e}") from None
        raise ContractViolation(f"expected device({bad!r}) to raise RuntimeError, got no error")


def set_device_round_trip(device):
    mod = _module(device)
    prev = mod.current_device()
    with mod.device(device.index or 0):
        expect_equal(f"current_device() inside `with ember.{device.type}.device("
                     f"{device.index or 0})`", mod.current_device(), device.index or 0)
    expect_equal("current_device() after the with-block (restored)", mod.current_device(), prev)


# -- copies ---------------------------------------------------------------------------------------
def copy_round_trip_all_dtypes(device):
    if _no_values(device):
        return _no_values(device)
    backend = registry.get(device.type)
    rng = np.random.default_rng(0)
    for dt in ember._dtype.all_dtypes:
        if dt not in backend.dtypes or dt.np is None:
            continue
        host = (rng.standard_normal((3, 5)) * 10).astype(dt.np)
        t = ember.tensor(host, device=device)
        expect(t.device is device and t.dtype is dt, f"ember.tensor(<{dt} array>, device="
               f"{device}) on {device} as {dt}", f"{t.device}, {t.dtype}")
        back = t.cpu().numpy()
        expect(back.dtype == host.dtype, f"{dt} to come back as numpy {host.dtype}", back.dtype)
        expect(np.array_equal(back, host, equal_nan=True), f"{dt} values to survive a round "
               f"trip to {device}", f"{int((back != host).sum())} of {host.size} values changed "
               f"(first: {back.reshape(-1)[np.argmax(back != host)]!r} for "
               f"{host.reshape(-1)[np.argmax(back != host)]!r})")


def copy_non_contiguous_and_non_blocking(device):
    if _no_values(device):
        return _no_values(device)
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = ember.tensor(host).t()                      # a transposed CPU view
    moved = t.to(device, non_blocking=True)
    _module(device).synchronize()
    got = moved.cpu().numpy()
    expect_equal("a transposed CPU view moved with .to(device, non_blocking=True)", got, host.T)
    dst = ember.zeros(6, 4, device=device)
    dst.copy_(t)                                    # cross-device copy_ into a device tensor
    expect_equal("dst.copy_(<transposed CPU view>)", dst.cpu().numpy(), host.T)


def copy_between_devices(device):
    mod = _module(device)
    if mod.device_count() < 2:
        return "skip: one device"
    other = ember.device(device.type, 1 - (device.index or 0))
    t = ember.arange(10, device=device)
    u = t.to(other)
    expect(u.device is other, f"t.to({other}) on {other}", u.device)
    expect_equal(f"t.to({other}).tolist()", u.tolist(), list(range(10)))


# -- allocator ------------------------------------------------------------------------------------
def allocator_statistics(device):
    backend = registry.get(device.type)
    alloc = backend.allocator(device.index or 0)
    if alloc is None:
        return "skip: the backend does not track memory (like PyTorch's CPU)"
    mod = _module(device)
    mib = 1 << 20
    gc.collect()
    mod.synchronize()
    base = mod.memory_allocated()
    t = ember.empty(mib, dtype=ember.uint8, device=device)
    expect(mod.memory_allocated() >= base + mib, f"memory_allocated() >= {base + mib} after a "
           f"1 MiB empty() (was {base})", mod.memory_allocated())
    expect(mod.memory_reserved() >= mod.memory_allocated(), f"memory_reserved() >= "
           f"memory_allocated() = {mod.memory_allocated()}", mod.memory_reserved())
    peak = mod.max_memory_allocated()
    expect(peak >= base + mib, f"max_memory_allocated() >= {base + mib}", peak)
    del t
    gc.collect()
    expect_equal("memory_allocated() once the tensor died (memory returned)",
                 mod.memory_allocated(), base)
    expect(mod.memory_reserved() >= base + mib, f"memory_reserved() >= {base + mib} (the freed "
           f"block kept in the cache)", mod.memory_reserved())
    u = ember.empty(mib, dtype=ember.uint8, device=device)   # reuse: reserved stays put
    reserved = mod.memory_reserved()
    del u
    gc.collect()
    mod.empty_cache()
    expect(mod.memory_reserved() < reserved, f"memory_reserved() < {reserved} after "
           f"empty_cache() (cached memory released)", mod.memory_reserved())
    mod.reset_peak_memory_stats()
    expect_equal("max_memory_allocated() after reset_peak_memory_stats() (= memory_allocated())",
                 mod.max_memory_allocated(), mod.memory_allocated())


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
    expect(end.query(), "Event.query() to be True after Event.synchronize()", False)
    elapsed = start.elapsed_time(end)
    expect(elapsed >= 0.0, "start.elapsed_time(end) >= 0 ms", elapsed)


def stream_ordering_with_wait_event(device):
    if _no_values(device):
        return _no_values(device)
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
    total = float(y.cpu().numpy().sum())
    # x.add_(1) on s1, then y = x * 2 on s2 after s2 waited for s1's event: every y is 2. If the
    # arithmetic itself is wrong (add_ or mul), the op checks fail too: look at them first.
    if total != 2000.0:
        values = sorted(set(y.cpu().numpy().tolist()))[:5]
        raise ContractViolation(
            f"expected y = (zeros(1000).add_(1) on stream s1) * 2 on stream s2 (after "
            f"s2.wait_event(s1's event)) to sum to 2000.0, got {total!r} (distinct values "
            f"{values}); 0s mean s2 ran before s1's add_ (ordering), other values point at the "
            f"add_/mul kernels (see their forward checks)")
    mod.synchronize()


# -- RNG ------------------------------------------------------------------------------------------
def rng_reproducible(device):
    if _no_values(device):
        return _no_values(device)
    if not hasattr(ember, "rand"):
        return "skip: random ops not available"
    ember.manual_seed(1234)
    a = ember.rand(100, device=device).cpu().numpy()
    ember.manual_seed(1234)
    b = ember.rand(100, device=device).cpu().numpy()
    expect(np.array_equal(a, b), "manual_seed(1234) twice to give equal rand(100) draws",
           f"{int((a != b).sum())} of 100 values differ")
    c = ember.rand(100, device=device).cpu().numpy()
    expect(not np.array_equal(b, c), "consecutive rand(100) draws to differ", "equal draws")


def rng_distributions(device):
    if _no_values(device):
        return _no_values(device)
    if not hasattr(ember, "randn"):
        return "skip: random ops not available"
    ember.manual_seed(0)
    u = ember.rand(200_000, device=device).cpu().numpy()
    expect(0.0 <= u.min() and u.max() < 1.0, "rand() in [0, 1)",
           f"min {u.min()!r}, max {u.max()!r}")
    expect(abs(u.mean() - 0.5) < 0.01 and abs(u.std() - 0.2887) < 0.01,
           "rand(200000) mean 0.5 ± 0.01 and std 0.2887 ± 0.01",
           f"mean {u.mean():.4f}, std {u.std():.4f}")
    n = ember.randn(200_000, device=device).cpu().numpy()
    expect(abs(n.mean()) < 0.01 and abs(n.std() - 1.0) < 0.01,
           "randn(200000) mean 0 ± 0.01 and std 1 ± 0.01",
           f"mean {n.mean():.4f}, std {n.std():.4f}")


# -- views and in-place semantics -----------------------------------------------------------------
def views_share_storage(device):
    base = ember.zeros(4, 6, device=device)
    v = base.t().narrow(0, 1, 2)                   # columns 1..2 of base
    v.add_(5)
    if _no_values(device) is None:
        host = base.cpu().numpy()
        expected = np.zeros((4, 6), np.float32)
        expected[:, 1:3] = 5
        expect_equal("base after base.t().narrow(0, 1, 2).add_(5) (the view writes through)",
                     host, expected)
    expect(base._version == v._version == 1, "version counter 1 on the base and the view after "
           "one in-place op", f"base {base._version}, view {v._version}")
    expect(not v.is_contiguous(), "the narrowed transpose to be non-contiguous", "contiguous")
    expect(v.contiguous().is_contiguous(), ".contiguous() to give a contiguous tensor",
           "a non-contiguous one")


# -- error messages -------------------------------------------------------------------------------
def device_mismatch_message(device):
    if device.type == "cpu":
        return "skip: needs a second device type"
    a = ember.ones(3, device=device)
    b = ember.ones(3)
    wanted = (f"a RuntimeError 'Expected all tensors to be on the same device, but found at "
              f"least two devices, {device} and cpu!' from ones(3, device={device}) + ones(3)")
    try:
        a + b
    except RuntimeError as e:
        text = str(e)
        expect("Expected all tensors to be on the same device, but found at least two devices"
               in text and str(device) in text and "cpu" in text, wanted, repr(text))
    except Exception as e:
        raise ContractViolation(f"expected {wanted}, got {type(e).__name__}: {e}") from None
    else:
        raise ContractViolation(f"expected {wanted}, got no error")
    scalar = ember.tensor(2.0)                     # 0-d CPU tensors act as scalars
    out = a * scalar
    expect(out.device is device, f"ones(3, device={device}) * tensor(2.0) (a 0-d CPU tensor "
           f"acts as a scalar) on {device}", out.device)


def unsupported_dtype_message(device):
    backend = registry.get(device.type)
    missing = [d for d in ember._dtype.all_dtypes if d not in backend.dtypes]
    if not missing:
        return "skip: the backend supports every dtype"
    d = missing[0]
    wanted = f"ones(3, dtype={d}, device={device}) to raise TypeError or RuntimeError naming {d}"
    try:
        ember.ones(3, dtype=d, device=device)
    except (TypeError, RuntimeError) as e:
        expect(d.name in str(e), wanted, repr(str(e)))
    else:
        raise ContractViolation(f"expected {wanted}, got no error")


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
