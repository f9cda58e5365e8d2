"""``torch.svd_lowrank`` and ``torch.pca_lowrank``: randomized low-rank SVD (Halko, Martinsson
and Tropp 2009, algorithms 4.4 and 5.1 — the algorithm of torch's ``_lowrank.py``), written
with ember's matmul, QR and SVD so it runs on every backend and autograd sees through it."""
from __future__ import annotations

from ... import linalg
from ..random import randn

__all__ = ["svd_lowrank", "pca_lowrank"]


def _basis(A, q, niter, M):
    """An orthonormal (m, q) basis approximating the range of ``A - M`` (subspace iteration
    with ``niter`` rounds, re-orthonormalised by QR each time)."""
    R = randn(*A.shape[:-2], A.shape[-1], q, dtype=A.dtype, device=A.device)

    def times(right, adjoint=False):
        X, Mx = (A.mH, None if M is None else M.mH) if adjoint else (A, M)
        Y = X.matmul(right)
        return Y if Mx is None else Y - Mx.matmul(right)
    Q = linalg.qr(times(R)).Q
    for _ in range(niter):
        Q = linalg.qr(times(Q, adjoint=True)).Q
        Q = linalg.qr(times(Q)).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """``(U, S, V)`` with ``A - M ≈ U diag(S) V^H``, of rank ``q`` (random: seed with
    ``ember.manual_seed`` to repeat)."""
    q = 6 if q is None else int(q)
    niter = 2 if niter is None else int(niter)
    m, n = A.shape[-2:]
    if not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if niter < 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if M is not None:
        M = M.broadcast_to(A.shape)
    wide = m < n
    if wide:
        A = A.mH
        M = None if M is None else M.mH
    Q = _basis(A, q, niter, M)
    B = Q.mH.matmul(A)
    if M is not None:
        B = B - Q.mH.matmul(M)
    U, S, Vh = linalg.svd(B, full_matrices=False)
    U, V = Q.matmul(U), Vh.mH
    return (V, S, U) if wide else (U, S, V)


def pca_lowrank(A, q=None, center=True, niter=2):
    """``(U, S, V)`` of the principal components of ``A`` (rows are samples), centred over
    the rows unless ``center=False``."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not (isinstance(q, int) and 0 <= q <= min(m, n)):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return svd_lowrank(A, q, niter=niter)
    return svd_lowrank(A - A.mean(-2, keepdim=True), q, niter=niter)
