"""What the CUDA backend's first run on a GPU found (an H200, cupy 14.2, 2026-11-30), kept as
regressions on the simulated GPU: each test fails on the code as it was before that run.

* a 0-d upload: ``np.ascontiguousarray`` makes a 0-d array 1-d, and ``cupy.ndarray.set`` refuses
  the shape (1,738 conformance failures);
* elementwise ops split over host threads: each pool thread launched on its own stream (a 1M
  add took 698 us instead of 15);
* attention in cache-sized numpy tiles: thousands of launches per GPT step (318 ms a step
  against 44 with whole-sequence tiles);
* argmax/argmin/max/min gave a later NaN, cupy's ``maximum.at`` rounded a float64 target
  through float32 (so embedding_bag's max indices matched no row), and cuFFT refused a float32 row at a 60-byte offset (vmap's
  per-example slices). (cupyx's ``polygamma`` failing on 0-d input is not reproduced here: the
  simulator's special functions are scipy's; the GPU conformance run checks it.)
"""
from __future__ import annotations

import types

import numpy as np
import pytest

import ember
from ember.kit import attention, parallel, reduction

from helpers_cuda import require_simulator, simulated_backend

require_simulator()

DEV = "simfirst"


@pytest.fixture(scope="module")
def be():
    with simulated_backend(DEV, 1) as backend:
        yield backend


class _Device:
    """An array backend whose values are not on the host, over numpy."""
    values_on_host = False
    xp = np


def test_a_0d_host_array_uploads_as_0d():
    from ember_cuda.cupy_api import CupyAPI

    class DeviceArray:           # cupy.ndarray.set's shape check
        def __init__(self, shape, dtype):
            self.shape, self.dtype = shape, dtype

        def set(self, host, stream=None):
            if host.shape != self.shape:
                raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: "
                                 f"{host.shape}")

    api = CupyAPI.__new__(CupyAPI)
    api.cupy = types.SimpleNamespace(empty=DeviceArray)
    for host in (np.array(1.5), np.arange(6.0).reshape(2, 3).T, np.zeros((2, 0))):
        assert api.from_host(host).shape == host.shape


def test_device_arrays_are_not_split_over_host_threads():
    class Device(_Device):
        _ndarray = np.ndarray
        ieee = staticmethod(lambda f, *args: f(*args))

    a = np.ones(1 << 20, dtype=np.float32)
    ember.set_num_threads(4)
    try:
        assert parallel.ufunc(Device, np.add, a.dtype, a, a) is None
    finally:
        ember.set_num_threads(1)


def test_device_attention_takes_the_whole_sequence_in_one_tile(be):
    bq, bk, chunks = attention._tiling(be, 16, 8, 1, 256, 256)
    assert (bq, bk) == (256, 256) and len(list(chunks)) == 1
    cpu = ember.runtime.registry.get("cpu")
    bq, bk, _ = attention._tiling(cpu, 16, 8, 1, 1024, 1024)
    assert (bq, bk) == (attention.Q_BLOCK, attention.K_BLOCK)


def test_device_attention_agrees_with_the_cpu(be):
    ember.manual_seed(0)
    q, k, v = (ember.randn(2, 4, 40, 8, requires_grad=True) for _ in range(3))
    ref = ember.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref.sum().backward()
    qd, kd, vd = (t.detach().to(DEV).requires_grad_() for t in (q, k, v))
    out = ember.nn.functional.scaled_dot_product_attention(qd, kd, vd, is_causal=True)
    out.sum().backward()
    assert np.allclose(out.cpu().detach().numpy(), ref.detach().numpy(), atol=1e-5)
    for a, b in ((qd, q), (kd, k), (vd, v)):
        assert np.allclose(a.grad.cpu().numpy(), b.grad.numpy(), atol=1e-4)


@pytest.mark.parametrize("axis", [None, 0, 1, 2])
@pytest.mark.parametrize("keepdims", [False, True])
def test_device_argmax_takes_the_first_nan_and_the_first_tie(axis, keepdims):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 5, 4)).astype(np.float32)
    a[rng.random(a.shape) < 0.2] = np.nan
    a[rng.random(a.shape) < 0.2] = 1.0
    for x in (a, a.transpose(2, 0, 1)):
        for f in (np.ndarray.argmax, np.ndarray.argmin):
            got = reduction._first_arg(_Device, f, x, axis, keepdims)
            assert np.array_equal(got, f(x, axis=axis, keepdims=keepdims))


def test_embedding_bag_max_indices_on_a_device(be):
    ember.manual_seed(0)
    w = ember.randn(6, 3, dtype=ember.float64, requires_grad=True)
    idx, off = ember.tensor([1, 2, 0, 3, 3, 5, 5, 4]), ember.tensor([0, 2, 2, 4])
    ref = ember.nn.functional.embedding_bag(idx, w, off, mode="max")
    ref.sum().backward()
    wd = w.detach().to(DEV).requires_grad_()
    out = ember.nn.functional.embedding_bag(idx.to(DEV), wd, off.to(DEV), mode="max")
    out.sum().backward()
    assert np.array_equal(out.cpu().detach().numpy(), ref.detach().numpy())
    assert np.array_equal(wd.grad.cpu().numpy(), w.grad.numpy())


def test_fft_of_a_misaligned_row_is_copied_first(be):
    x = ember.randn(4, 15, device=DEV)
    row = be.native(x[1])                       # 60 bytes past a 16-byte boundary
    assert be._api.device_pointer(row) % 16
    assert be._api.device_pointer(be.fft_operand(row)) % 16 == 0
    y = ember.func.vmap(ember.fft.rfft)(x)
    assert np.allclose(y.cpu().numpy(), np.fft.rfft(x.cpu().numpy()), atol=1e-5)
