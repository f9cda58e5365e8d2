"""Decompositions and solvers on the GPU: cuSOLVER (and cuBLAS's batched LU) through cupy.

* Cholesky: ``potrf`` / ``potrfBatched`` with their per-matrix ``info`` kept on the device
  (``CupyAPI.potrf``), so ``cholesky_ex`` returns PyTorch's info without a host read;
* LU with partial pivoting: cupy's batched ``getrf`` (cuBLAS ``getrfBatched`` for many small
  matrices, cuSOLVER ``getrf`` otherwise) with LAPACK's 1-based pivots and info
  (``CupyAPI.getrf``); ``det``/``slogdet`` are the product of U's diagonal and the pivots' sign,
  computed on the device from it;
* ``solve``/``inv`` are ``cupy.linalg.solve``/``inv`` (batched getrf + getrs), their info the
  LU's; ``lu_solve`` and ``solve_triangular`` are cupyx.scipy.linalg's (getrs, trsm), matrix by
  matrix;
* QR, symmetric eigenproblems and SVD are ``cupy.linalg.qr``/``eigh``/``eigvalsh``/``svd``
  (geqrf + orgqr, syevd/syevj, gesvd/gesvdj).

What cuSOLVER lacks stays on the host (``ember.kit.host``): non-symmetric eigenproblems, LDL,
LU without pivoting or of non-square matrices, Householder products and the matrix
exponential. Empty inputs take the host kernels too (nothing to compute, shapes only).
"""
from __future__ import annotations

import numpy as np

from ember.kit import linalg_lapack as host
from ember.kit.host import on_host


def _host(be, name):
    return getattr(host, name).__get__(on_host(be))


def cholesky_ex(be, A, upper):
    a = be.native(A)
    if a.size == 0:
        return _host(be, "cholesky_ex")(A, upper)
    L, info = be._api.potrf(a)
    if upper:
        L = be.xp.ascontiguousarray(be.xp.conj(be.xp.swapaxes(L, -1, -2)))
    return be.wrap(L, A.device), be.wrap(info.reshape(a.shape[:-2]), A.device)


def lu_factor_ex(be, A, pivot):
    a = be.native(A)
    if not pivot or a.size == 0 or a.shape[-1] != a.shape[-2]:
        return _host(be, "lu_factor_ex")(A, pivot)
    lu, piv, info = be._api.getrf(a)
    dev = A.device
    return be.wrap(lu, dev), be.wrap(piv, dev), be.wrap(info, dev)


def _lu_diagonal(be, a):
    """(diagonal of U, sign of the row permutation) of the LU factorization of ``a``."""
    xp = be.xp
    lu, piv, _ = be._api.getrf(a)
    n = piv.shape[-1]
    swaps = (piv != xp.arange(1, n + 1, dtype=piv.dtype)).sum(axis=-1)
    return xp.diagonal(lu, axis1=-2, axis2=-1), 1 - 2 * (swaps % 2)


def det(be, A):
    a = be.native(A)
    if a.size == 0:
        return _host(be, "det")(A)
    xp = be.xp
    d, perm_sign = _lu_diagonal(be, a)
    return be.wrap(xp.asarray((d.prod(axis=-1) * perm_sign).astype(a.dtype), order="C"),
                   A.device)


def slogdet(be, A):
    a = be.native(A)
    if a.size == 0:
        return _host(be, "slogdet")(A)
    xp = be.xp
    d, perm_sign = _lu_diagonal(be, a)
    mag = xp.abs(d)
    phase = xp.where(mag == 0, 0, d / xp.where(mag == 0, 1, mag))
    sign = phase.prod(axis=-1) * perm_sign
    logabs = xp.log(mag).sum(axis=-1)
    return (be.wrap(xp.asarray(sign.astype(a.dtype), order="C"), A.device),
            be.wrap(xp.asarray(logabs.astype(a.real.dtype), order="C"), A.device))


def solve_ex(be, A, B, left):
    a, b = be.native(A), be.native(B)
    if a.size == 0 or b.size == 0:
        return _host(be, "solve_ex")(A, B, left)
    xp = be.xp
    if not left:   # X A = B  <=>  A^T X^T = B^T
        a, b = xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2)
    x = xp.linalg.solve(a, b)
    if not left:
        x = xp.swapaxes(x, -1, -2)
    _, _, info = be._api.getrf(a)
    return (be.wrap(xp.ascontiguousarray(x.astype(b.dtype, copy=False)), B.device),
            be.wrap(info, A.device))


def inv_ex(be, A):
    a = be.native(A)
    if a.size == 0:
        return _host(be, "inv_ex")(A)
    xp = be.xp
    r = xp.linalg.inv(a)
    _, _, info = be._api.getrf(a)
    return be.wrap(xp.ascontiguousarray(r), A.device), be.wrap(info, A.device)


def _wrapped(be, device, *arrays):
    """Tensors owning C-ordered copies of cupy.linalg's results (some come transposed)."""
    return tuple(be.wrap(be.xp.ascontiguousarray(a), device) for a in arrays)


def _batch_of(xp, *operands):
    """(common batch shape, each operand broadcast to it and flattened to one batch dim):
    ``operands`` are (array, number of core dims) pairs."""
    batch = np.broadcast_shapes(*(a.shape[:a.ndim - core] for a, core in operands))
    return batch, [xp.broadcast_to(a, batch + a.shape[a.ndim - core:])
                   .reshape((-1,) + a.shape[a.ndim - core:]) for a, core in operands]


def lu_solve(be, LU, pivots, B, left, adjoint):
    lu, p, b = be.native(LU), be.native(pivots), be.native(B)
    if lu.size == 0 or b.size == 0:
        return _host(be, "lu_solve")(LU, pivots, B, left, adjoint)
    xp, sl = be.xp, be._api.scipy_linalg
    batch, (flu, fp, fb) = _batch_of(xp, (lu, 2), (p, 1), (b, 2))
    fp = fp - 1
    conj = b.dtype.kind == "c"
    out = xp.empty(fb.shape, dtype=b.dtype)
    for i in range(fb.shape[0]):
        if left:
            out[i] = sl.lu_solve((flu[i], fp[i]), fb[i], trans=2 if adjoint else 0,
                                 check_finite=False)
        elif not adjoint:   # X A = B  <=>  A^T X^T = B^T
            out[i] = sl.lu_solve((flu[i], fp[i]), fb[i].T, trans=1, check_finite=False).T
        else:               # X A^H = B  <=>  A conj(X)^T = conj(B)^T
            rhs = fb[i].conj().T if conj else fb[i].T
            x = sl.lu_solve((flu[i], fp[i]), rhs, trans=0, check_finite=False)
            out[i] = x.conj().T if conj else x.T
    return be.wrap(out.reshape(batch + b.shape[-2:]), B.device)


def solve_triangular(be, A, B, upper, left, unitriangular):
    a, b = be.native(A), be.native(B)
    if a.size == 0 or b.size == 0:
        return _host(be, "solve_triangular")(A, B, upper, left, unitriangular)
    xp, sl = be.xp, be._api.scipy_linalg
    batch, (fa, fb) = _batch_of(xp, (a, 2), (b, 2))
    out = xp.empty(fb.shape, dtype=b.dtype)
    for i in range(fb.shape[0]):
        if left:
            out[i] = sl.solve_triangular(fa[i], fb[i], lower=not upper,
                                         unit_diagonal=bool(unitriangular), check_finite=False)
        else:   # X A = B  <=>  A^T X^T = B^T
            out[i] = sl.solve_triangular(fa[i], fb[i].T, trans=1, lower=not upper,
                                         unit_diagonal=bool(unitriangular),
                                         check_finite=False).T
    return be.wrap(out.reshape(batch + b.shape[-2:]), B.device)


def qr(be, A, mode):
    a = be.native(A)
    if a.size == 0:
        return _host(be, "qr")(A, mode)
    xp = be.xp
    if mode == "r":
        return (be.wrap(xp.zeros((0,), dtype=a.dtype), A.device),
                be.wrap(xp.ascontiguousarray(xp.linalg.qr(a, mode="r")), A.device))
    return _wrapped(be, A.device, *xp.linalg.qr(a, mode=mode))


def eigh(be, A, UPLO):
    a = be.native(A)
    if a.size == 0:
        return _host(be, "eigh")(A, UPLO)
    return _wrapped(be, A.device, *be.xp.linalg.eigh(a, UPLO=UPLO))


def eigvalsh(be, A, UPLO):
    a = be.native(A)
    if a.size == 0:
        return _host(be, "eigvalsh")(A, UPLO)
    return be.wrap(be.xp.ascontiguousarray(be.xp.linalg.eigvalsh(a, UPLO=UPLO)), A.device)


def svd(be, A, full_matrices):
    a = be.native(A)
    if a.size == 0:
        return _host(be, "svd")(A, full_matrices)
    return _wrapped(be, A.device, *be.xp.linalg.svd(a, full_matrices=bool(full_matrices)))


TABLE = {"linalg_cholesky_ex": cholesky_ex, "linalg_lu_factor_ex": lu_factor_ex,
         "linalg_det": det, "linalg_slogdet": slogdet, "linalg_solve_ex": solve_ex,
         "linalg_inv_ex": inv_ex, "linalg_lu_solve": lu_solve,
         "linalg_solve_triangular": solve_triangular, "linalg_qr": qr, "linalg_eigh": eigh,
         "linalg_eigvalsh": eigvalsh, "linalg_svd": svd}
