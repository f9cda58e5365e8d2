"""lobpcg: extreme eigenpairs against numpy/scipy (standard and generalized, largest and
smallest, with a preconditioner and a tracker), on OpenCL, and torch's argument errors."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import ember


def _matrix(n=60, seed=0):
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    return M @ M.T / n + np.diag(np.arange(n) / 10.0)


@pytest.mark.parametrize("largest", [True, False])
def test_standard_problem_matches_eigh(largest):
    A = _matrix()
    w = np.linalg.eigvalsh(A)
    E, X = ember.lobpcg(ember.tensor(A), k=3, largest=largest)
    want = w[::-1][:3] if largest else w[:3]
    np.testing.assert_allclose(E.numpy(), want, rtol=1e-8)
    assert (ember.tensor(A) @ X - X * E).abs().max().item() < 1e-5
    np.testing.assert_allclose((X.mT @ X).numpy(), np.eye(3), atol=1e-8)


def test_generalized_preconditioned_and_tracked():
    A = _matrix(seed=1)
    Bm = np.eye(60) + np.diag(np.random.default_rng(2).random(60))
    want = sl.eigh(A, Bm, eigvals_only=True)[::-1][:2]
    seen = []
    E, X = ember.lobpcg(ember.tensor(A), k=2, B=ember.tensor(Bm), n=3,
                        iK=ember.tensor(np.diag(1 / np.diag(A))),
                        tracker=lambda state: seen.append(state.converged))
    np.testing.assert_allclose(E.numpy(), want, rtol=1e-7)
    assert seen and seen[-1] == 2
    torch = pytest.importorskip("torch")
    tE, _ = torch.lobpcg(torch.tensor(A), k=2, B=torch.tensor(Bm))
    np.testing.assert_allclose(E.numpy(), tE.numpy(), rtol=1e-6)


def test_opencl_and_errors():
    try:
        if ember.opencl.is_available():
            E, _ = ember.lobpcg(ember.tensor(_matrix(), dtype=ember.float32).to("opencl"), k=2)
            np.testing.assert_allclose(E.cpu().numpy(), np.linalg.eigvalsh(_matrix())[::-1][:2],
                                       rtol=1e-4)
    except AttributeError:
        pass
    with pytest.raises(ValueError, match="smaller than 3 x the number"):
        ember.lobpcg(ember.eye(5, dtype=ember.float64), k=2)
    with pytest.raises(ValueError, match="square matrix"):
        ember.lobpcg(ember.randn(4, 5), k=1)
