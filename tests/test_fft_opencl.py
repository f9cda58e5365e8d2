"""The OpenCL backend's native FFTs against the CPU backend: Stockham lengths (every radix and
mixes), Bluestein lengths (primes, products with large primes), lines in local memory and in
global passes, transforms along every dim of batched tensors, real transforms, gradients, the
plan cache, and that none of it runs on the CPU fallback."""
import warnings

import numpy as np
import pytest

import ember
from ember.runtime import CPUFallbackWarning

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(),
                                reason=f"opencl unavailable: {ember.opencl.unavailable_reason()}")
HAS_FP64 = ember.opencl.is_available() and ember.complex128 in ember.opencl._backend.dtypes
RNG = np.random.default_rng(11)
F = ember.fft


def crand(*shape, dtype=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def same(fn, x, tol):
    """fn on the CPU and on OpenCL (no CPU fallback allowed), compared."""
    cpu = fn(ember.tensor(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CPUFallbackWarning)
        dev = fn(ember.tensor(x, device="opencl"))
    assert dev.device.type == "opencl" and dev.dtype is cpu.dtype and dev.shape == cpu.shape
    ref = cpu.numpy()
    err = np.abs(dev.cpu().numpy() - ref).max() / max(1.0, np.abs(ref).max())
    assert err < tol, err
    return dev


DTYPES = [(np.complex64, 2e-6)] + ([(np.complex128, 1e-13)] if HAS_FP64 else [])


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, 8, 9, 16, 25, 49, 60, 64, 128, 210, 343,
                               1000, 2048, 2401, 4096, 6000])
def test_smooth_lengths(n, dtype, tol):
    same(lambda t: F.fft(t), crand(3, n, dtype=dtype), tol)
    same(lambda t: F.ifft(t, norm="ortho"), crand(2, n, dtype=dtype), tol)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("n", [11, 13, 17, 97, 101, 211, 1009, 2 * 1031, 3 * 4099])
def test_bluestein_lengths(n, dtype, tol):
    same(lambda t: F.fft(t, norm="forward"), crand(2, n, dtype=dtype), tol * 10)
    same(lambda t: F.ifft(t), crand(1, n, dtype=dtype), tol * 10)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_any_dim_of_a_batch(dim):
    x = crand(6, 10, 12)
    same(lambda t: F.fft(t, dim=dim), x, 2e-6)
    same(lambda t: F.ifft(t, n=11, dim=dim), x, 2e-5)


def test_n_dim_and_layouts():
    x = crand(6, 10, 7)
    same(lambda t: F.fftn(t), x, 2e-6)
    same(lambda t: F.fft2(t.transpose(0, 2)), x, 2e-6)
    same(lambda t: F.ifftn(t[:, ::2], dim=(0, 2), norm="ortho"), x, 2e-6)
    same(lambda t: F.fft(t.expand(2, 4, 8, 5)[..., 1:], dim=2), crand(1, 8, 5), 2e-6)


def test_real_transforms():
    r = RNG.standard_normal((4, 9, 10)).astype(np.float32)
    same(lambda t: F.rfft(t), r, 2e-6)
    same(lambda t: F.rfftn(t, dim=(0, 2)), r, 2e-6)
    same(lambda t: F.ihfft(t, n=7), r, 2e-6)
    same(lambda t: F.fft(t, dim=1), r, 2e-6)
    c = crand(4, 9, 6)
    same(lambda t: F.irfft(t), c, 2e-6)
    same(lambda t: F.irfft(t, n=9, dim=1), c, 2e-6)
    same(lambda t: F.irfftn(t, s=(5, 7, 11)), c, 2e-6)
    same(lambda t: F.hfft2(t, norm="ortho"), c, 2e-6)
    same(lambda t: F.ihfftn(t, dim=(1, 2)), r, 2e-6)


def test_gradients_match_the_cpu():
    x = crand(3, 10)
    grads = []
    for dev in ("cpu", "opencl"):
        t = ember.tensor(x, device=dev, requires_grad=True)
        y = F.irfft(F.fft(t) * 2, n=12).sum() + F.rfft(t.real).abs().sum()
        (g,) = ember.autograd.grad([y], [t])
        grads.append(g.cpu().numpy())
    np.testing.assert_allclose(grads[1], grads[0], atol=1e-4)


def test_stft_on_opencl():
    x = RNG.standard_normal((2, 300)).astype(np.float32)
    win = np.hanning(65)[:-1].astype(np.float32)
    spec = same(lambda t: ember.stft(t, 64, window=ember.tensor(win, device=t.device),
                                     return_complex=True), x, 2e-6)
    back = ember.istft(spec, 64, window=ember.tensor(win, device="opencl"), length=300)
    np.testing.assert_allclose(back.cpu().numpy(), x, atol=1e-5)


def test_plan_cache_api():
    cache = ember.backends.opencl.fft_plan_cache
    cache.clear()
    assert cache.size == 0 and cache.max_size == 4096
    x = ember.tensor(crand(2, 30), device="opencl")
    F.fft(x)
    assert cache.size == 1
    F.fft(x * 2)
    assert cache.size == 1                       # same length, dtype, direction, layout
    F.ifft(x)
    assert cache.size == 2                       # the other direction
    F.fft(x, dim=0)
    assert cache.size == 3                       # another length (2), lines not contiguous
    F.fft(ember.tensor(crand(13), device="opencl"))
    assert cache.size >= 5                       # Bluestein: its plan and its length-32 plans
    assert cache[0].size == cache.size
    cache.max_size = 2
    assert cache.size == 2
    F.fft(ember.tensor(crand(12), device="opencl"))
    assert cache.size == 2                       # least recently used went
    cache.max_size = 0
    F.fft(ember.tensor(crand(14), device="opencl"))
    assert cache.size == 0
    with pytest.raises(RuntimeError, match="max_size must be a non-negative integer"):
        cache.max_size = -1
    cache.max_size = 4096
    cache.clear()
    assert cache.size == 0
    with pytest.raises(RuntimeError, match="invalid device index"):
        cache[99]


def test_complex128_needs_fp64():
    if HAS_FP64:
        assert F.fft(ember.tensor(crand(8, dtype=np.complex128), device="opencl")).dtype is \
            ember.complex128
        return
    with pytest.raises(TypeError, match="complex128 is not supported on device.*cl_khr_fp64"):
        ember.tensor(crand(8, dtype=np.complex128), device="opencl")
