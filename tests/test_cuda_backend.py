"""The CUDA backend's logic that needs no GPU: discovery and its reasons, CUDA_VISIBLE_DEVICES,
lazy import, what users see on a machine without CUDA (``ember info``, errors), the NCCL
group's registration."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import ember
from ember_cuda import discovery
from ember_cuda.discovery import Unavailable, parse_visible_devices, probe


# -- CUDA_VISIBLE_DEVICES ---------------------------------------------------------------------------
@pytest.mark.parametrize("value, expected", [
    (None, None), ("", []), ("-1", []), ("0", [0]), ("1,0", [1, 0]), (" 2 , 3 ", [2, 3]),
    ("0,-1,1", [0]), ("0,x,1", [0]), ("1gpu2,2ampere", [1, 2]), ("0,1,0", []),
    ("GPU-abc,GPU-def", ["GPU-abc", "GPU-def"]), ("MIG-1,0", ["MIG-1"]),
])
def test_visible_devices_are_parsed_as_the_cuda_runtime_and_torch_do(value, expected):
    assert parse_visible_devices(value) == expected


# -- probe: each reason, with fakes for cupy, the driver and the environment ---------------------
class _Runtime:
    def __init__(self, count=2, error=None, driver=11040, runtime=12090):
        self._count, self._error, self._driver, self._runtime = count, error, driver, runtime

    def getDeviceCount(self):
        if self._error:
            raise RuntimeError(self._error)
        return self._count

    def driverGetVersion(self):
        return self._driver

    def runtimeGetVersion(self):
        return self._runtime


def _cupy(runtime):
    class cuda:
        pass
    cuda.runtime = runtime

    class cupy:
        __version__ = "14.2.0"
    cupy.cuda = cuda
    return cupy


def _probe(spec=True, cupy=None, env=None, libcuda=True):
    def find_spec(name):
        return object() if spec else None

    def import_module(name):
        if isinstance(cupy, Exception):
            raise cupy
        return cupy or _cupy(_Runtime())

    def load(name):
        if not libcuda:
            raise OSError(f"{name}: cannot open shared object file: No such file or directory")
    return probe(find_spec, import_module, env or {}, load)


def test_no_cupy_says_how_to_install_it():
    with pytest.raises(Unavailable, match=r"cupy is not installed; install .*ember\[cuda\]"):
        _probe(spec=False)


def test_a_broken_cupy_names_the_import_error():
    with pytest.raises(Unavailable, match="cupy is installed but failed to import "
                                          r"\(ImportError: libcudart.so.12"):
        _probe(cupy=ImportError("libcudart.so.12: not found"))


def test_empty_cuda_visible_devices_hides_every_gpu_before_the_driver_is_asked():
    with pytest.raises(Unavailable, match="CUDA_VISIBLE_DEVICES='' hides every GPU"):
        _probe(env={"CUDA_VISIBLE_DEVICES": ""}, libcuda=False)
    with pytest.raises(Unavailable, match="CUDA_VISIBLE_DEVICES='-1' hides every GPU"):
        _probe(env={"CUDA_VISIBLE_DEVICES": "-1"})


def test_no_driver_is_named_as_such():
    with pytest.raises(Unavailable, match=r"cupy 14.2.0 is installed, but there is no NVIDIA "
                                          r"driver: .*libcuda.so.1.*cannot open"):
        _probe(libcuda=False)


def test_an_old_driver_gives_both_cuda_versions():
    rt = _Runtime(error="cudaErrorInsufficientDriver: CUDA driver version is insufficient")
    with pytest.raises(Unavailable, match=r"too old .* supports CUDA 11.4, cupy's runtime needs "
                                          r"CUDA 12.9; update the driver"):
        _probe(cupy=_cupy(rt))


def test_no_device_and_zero_devices():
    rt = _Runtime(error="cudaErrorNoDevice: no CUDA-capable device is detected")
    with pytest.raises(Unavailable, match=r"no CUDA GPU found \(CUDA_VISIBLE_DEVICES '0'\)"):
        _probe(cupy=_cupy(rt), env={"CUDA_VISIBLE_DEVICES": "0"})
    with pytest.raises(Unavailable, match=r"no CUDA GPU found \(CUDA_VISIBLE_DEVICES unset\)"):
        _probe(cupy=_cupy(_Runtime(count=0)))


def test_devices_found():
    assert _probe(cupy=_cupy(_Runtime(count=3))) == 3


# -- on this machine (no GPU) ----------------------------------------------------------------------
def _run(code, **env):
    e = dict(os.environ, **env)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_import_ember_never_imports_cupy():
    out = _run("import sys, ember; x = ember.ones(3) * 2; ember.device('cuda:1'); "
               "print('cupy' in sys.modules, 'ember_cuda' in sys.modules)")
    assert out.split() == ["False", "False"]


def test_unavailable_backend_reason_is_in_ember_info_and_in_errors():
    reason = ember.cuda.unavailable_reason()
    if reason is None:
        pytest.skip("CUDA is available here; this checks the machine without it")
    assert not ember.cuda.is_available() and ember.cuda.device_count() == 0
    with pytest.raises(RuntimeError, match="backend 'cuda' is not available: " + reason[:30]):
        ember.zeros(2).cuda()
    with pytest.raises(RuntimeError, match="not available"):
        ember.zeros(2, device="cuda:1")
    assert ember.zeros(2).is_cuda is False
    assert ember.device("cuda:1").index == 1 and ember.device("cuda").type == "cuda"
    # piped: the plain layout, every value whole on its line
    lines = _run("from ember.cli import main; main(['info'])").splitlines()
    block = lines[lines.index("cuda") + 1:lines.index("cuda") + 3]
    assert block == ["  available: no", f"  reason:    {reason}"], block


def test_hidden_gpus_are_the_reason_when_cuda_visible_devices_is_empty():
    out = _run("import ember; print(ember.cuda.unavailable_reason())", CUDA_VISIBLE_DEVICES="")
    assert ("CUDA_VISIBLE_DEVICES='' hides every GPU" in out or "cupy is not installed" in out)


def test_nccl_is_not_the_default_for_cuda_without_cuda_and_says_why_when_asked():
    if ember.cuda.is_available():
        pytest.skip("CUDA is available here")
    from ember.distributed.backend import Backend, parse_backend_spec, registry
    assert "nccl" in registry.names()
    assert "cuda" not in parse_backend_spec(None)
    factory, devices = registry.get("nccl")
    assert devices == ("cuda",)
    with pytest.raises(RuntimeError, match="the nccl backend needs CUDA, which is unavailable "
                                           "here: "):
        factory(None)
    assert Backend.default_device_backend_map.get("cuda") is None


def test_discovery_module_has_no_top_level_cupy_import():
    import ast
    import inspect
    import ember_cuda.backend as backend_mod
    import ember_cuda.cupy_api as api_mod
    for mod in (discovery, backend_mod, api_mod):
        tree = ast.parse(inspect.getsource(mod))
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        names = {a.name for n in top for a in n.names} | {getattr(n, "module", None) for n in top}
        assert not any(str(x).split(".")[0] in ("cupy", "cupyx") for x in names)
