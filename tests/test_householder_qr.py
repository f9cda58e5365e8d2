"""torch.geqrf / torch.ormqr against torch (LAPACK), on every backend, with ormqr's gradient."""
from __future__ import annotations

import numpy as np
import pytest

import ember

SHAPES = [(5, 3), (3, 5), (4, 4), (2, 6, 4)]


def _devices():
    try:
        return ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])
    except Exception:  # noqa: BLE001
        return ["cpu"]


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("shape", SHAPES)
def test_geqrf_and_ormqr_match_lapack(device, shape):
    torch = pytest.importorskip("torch")
    dtype = ember.float64 if device == "cpu" else ember.float32
    A = np.random.default_rng(0).standard_normal(shape).astype(dtype.np)
    a, tau = ember.geqrf(ember.tensor(A, device=device))
    ta, ttau = torch.geqrf(torch.tensor(A))
    tol = 1e-12 if dtype is ember.float64 else 1e-5
    np.testing.assert_allclose(a.cpu().numpy(), ta.numpy(), atol=tol)
    np.testing.assert_allclose(tau.cpu().numpy(), ttau.numpy(), atol=tol)
    assert ember.equal(ember.tensor(A, device=device).geqrf()[0].cpu(), a.cpu())
    m = shape[-2]
    for left in (True, False):
        for transpose in (False, True):
            C = np.random.default_rng(1).standard_normal(
                shape[:-2] + ((m, 3) if left else (3, m))).astype(dtype.np)
            got = ember.ormqr(a, tau, ember.tensor(C, device=device), left, transpose)
            want = torch.ormqr(ta, ttau, torch.tensor(C), left, transpose)
            np.testing.assert_allclose(got.cpu().numpy(), want.numpy(), atol=tol * 10)


def test_reconstruction_zero_columns_and_gradients():
    A = ember.randn(6, 4, dtype=ember.float64)
    a, tau = ember.geqrf(A)
    R = a[:4].triu()
    Q = ember.ormqr(a, tau, ember.eye(6, 4, dtype=ember.float64))
    assert (Q @ R - A).abs().max().item() < 1e-12
    z, zt = ember.geqrf(ember.zeros(3, 2))
    assert z.abs().sum().item() == 0 and zt.abs().sum().item() == 0
    C = ember.randn(6, 2, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda c: ember.ormqr(a, tau, c, True, True), (C,))


def test_errors():
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        ember.geqrf(ember.randn(3))
    a, tau = ember.geqrf(ember.randn(4, 3))
    with pytest.raises(RuntimeError, match=r"input.shape\[-2\] \(4\) must be equal"):
        ember.ormqr(a, tau, ember.randn(5, 2))
