"""Devices as scripts probe them: ember.accelerator, ember.cuda/xpu/mps when not installed,
Tensor.is_<type> flags, and the error of using a device type no backend provides."""
from __future__ import annotations

import json

import pytest

import ember
from ember.runtime.device_types import DeviceNotInstalled

from helpers_plugins import make_dist, run


# -- device types PyTorch knows but nothing here provides ---------------------------------------
@pytest.mark.parametrize("use", [
    lambda: ember.zeros(2).to("xpu"), lambda: ember.zeros(2).to("xpu:0"),
    lambda: ember.zeros(2, device="xpu"), lambda: ember.zeros(2).to(ember.device("xpu", 1)),
    lambda: ember.xpu.synchronize(), lambda: ember.xpu.current_device(),
    lambda: ember.zeros(2).to("mps")])
def test_using_a_device_nothing_provides_says_so(use):
    with pytest.raises(DeviceNotInstalled, match=r"device type '(xpu|mps)' is not installed; "
                                                 r"no ember package provides"):
        use()


def test_not_installed_is_both_runtime_and_assertion_error():
    # PyTorch's CPU build raises AssertionError("Torch not compiled with CUDA enabled")
    with pytest.raises(AssertionError):
        ember.ones(1).to("xpu")
    with pytest.raises(RuntimeError):
        ember.ones(1).to("xpu")
    with pytest.raises(RuntimeError, match="'mps' is not installed; no ember package provides"):
        ember.ones(1).to("mps")


# -- cuda: the built-in backend is installed; without a GPU it says why --------------------------
@pytest.mark.skipif(ember.cuda.is_available(), reason="a CUDA device is present")
@pytest.mark.parametrize("use", [
    lambda: ember.zeros(2).to("cuda"), lambda: ember.zeros(2).to("cuda:0"),
    lambda: ember.zeros(2).cuda(), lambda: ember.zeros(2, device="cuda"),
    lambda: ember.zeros(2).to(ember.device("cuda", 1)), lambda: ember.cuda.synchronize(),
    lambda: ember.cuda.current_device(), lambda: ember.cuda.get_device_name(0)])
def test_using_cuda_without_a_gpu_names_the_reason(use):
    # like a CUDA build of torch on a machine without a driver: a RuntimeError saying why
    reason = ember.cuda.unavailable_reason()
    assert reason
    with pytest.raises(RuntimeError) as raised:
        use()
    assert "'cuda'" in str(raised.value) and reason in str(raised.value)


def test_device_objects_of_known_types_exist_like_torch():
    d = ember.device("cuda:0")
    assert (d.type, d.index, str(d)) == ("cuda", 0, "cuda:0")
    assert ember.device("mps").type == "mps"
    # PyTorch's types in PyTorch's order come first whatever plug-ins are installed
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, "
                                           "opencl, ideep, hip, ve, fpga, maia, xla, lazy, "
                                           "vulkan, mps, meta, hpu, mtia, privateuseone(, .*)? "
                                           "device type at start of device string: nosuch"):
        ember.device("nosuch")


def test_missing_device_modules_probe_like_a_cpu_only_torch():
    # function by function against torch's CPU build: tests/test_device_modules.py
    for name in ("xpu", "mps", "mtia"):
        mod = getattr(ember, name)
        assert mod.is_available() is False
        assert f"'{name}' is not installed" in mod.unavailable_reason()
        assert mod.device_count() == 0
        mod.manual_seed(0)       # seeding is lazy in PyTorch: scripts call it unconditionally
    ember.xpu.manual_seed_all(0)
    ember.xpu.empty_cache()
    assert ember.xpu.memory_allocated() == 0 and ember.xpu.max_memory_allocated() == 0
    assert ember.xpu.is_bf16_supported() is False and ember.xpu.is_initialized() is False
    with pytest.raises(RuntimeError):
        ember.mps.empty_cache()  # torch.mps.empty_cache() raises without the MPS backend
    import ember.cuda as cuda_module  # importable, like torch.cuda
    assert cuda_module is ember.cuda


def test_tensor_device_flags():
    x = ember.zeros(2)
    assert x.is_cpu is True
    for flag in ("is_cuda", "is_xpu", "is_mps", "is_meta", "is_ipu", "is_mtia", "is_maia",
                 "is_vulkan", "is_xla", "is_mkldnn"):
        assert getattr(x, flag) is False, flag
    for method in ("cpu", "cuda", "xpu", "ipu", "mtia"):
        assert callable(getattr(x, method))


def test_flags_on_opencl():
    if not ember.opencl.is_available():
        pytest.skip(ember.opencl.unavailable_reason())
    y = ember.zeros(2, device="opencl")
    assert (y.is_opencl, y.is_cpu, y.is_cuda) == (True, False, False)


# -- ember.accelerator --------------------------------------------------------------------------
def test_accelerator_over_the_installed_backends():
    acc = ember.accelerator.current_accelerator()
    avail = ember.accelerator.is_available()
    names = [n for n in ember._registry.names() if n not in ("cpu", "meta")]
    if not names:
        assert acc is None and not avail
        return
    assert acc is not None and acc.type in names and acc.index is None
    mod = getattr(ember, acc.type)
    assert avail == mod.is_available()
    assert ember.accelerator.device_count() == mod.device_count()
    if avail:
        assert ember.accelerator.current_accelerator(check_available=True) is acc
        i = ember.accelerator.current_device_index()
        assert i == mod.current_device()
        ember.accelerator.set_device_index(i)
        ember.accelerator.set_device_index(f"{acc.type}:{i}")
        ember.accelerator.set_device_index(-1)  # a no-op, as in PyTorch
        with ember.accelerator.device_index(i):
            assert ember.accelerator.current_device_index() == i
        x = ember.ones(3, device=acc) * 2
        ember.accelerator.synchronize()
        assert x.sum().item() == 6.0
        assert ember.get_device_module() is mod
        with pytest.raises(ValueError, match="cuda doesn't match the current accelerator"):
            ember.accelerator.set_device_index("cuda:0")
        with pytest.raises(ValueError, match="Expected a torch.device with a specified index"):
            ember.accelerator.set_device_index(acc.type)


def test_get_device_module():
    assert ember.get_device_module("cpu") is ember.cpu
    assert ember.get_device_module(ember.device("cuda:0")) is ember.cuda
    with pytest.raises(RuntimeError, match="does not have a corresponding module"):
        ember.get_device_module("hip")


def test_no_accelerator_installed(tmp_path):
    out = run('''
        import json, ember
        A = ember.accelerator
        errs = []
        for f in (A.current_device_index, A.synchronize, lambda: A.set_device_index(0)):
            try:
                f()
            except RuntimeError as e:
                errs.append(str(e))
        print(json.dumps([A.is_available(), A.current_accelerator(), A.device_count(),
                          A.memory_allocated(), errs, ember.get_device_module().__name__]))
    ''', tmp_path, EMBER_DISABLE_PLUGIN_AUTOLOAD="1")
    assert out.returncode == 0, out.stderr
    avail, acc, count, mem, errs, mod = json.loads(out.stdout.strip().splitlines()[-1])
    assert (avail, acc, count, mem, mod) == (False, None, 0, 0, "ember.cpu")
    assert errs[:2] == ["Cannot access accelerator device when none is available."] * 2
    assert errs[2] == "Accelerator expected" or "none is available" in errs[2]


FAKE_XPU = '''
from ember.kit import ArrayBackend
from ember.kit.copy import register as register_copies
from ember.kit.factories import register as register_factories
from ember.runtime import hookimpl

class FakeXpu(ArrayBackend):
    name = "xpu"
    cpu_fallback = True
    special = None

    def __init__(self):
        super().__init__()
        register_copies(self)
        register_factories(self)

@hookimpl
def ember_register_backends(registry):
    registry.add(FakeXpu())
'''


def test_a_backend_plugin_replaces_the_missing_module(tmp_path):
    """A plug-in that registers 'xpu' through its entry point: then ember.xpu is its device
    module and the not-installed fallback steps aside (the built-in CUDA backend does the same
    for 'cuda')."""
    make_dist(tmp_path, "ember_fakexpu", {"xpu": "fakexpu_mod"}, {"fakexpu_mod": FAKE_XPU})
    out = run('''
        import json, ember
        import ember.xpu
        x = ember.arange(3.0).xpu()
        print(json.dumps([type(ember.xpu).__name__, ember.xpu.is_available(),
                          ember.xpu.device_count(), str(x.device), x.is_xpu,
                          str(ember.accelerator.current_accelerator()),
                          ember.accelerator.is_available()]))
    ''', tmp_path, EMBER_BACKENDS="cpu,xpu")
    assert out.returncode == 0, out.stderr
    kind, avail, count, dev, is_cuda, acc, acc_avail = json.loads(
        out.stdout.strip().splitlines()[-1])
    assert (kind, avail, count, dev, is_cuda) == ("DeviceModule", True, 1, "xpu:0", True)
    assert (acc, acc_avail) == ("xpu", True)
