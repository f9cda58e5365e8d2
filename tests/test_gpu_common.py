"""The C the GPU backends share (``ember.kit.gpu_common``): written once, used by both.

The header is built here as host C++ with the CUDA dialect (as the CUDA simulator builds the
backend's programs) and checked against an independent numpy Philox4x32-10 and the complex
product computed operation by operation in numpy; that OpenCL and CUDA draw the same numbers from it is tests/test_cuda_fake.py's
``test_random_numbers_equal_the_opencl_backends_bit_for_bit``.
"""
from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ember.kit import gpu_common

from test_opencl_random import philox_ref

REPO = Path(__file__).resolve().parents[1]
HOST_DEFINES = "#define __device__\n#define __forceinline__ inline\n"


def test_no_backend_keeps_its_own_copy():
    # Random123's multipliers and the complex product are written in gpu_common.h only
    copies = []
    for path in (REPO / "backends").rglob("*.py"):
        text = path.read_text()
        if "0xD2511F53" in text or re.search(r"a\.x \* b\.y \+ a\.y \* b\.x", text):
            copies.append(str(path.relative_to(REPO)))
    assert not copies, f"shared GPU C copied into {copies}; use ember.kit.gpu_common"


def test_unknown_dialect_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown dialect 'metal'.*cuda.*opencl"):
        gpu_common.source("metal")


def test_double_helpers_only_with_fp64():
    # an OpenCL device without cl_khr_fp64 cannot compile a program that names double
    assert "#define EMBER_FP64" in gpu_common.source("opencl", fp64=True)
    assert "#define EMBER_FP64" not in gpu_common.source("opencl", fp64=False)


@pytest.fixture(scope="module")
def host_lib(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("g++ is needed to build the shared C as host code")
    d = tmp_path_factory.mktemp("gpu_common")
    src = d / "k.cpp"
    src.write_text(HOST_DEFINES + gpu_common.source("cuda") + gpu_common.source("cuda") + r"""
struct pair { double x, y; };
EMBER_COMPLEX_OPS(cplx, pair)
extern "C" void words(unsigned long long seed, unsigned long long start, long long n,
                      unsigned int* out) {
  for (long long i = 0; i < n; i++) {
    const ember_u4 w = philox_rnd(seed, start + (unsigned long long)i);
    out[4 * i] = w.x; out[4 * i + 1] = w.y; out[4 * i + 2] = w.z; out[4 * i + 3] = w.w;
  }
}
extern "C" void uniforms(const unsigned int* w, long long n, float* f, double* d) {
  for (long long i = 0; i < n; i++) { f[i] = u01f(w[2 * i], 24); d[i] = u01d(w[2 * i], w[2 * i + 1]); }
}
extern "C" void products(const double* a, const double* b, long long n, double* out) {
  for (long long i = 0; i < n; i++) {
    pair x = {a[2 * i], a[2 * i + 1]}, y = {b[2 * i], b[2 * i + 1]};
    pair r = cplx_mul(x, y);
    out[2 * i] = r.x; out[2 * i + 1] = r.y;
  }
}
""")
    lib = d / "k.so"
    # the source is included twice: the guard must keep the second copy out
    subprocess.run(["g++", "-O1", "-ffp-contract=off", "-shared", "-fPIC", "-std=c++14", "-o",
                    str(lib), str(src)], check=True, capture_output=True)
    return ctypes.CDLL(str(lib))


def _ptr(a):
    return a.ctypes.data_as(ctypes.c_void_p)


def test_philox_is_random123s(host_lib):
    seed, start, n = 2 ** 40 + 12345, 2 ** 33 - 5, 64
    out = np.zeros((n, 4), np.uint32)
    host_lib.words(ctypes.c_ulonglong(seed), ctypes.c_ulonglong(start), ctypes.c_longlong(n),
                   _ptr(out))
    ctr = np.arange(start, start + n, dtype=np.uint64)
    c = np.stack([ctr & np.uint64(0xFFFFFFFF), ctr >> np.uint64(32),
                  np.zeros(n, np.uint64), np.zeros(n, np.uint64)], axis=1)
    np.testing.assert_array_equal(out, philox_ref((seed & 0xFFFFFFFF, seed >> 32), c))


def test_uniforms_keep_the_top_bits(host_lib):
    w = np.random.default_rng(0).integers(0, 2 ** 32, (1000, 2), dtype=np.uint32)
    w[0] = 0xFFFFFFFF  # the largest draw stays below 1
    f, d = np.zeros(1000, np.float32), np.zeros(1000, np.float64)
    host_lib.uniforms(_ptr(w), ctypes.c_longlong(1000), _ptr(f), _ptr(d))
    np.testing.assert_array_equal(f, (w[:, 0] >> 8).astype(np.float32) * np.float32(2 ** -24))
    expect = ((w[:, 0] >> 5).astype(np.float64) * 67108864.0 + (w[:, 1] >> 6)) / 2.0 ** 53
    np.testing.assert_array_equal(d, expect)
    assert f.max() < 1 and d.max() < 1


def test_complex_product_rounds_every_operation(host_lib):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(200) + 1j * rng.standard_normal(200)
    b = rng.standard_normal(200) * 1e3 + 1j * rng.standard_normal(200)
    out = np.zeros(200, np.complex128)
    host_lib.products(_ptr(a), _ptr(b), ctypes.c_longlong(200), _ptr(out))
    # each product and sum rounded on its own (no fused multiply-add)
    expect = (a.real * b.real - a.imag * b.imag) + 1j * (a.real * b.imag + a.imag * b.real)
    np.testing.assert_array_equal(out, expect)
    np.testing.assert_allclose(out, a * b, rtol=1e-15)
