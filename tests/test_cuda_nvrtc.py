"""Every hand-written CUDA C program of the CUDA backend compiles with NVRTC (no GPU needed:
the nvidia-cuda-nvrtc-cu12 wheel through cupy's bindings), and the pieces whose exactness the
kernels rely on are checked on the host (the same source built with g++)."""
from __future__ import annotations

import numpy as np
import pytest

from ember_cuda import sources

from helpers_cuda import HostModule, have_compiler

nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc", reason="cupy is not installed (the "
                             "dev extra installs cupy-cuda12x)")


def _nvrtc_version():
    try:
        return nvrtc.getVersion()
    except Exception as e:  # the NVRTC library of the nvidia-cuda-nvrtc-cu12 wheel is missing
        pytest.skip(f"NVRTC cannot be loaded ({e}); pip install nvidia-cuda-nvrtc-cu12")


def _compile(source, arch):
    prog = nvrtc.createProgram(source, "ember.cu", [], [])
    try:
        nvrtc.compileProgram(prog, [f"-arch=compute_{arch}", *sources.OPTIONS])
    except nvrtc.NVRTCError:
        raise AssertionError(nvrtc.getProgramLog(prog)) from None
    return nvrtc.getPTX(prog)


@pytest.mark.parametrize("name", sorted(sources.programs()))
@pytest.mark.parametrize("arch", ["75", "80", "90"])
def test_every_program_compiles_with_nvrtc(name, arch):
    _nvrtc_version()
    ptx = _compile(sources.programs()[name], arch).decode()
    assert f".target sm_{arch}" in ptx
    # every kernel the Python side launches is in the PTX
    import re
    wanted = re.findall(r'extern "C" __global__ void (\w+)\(', sources.programs()[name])
    assert wanted and all(f".entry {k}(" in ptx for k in wanted)


def test_a_compile_error_is_reported_with_the_log():
    _nvrtc_version()
    with pytest.raises(AssertionError, match='error: expected a ";"'):
        _compile('extern "C" __global__ void k(float* x) { x[0] = 1 }', "80")


def test_the_programs_do_not_need_cuda_headers():
    for name, src in sources.programs().items():
        assert "#include" not in src, name


# -- host checks of the exact pieces -----------------------------------------------------------------
HALF_PROBE = r"""
extern "C" __global__ void h2f_all(const unsigned short* h, float* out, long long n) {
  EMBER_LOOP(i, n) out[i] = ember_h2f(h[i]);
}
extern "C" __global__ void f2h_all(const float* x, unsigned short* out, long long n) {
  EMBER_LOOP(i, n) out[i] = ember_f2h(x[i]);
}
"""


@pytest.fixture(scope="module")
def half_module():
    if not have_compiler():
        pytest.skip("g++ is not installed")
    from ember_cuda import kernels_indexing
    return HostModule(kernels_indexing.source() + HALF_PROBE, sources.OPTIONS)


def test_half_to_float_matches_numpy_on_all_65536_values(half_module):
    h = np.arange(1 << 16, dtype=np.uint16)
    out = np.empty(h.shape, np.float32)
    half_module.get_function("h2f_all")((1,), (1,), (h, out, np.int64(h.size)))
    ref = h.view(np.float16).astype(np.float32)
    same = (out.view(np.uint32) == ref.view(np.uint32)) | (np.isnan(out) & np.isnan(ref))
    assert same.all()


def test_float_to_half_rounds_like_numpy(half_module):
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 1 << 32, 400_000, dtype=np.uint64).astype(np.uint32)
    # plus every half value, the midpoints between neighbours (ties to even), the boundaries
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    halves = halves[np.isfinite(halves)]
    s = np.sort(np.unique(halves))
    mids = ((s[1:].astype(np.float64) + s[:-1]) / 2).astype(np.float32)
    extra = np.array([65504, 65519.99, 65520, 1e-8, 2.0 ** -25, 2.0 ** -24, 5.96e-8, -0.0,
                      np.inf, -np.inf, np.nan], np.float32)
    x = np.concatenate([bits.view(np.float32), halves, mids, extra])
    out = np.empty(x.shape, np.uint16)
    half_module.get_function("f2h_all")((1,), (1,), (x, out, np.int64(x.size)))
    with np.errstate(all="ignore"):
        ref = x.astype(np.float16).view(np.uint16)
    nan = np.isnan(x)
    assert (out[~nan] == ref[~nan]).all()
    assert np.isnan(out[nan].view(np.float16)).all()


def test_fused_pointwise_bodies_compile_with_nvrtc():
    """ember.compile's CUDA lowering writes cupy ElementwiseKernel bodies: the same statements
    (a 10-op chain, comparisons with a bool intermediate, float64) compile as CUDA C++."""
    _nvrtc_version()
    import ember
    from ember.compiler import fusion
    from ember_cuda.fusion import standalone_source

    def chain(x, y):
        v = x * 1.5 + 0.5
        v = ember.tanh(v) * v - y
        v = ember.exp(-v.abs()) + ember.sigmoid(v)
        return ember.relu(v) / (1.0 + x * x), ember.where(x > y, ember.sin(x), ember.erf(y))
    kernels = []
    for dtype in (ember.float32, ember.float64):
        captured = []

        def lower(device, kernel, captured=captured):
            captured.append(kernel)
            return None
        f = ember.compile(chain)
        x, y = ember.randn(8, dtype=dtype), ember.randn(8, dtype=dtype)
        f(x, y)
        entry = next(iter(f.cache.values()))
        fusion.fuse(entry.graph, [(tuple(t.shape), t.dtype, t.device) for t in (x, y)], lower)
        kernels += captured
    assert len(kernels) >= 4
    for kernel in kernels:
        ptx = _compile(standalone_source(kernel), "80").decode()
        assert ".entry fused(" in ptx
