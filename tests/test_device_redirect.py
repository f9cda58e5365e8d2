"""``ember.runtime.devices.redirect``: one table in the device parser, read by every place a
device or device type enters (what ``ember run --device cuda=...`` sets)."""
import sys

import pytest

import ember
from ember.runtime import devices


@pytest.fixture
def to_cpu():
    devices.redirect("cuda", "cpu")
    yield
    devices.clear_redirects()


def test_devices_parse_to_the_target(to_cpu):
    assert ember.device("cuda") is ember.device("cpu")
    assert ember.device("cuda:1") is ember.device("cpu")      # the cpu has no indices
    assert ember.device("cuda", 0) is ember.device("cpu")
    assert ember.device(0) is ember.device("cpu")             # torch: an int is a CUDA index
    x = ember.ones(2)
    for moved in (x.cuda(), x.to("cuda:0"), ember.zeros(2, device="cuda"),
                  ember.nn.Linear(2, 2).cuda().weight, ember.ones(2).to(device="cuda")):
        assert moved.device is ember.device("cpu")
    assert x.is_cuda and x.is_cpu


def test_device_modules_flags_amp_and_accelerator(to_cpu):
    assert ember.cuda is ember.cpu and sys.modules["ember.cuda"] is ember.cpu
    assert ember.cuda.is_available() and ember.cuda.device_count() == 1
    import ember.cuda.amp as amp
    assert amp is ember.cpu.amp
    assert ember.get_device_module("cuda") is ember.cpu
    assert ember.accelerator.current_accelerator() is ember.device("cpu")
    with ember.autocast("cuda"):       # autocasts the cpu: bfloat16 is its default
        assert ember.is_autocast_enabled("cpu") and ember.is_autocast_enabled("cuda")
        y = ember.nn.functional.linear(ember.ones(2, 3), ember.ones(4, 3))
    assert y.dtype is ember.bfloat16
    assert ember.amp.GradScaler("cuda")._device == "cpu"


def test_undo_restores_the_named_type():
    before = ember.cuda
    devices.redirect("cuda", "cpu")
    devices.clear_redirects()
    assert ember.device("cuda").type == "cuda" and ember.cuda is before
    assert sys.modules["ember.cuda"] is before and not ember.ones(1).is_cuda


@pytest.mark.skipif(not ember.opencl.is_available(), reason="opencl unavailable")
def test_indices_carry_over_to_an_indexed_target():
    devices.redirect("cuda", "opencl")
    try:
        assert ember.device("cuda:1") is ember.device("opencl:1")
        assert str(ember.ones(1).cuda().device) == f"opencl:{ember.opencl.current_device()}"
        assert ember.cuda.device_count() == ember.opencl.device_count()
    finally:
        devices.clear_redirects()


def test_bad_redirects():
    with pytest.raises(RuntimeError, match="Expected one of"):
        devices.redirect("cuda", "nosuch")
    with pytest.raises(ValueError, match="to itself"):
        devices.redirect("cpu", "cpu")
    if not ember.cuda.is_available():
        with pytest.raises(RuntimeError, match="backend 'cuda' is not available"):
            devices.redirect("xpu", "cuda")
    assert devices.redirects() == {}
