"""Decompositions and solvers on the CUDA backend run on the device (cuSOLVER and cuBLAS's
batched LU through cupy), checked on the simulated GPU: values against numpy, PyTorch's
``info`` for singular and indefinite matrices, and no host synchronization (the host LAPACK
path they replace copied every operand to the host and back)."""
from __future__ import annotations

import numpy as np
import pytest

import ember

from helpers_cuda import require_simulator, simulated_backend

require_simulator()

DEV = "simlinalg"
L = ember.linalg


@pytest.fixture(scope="module")
def be():
    with simulated_backend(DEV, 1) as backend:
        yield backend


def _mats(seed=0, shape=(3, 5, 5)):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    return a, a @ np.swapaxes(a, -1, -2) + 5 * np.eye(shape[-1])


def _no_sync(be, fn, allowed=0):
    sim = be._api.sim
    before = sim.syncs
    out = fn()
    assert sim.syncs - before == allowed, "a host round trip"
    return out


def _one_sync(be, fn):
    # svd reads one value back to refuse NaN input (ops/linalg/nonfinite.py), as torch.linalg.svd
    # synchronizes on CUDA to check its result (its docs say so)
    return _no_sync(be, fn, allowed=1)


def test_cholesky_qr_eigh_svd_on_the_device(be):
    a0, s0 = _mats()
    a, s = ember.tensor(a0, device=DEV), ember.tensor(s0, device=DEV)
    c, info = _no_sync(be, lambda: L.cholesky_ex(s))
    np.testing.assert_allclose(c.cpu().numpy(), np.linalg.cholesky(s0), atol=1e-12)
    assert info.cpu().tolist() == [0, 0, 0]
    u = _no_sync(be, lambda: L.cholesky_ex(s, upper=True)[0])
    np.testing.assert_allclose(u.cpu().numpy(), np.swapaxes(np.linalg.cholesky(s0), -1, -2),
                               atol=1e-12)
    q, r = _no_sync(be, lambda: L.qr(a))
    np.testing.assert_allclose((q @ r).cpu().numpy(), a0, atol=1e-12)
    assert np.allclose(np.tril(r.cpu().numpy(), -1), 0)
    w, v = _no_sync(be, lambda: L.eigh(s))
    np.testing.assert_allclose(w.cpu().numpy(), np.linalg.eigvalsh(s0), atol=1e-10)
    uu, sv, vh = _one_sync(be, lambda: L.svd(a, full_matrices=False))
    np.testing.assert_allclose(sv.cpu().numpy(), np.linalg.svd(a0, compute_uv=False),
                               atol=1e-10)
    np.testing.assert_allclose((uu * sv.unsqueeze(-2) @ vh).cpu().numpy(), a0, atol=1e-10)


def test_lu_det_solve_inv_on_the_device(be):
    a0, _ = _mats(1)
    rng = np.random.default_rng(2)
    b0 = rng.standard_normal((3, 5, 2))
    a, b = ember.tensor(a0, device=DEV), ember.tensor(b0, device=DEV)
    lu, piv, info = _no_sync(be, lambda: L.lu_factor_ex(a))
    want_lu, want_piv = L.lu_factor(ember.tensor(a0))
    np.testing.assert_allclose(lu.cpu().numpy(), want_lu.numpy(), atol=1e-12)
    assert piv.cpu().tolist() == want_piv.tolist() and info.cpu().tolist() == [0, 0, 0]
    np.testing.assert_allclose(_no_sync(be, lambda: L.det(a)).cpu().numpy(),
                               np.linalg.det(a0), rtol=1e-10)
    sign, logabs = _no_sync(be, lambda: L.slogdet(a))
    ws, wl = np.linalg.slogdet(a0)
    np.testing.assert_allclose(sign.cpu().numpy(), ws)
    np.testing.assert_allclose(logabs.cpu().numpy(), wl, rtol=1e-12)
    x, info = _no_sync(be, lambda: L.solve_ex(a, b))
    np.testing.assert_allclose(x.cpu().numpy(), np.linalg.solve(a0, b0), atol=1e-10)
    xr = _no_sync(be, lambda: L.solve_ex(a, b.mT, left=False)[0])
    np.testing.assert_allclose((xr @ a).cpu().numpy(), np.swapaxes(b0, -1, -2), atol=1e-10)
    inv, _ = _no_sync(be, lambda: L.inv_ex(a))
    np.testing.assert_allclose(inv.cpu().numpy(), np.linalg.inv(a0), atol=1e-10)
    xs = _no_sync(be, lambda: L.lu_solve(lu, piv, b))
    np.testing.assert_allclose(xs.cpu().numpy(), np.linalg.solve(a0, b0), atol=1e-10)
    xa = L.lu_solve(lu, piv, b, adjoint=True)
    np.testing.assert_allclose(xa.cpu().numpy(),
                               np.linalg.solve(np.swapaxes(a0, -1, -2), b0), atol=1e-10)
    up = ember.triu(a) + 4 * ember.eye(5, device=DEV, dtype=ember.float64)
    xt = _no_sync(be, lambda: L.solve_triangular(up, b, upper=True))
    np.testing.assert_allclose((up @ xt).cpu().numpy(), b0, atol=1e-10)


def test_singular_and_indefinite_matrices_report_info_without_a_host_read(be):
    sing = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 3.0]]])
    indef = np.array([[[1.0, 0.0], [0.0, -1.0]], [[4.0, 0.0], [0.0, 9.0]]])
    a, s = ember.tensor(sing, device=DEV), ember.tensor(indef, device=DEV)
    _, info = _no_sync(be, lambda: L.cholesky_ex(s))
    assert info.cpu().tolist() == L.cholesky_ex(ember.tensor(indef))[1].tolist() == [2, 0]
    _, _, info = _no_sync(be, lambda: L.lu_factor_ex(a))
    assert info.cpu().tolist() == L.lu_factor_ex(ember.tensor(sing))[2].tolist() == [2, 0]
    _, info = _no_sync(be, lambda: L.solve_ex(a, ember.ones(2, 2, 1, device=DEV,
                                                            dtype=ember.float64)))
    assert info.cpu().tolist() == [2, 0]
    assert L.det(a).cpu().tolist() == pytest.approx([0.0, 6.0])
    with pytest.raises(L.LinAlgError, match="not positive-definite"):
        L.cholesky(s)                    # the checking op reads info, as PyTorch's does
