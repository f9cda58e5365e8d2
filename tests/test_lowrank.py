"""svd_lowrank / pca_lowrank: exact on low-rank matrices, singular values against numpy,
gradients through the randomized algorithm, errors as torch's."""
from __future__ import annotations

import numpy as np
import pytest

import ember


def _devices():
    try:
        return ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])
    except Exception:  # noqa: BLE001
        return ["cpu"]


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("wide", [False, True])
def test_reconstructs_a_low_rank_matrix(device, wide):
    ember.manual_seed(0)
    A = (ember.randn(40, 6) @ ember.randn(6, 25)).to(device)
    if wide:
        A = A.t()
    U, S, V = ember.svd_lowrank(A, q=8)
    assert U.shape == (A.shape[0], 8) and V.shape == (A.shape[1], 8) and S.shape == (8,)
    assert (U @ ember.diag(S) @ V.mH - A).abs().max().item() < 1e-3
    want = np.linalg.svd(A.cpu().numpy(), compute_uv=False)[:6]
    np.testing.assert_allclose(S.cpu().numpy()[:6], want, rtol=1e-4)


def test_pca_matches_the_centred_svd_and_m_shifts():
    ember.manual_seed(1)
    X = ember.randn(200, 5) * ember.tensor([5.0, 3, 1, 0.1, 0.01]) + 3
    U, S, V = ember.pca_lowrank(X, q=3)
    want = np.linalg.svd(X.numpy() - X.numpy().mean(0), compute_uv=False)[:3]
    np.testing.assert_allclose(S.numpy(), want, rtol=1e-3)
    M = X.mean(0, keepdim=True)
    _, S2, _ = ember.svd_lowrank(X, q=3, M=M)
    np.testing.assert_allclose(S2.numpy(), want, rtol=1e-3)


def test_gradients_flow_and_errors():
    A = ember.randn(12, 7, dtype=ember.float64, requires_grad=True)
    ember.manual_seed(2)
    _, S, _ = ember.svd_lowrank(A, q=7, niter=3)
    S.sum().backward()
    U, _, Vh = np.linalg.svd(A.detach().numpy(), full_matrices=False)
    np.testing.assert_allclose(A.grad.numpy(), U @ Vh, atol=1e-6)   # d(nuclear norm)/dA
    with pytest.raises(ValueError, match=r"q\(=9\) must be non-negative integer"):
        ember.pca_lowrank(ember.randn(5, 8), q=9)
    with pytest.raises(ValueError, match="niter"):
        ember.svd_lowrank(ember.randn(5, 8), q=2, niter=-1)
