"""torch's top-level callables ember lacked: set_warn_always / is_warn_always_enabled,
from_file, and the device-generic Stream / Event, against torch."""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _deprecated_add_warnings(lib, calls):
    x = lib.ones(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(calls):
            lib.add(x, 2, x)  # torch's deprecated add(input, alpha, other): TORCH_WARN_ONCE
    return sum("overload of add is deprecated" in str(w.message) for w in caught)


@pytest.fixture
def restore_warn_always():
    yield
    ember.set_warn_always(False)
    torch.set_warn_always(False)


def test_warn_always_repeats_once_per_process_warnings(restore_warn_always):
    for lib in (ember, torch):
        assert lib.is_warn_always_enabled() is False
        _deprecated_add_warnings(lib, 1)            # the one warning is spent
        assert _deprecated_add_warnings(lib, 3) == 0
        lib.set_warn_always(True)
        assert lib.is_warn_always_enabled() is True
        assert _deprecated_add_warnings(lib, 3) == 3
        lib.set_warn_always(False)
        assert _deprecated_add_warnings(lib, 2) == 0


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "data.bin"
    np.arange(10, dtype=np.float32).tofile(path)
    return path


@pytest.mark.parametrize("kwargs", [dict(size=4), dict(), dict(size=2, dtype="float64"),
                                    dict(size=10, shared=False), dict(size=3, dtype="int16")])
def test_from_file_values(data_file, kwargs):
    kw = dict(kwargs)
    name = kw.pop("dtype", None)
    mine = ember.from_file(str(data_file), dtype=getattr(ember, name) if name else None, **kw)
    theirs = torch.from_file(str(data_file), dtype=getattr(torch, name) if name else None, **kw)
    assert str(mine.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


@pytest.mark.parametrize("shared", [False, True])
def test_from_file_writes_reach_the_file_only_when_shared(tmp_path, shared):
    results = []
    for lib in (ember, torch):
        path = tmp_path / f"{lib.__name__}.bin"
        np.arange(6, dtype=np.float32).tofile(path)
        t = lib.from_file(str(path), shared=shared, size=4)
        t[0] = 99
        t.add_(1)
        results.append((t.numpy().copy(), np.fromfile(path, np.float32)))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_from_file_shared_creates_the_file(tmp_path):
    for lib in (ember, torch):
        path = tmp_path / f"new_{lib.__name__}.bin"
        t = lib.from_file(str(path), shared=True, size=5, dtype=lib.float64)
        assert os.path.getsize(path) == 40
        np.testing.assert_array_equal(t.numpy(), np.zeros(5))


def test_from_file_errors_match_torch(data_file, tmp_path):
    for args, kw in [((str(data_file),), dict(size=100)),
                     ((str(tmp_path / "absent.bin"),), dict(size=5, shared=False))]:
        with pytest.raises(RuntimeError) as theirs:
            torch.from_file(*args, **kw)
        with pytest.raises(RuntimeError) as mine:
            ember.from_file(*args, **kw)
        assert str(mine.value) == str(theirs.value)


def test_stream_and_event_default_to_the_current_accelerator():
    s = ember.Stream()
    acc = ember.accelerator.current_accelerator()
    assert s.device.type == (acc.type if acc is not None else "cpu")
    assert isinstance(s, ember.Stream) and isinstance(torch.Stream(), torch.Stream)
    assert isinstance(ember.Event(), ember.Event) and isinstance(torch.Event(), torch.Event)


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_stream_and_event_are_the_backends_own(device):
    if device == "opencl" and not ember.opencl.is_available():
        pytest.skip("no OpenCL device")
    module = getattr(ember, device)
    s = ember.Stream(device)
    assert type(s) is type(module.current_stream())
    assert isinstance(module.current_stream(), ember.Stream)
    assert s.device == ember.device(device, 0) if device != "cpu" else s.device.type == "cpu"
    start, end = ember.Event(device, enable_timing=True), ember.Event(device, enable_timing=True)
    with s:
        start.record()
        y = ember.ones(1000, device=device) * 2
        end.record()
    end.synchronize()
    assert start.query() and end.query()
    assert start.elapsed_time(end) >= 0
    assert float(y.sum()) == 2000.0

