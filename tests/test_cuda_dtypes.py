"""Half precision on the CUDA backend, on the simulated GPU: bfloat16 is a real dtype (stored as
bfloat16, GEMMs in it through cuBLAS GemmEx with float32 accumulation, other ops computed in
float32 and rounded once), float16 products and convolutions are not upcast, and float32 GEMMs
honour ``set_float32_matmul_precision`` (TF32). The simulator's cuBLAS (``cuda_sim/blas.py``)
reads operands the way cuBLAS does, so the transpose flags, leading dimensions and batch
strides the backend passes are checked against numpy."""
from __future__ import annotations

import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import ember

from helpers_cuda import require_simulator, simulated_backend

require_simulator()

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import tiny_gpt  # noqa: E402

DEV = "simdtype"
BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture(scope="module")
def be():
    with simulated_backend(DEV, 1) as backend:
        yield backend


@pytest.fixture
def gemms(be):
    """The (data type, compute type) of every GemmEx call made while the test runs."""
    calls = []
    real = be._api.gemm

    def spy(*args):
        calls.append((args[-2], args[-1]))
        return real(*args)
    be._api.gemm = spy
    yield calls
    del be._api.gemm


def _np(t):
    return t.cpu().float().numpy() if t.dtype in (ember.bfloat16, ember.float16) else \
        t.cpu().numpy()


def test_bfloat16_is_stored_and_supported(be):
    mod = getattr(ember, DEV)
    assert mod.is_bf16_supported()
    x = ember.tensor([1.0, 2.5, -3.0], dtype=ember.bfloat16, device=DEV)
    assert x.dtype == ember.bfloat16 and be.native(x).dtype == BF16
    assert x.cpu().tolist() == [1.0, 2.5, -3.0]


LAYOUTS = {
    "plain": lambda a, b: (a, b),
    "a transposed": lambda a, b: (a.t().contiguous().t(), b),
    "b transposed": lambda a, b: (a, b.t().contiguous().t()),
    "both sliced": lambda a, b: (ember.cat([a, a], 1)[:, ::2], b[:, :]),
}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_gemm_layouts_match_numpy(be, gemms, dtype, layout):
    dt = getattr(ember, dtype)
    rng = np.random.default_rng(0)
    a0, b0 = rng.standard_normal((6, 5)), rng.standard_normal((5, 3))
    a, b = LAYOUTS[layout](ember.tensor(a0, dtype=dt, device=DEV),
                           ember.tensor(b0, dtype=dt, device=DEV))
    got = _np(a @ b)
    want = a.cpu().double().numpy() @ b.cpu().double().numpy()
    tol = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 4)
    assert gemms and all(d == {"float32": 0, "float16": 2, "bfloat16": 14}[dtype]
                         for d, _ in gemms)


@pytest.mark.parametrize("shapes", [((7,), (7, 4)), ((3, 7), (7,)), ((7,), (7,)),
                                    ((2, 3, 4, 5), (5, 6)), ((4, 5), (2, 3, 5, 6)),
                                    ((2, 1, 4, 5), (3, 5, 6)), ((0, 5), (5, 3)),
                                    ((4, 0), (0, 3))])
def test_batched_and_broadcast_products_match_numpy(be, gemms, shapes):
    rng = np.random.default_rng(1)
    a0, b0 = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    got = (ember.tensor(a0, device=DEV) @ ember.tensor(b0, device=DEV)).cpu().numpy()
    np.testing.assert_allclose(got, a0 @ b0, rtol=1e-5, atol=1e-5)


def test_addmm_rounds_once_in_half_precision(be, gemms):
    rng = np.random.default_rng(2)
    m, x, y = (ember.tensor(rng.standard_normal(s), dtype=ember.float16, device=DEV)
               for s in ((4, 3), (4, 6), (6, 3)))
    got = ember.addmm(m, x, y, beta=0.5, alpha=2.0).cpu().numpy()
    f = [t.cpu().float().numpy().astype(np.float64) for t in (m, x, y)]
    want = (0.5 * f[0] + 2.0 * (f[1] @ f[2])).astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    bias = ember.tensor(rng.standard_normal(3), dtype=ember.float16, device=DEV)
    lin = ember.nn.functional.linear(x, y.t(), bias).cpu().float().numpy()
    np.testing.assert_allclose(lin, f[1] @ f[2] + bias.cpu().float().numpy(), rtol=2e-3,
                               atol=5e-3)


def test_float32_gemms_use_tf32_only_when_the_precision_setting_allows(be, gemms):
    rng = np.random.default_rng(3)
    a0, b0 = rng.standard_normal((32, 64)).astype(np.float32), \
        rng.standard_normal((64, 16)).astype(np.float32)
    a, b = ember.tensor(a0, device=DEV), ember.tensor(b0, device=DEV)
    exact = (a @ b).cpu().numpy()
    try:
        ember.set_float32_matmul_precision("high")
        assert ember.backends.cuda.matmul.allow_tf32
        fast = (a @ b).cpu().numpy()
    finally:
        ember.set_float32_matmul_precision("highest")
    assert [c for _, c in gemms] == [68, 77]
    np.testing.assert_allclose(exact, a0 @ b0, rtol=1e-5, atol=1e-5)
    err = np.abs(fast - a0 @ b0).max() / np.abs(a0 @ b0).max()
    assert 1e-5 < err < 5e-3, err    # TF32's 10-bit mantissa shows, within its bound


def test_float16_convolutions_run_their_gemms_in_float16(be, gemms):
    rng = np.random.default_rng(4)
    x0, w0 = rng.standard_normal((2, 3, 9, 9)), rng.standard_normal((4, 3, 3, 3)) * 0.2
    x = ember.tensor(x0, dtype=ember.float16, device=DEV, requires_grad=True)
    w = ember.tensor(w0, dtype=ember.float16, device=DEV, requires_grad=True)
    y = ember.nn.functional.conv2d(x, w, padding=1, stride=2)
    y.sum().backward()
    assert gemms and all(d == 2 for d, _ in gemms), gemms   # nothing upcast to float32
    xc = ember.tensor(x.detach().cpu().float().numpy(), requires_grad=True)
    wc = ember.tensor(w.detach().cpu().float().numpy(), requires_grad=True)
    yc = ember.nn.functional.conv2d(xc, wc, padding=1, stride=2)
    yc.sum().backward()
    np.testing.assert_allclose(_np(y.detach()), yc.detach().numpy(), rtol=5e-3, atol=1e-2)
    np.testing.assert_allclose(_np(x.grad), xc.grad.numpy(), rtol=5e-3, atol=1e-2)
    np.testing.assert_allclose(_np(w.grad), wc.grad.numpy(), rtol=5e-3, atol=5e-2)


def test_bfloat16_elementwise_ops_round_once_like_the_cpu(be):
    rng = np.random.default_rng(5)
    vals = [rng.standard_normal(50) for _ in range(3)]
    on = [ember.tensor(v, dtype=ember.bfloat16, device=DEV) for v in vals]
    cpu = [ember.tensor(v, dtype=ember.bfloat16) for v in vals]
    for fn in (lambda a, b, c: a * b + c, lambda a, b, c: ember.exp(a) / (b.abs() + 1),
               lambda a, b, c: ember.softmax(ember.stack([a, b, c]), 0),
               lambda a, b, c: (a - b).sum()):
        got, want = fn(*on), fn(*cpu)
        assert got.dtype == ember.bfloat16
        np.testing.assert_allclose(got.cpu().float().numpy(), want.float().numpy(),
                                   rtol=1e-2, atol=1e-2)


def test_a_gpt_step_under_bfloat16_autocast_uses_bfloat16_gemms(be, gemms):
    step, model = tiny_gpt.training_step(ember, DEV, batch=2, ctx=8, vocab=32, dim=16,
                                         layers=1)

    def amp_step():
        with ember.autocast(DEV, dtype=ember.bfloat16):
            return step()
    losses = [amp_step().item() for _ in range(3)]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0]
    assert any(d == 14 for d, _ in gemms)


def test_convolution_columns_are_made_in_chunks_within_the_workspace(be, monkeypatch):
    """A large batch does not materialize every im2col column at once: with a small workspace
    the convolution runs chunk by chunk (more, smaller GEMMs) and gives the same values."""
    rng = np.random.default_rng(6)
    # 20x20 outputs: above kit/convolution's WHOLE_BATCH, so chunks are whole samples' columns
    x0, w0 = rng.standard_normal((6, 3, 20, 20)), rng.standard_normal((4, 3, 3, 3))

    def grads(workspace):
        monkeypatch.setattr(be, "conv_workspace", workspace)
        calls = []
        real = be.matmul
        monkeypatch.setattr(be, "matmul", lambda a, b: calls.append(1) or real(a, b))
        x = ember.tensor(x0, dtype=ember.float32, device=DEV, requires_grad=True)
        w = ember.tensor(w0, dtype=ember.float32, device=DEV, requires_grad=True)
        y = ember.nn.functional.conv2d(x, w, padding=1)
        (y * y).sum().backward()
        return [t.detach().cpu().numpy() for t in (y, x.grad, w.grad)], len(calls)
    whole, n_whole = grads(1 << 40)                         # one chunk: every column at once
    chunked, n_chunked = grads(3 * 9 * 400 * 4 * 2)         # two samples' columns
    assert n_chunked >= 3 * n_whole                         # 3 chunks for each of 3 GEMMs
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
