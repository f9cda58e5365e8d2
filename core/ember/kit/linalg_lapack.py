"""LAPACK kernels of the decompositions and solvers (``ember.ops.linalg``) for the numpy
backend. scipy's LAPACK wrappers run matrix by matrix for the real dtypes (potrf, geqrf +
orgqr, syevd, gesdd on the transposed, Fortran-ordered views where the algebra allows it, so
nothing is copied in; gesv and getrf + getri from order 16 on): numpy's batched ``linalg``
gufuncs copy every matrix in and out and lose to these loops from small sizes on. numpy's
gufuncs remain for complex matrices, small solves/inverses, eig, det and slogdet; scipy has the
rest (getrf/getrs, trsm, sytrf/sytrs, ``expm``). The wrappers get workspaces for blocked
LAPACK (their default is the unblocked minimum).

A numpy routine that fails on one matrix of a batch (singular, not positive-definite) fails
the whole call without saying which: the kernel then redoes the batch matrix by matrix with
the LAPACK routine that reports ``info``, which is what the op returns. Kernels get operands
already broadcast to one batch shape and return fresh C-ordered arrays.
"""
from __future__ import annotations

import numpy as np

from ..ops.linalg._rules import LinAlgError


def _lapack(name, a):
    """The LAPACK routine ``name`` (getrf, ...) for the dtype of ``a``."""
    import scipy.linalg  # start-up: scipy.linalg (~400 ms)
    return scipy.linalg.get_lapack_funcs((name,), (a,))[0]


def _blas(name, a):
    import scipy.linalg  # start-up: scipy.linalg (~400 ms)
    return scipy.linalg.get_blas_funcs((name,), (a,))[0]


def _c(arr):
    """C order, keeping 0-d arrays 0-d (``np.ascontiguousarray`` makes them 1-d)."""
    return np.asarray(arr, order="C")


def _out(be, arr, dt, device):
    return be.wrap(np.asarray(arr, dtype=dt, order="C"), device)


def _info(be, batch, device, values=None):
    info = np.zeros(batch, dtype=np.int32) if values is None else values
    return be.wrap(np.asarray(info, dtype=np.int32, order="C"), device)


def _nb(a, core=2):
    """The number of matrices (vectors when ``core`` is 1) in ``a``'s batch."""
    return int(np.prod(a.shape[:-core], dtype=np.int64))


def _mats(a):
    """(batch shape, a as (B, m, n), B)."""
    batch = a.shape[:-2]
    nb = int(np.prod(batch, dtype=np.int64))
    flat = a.reshape((nb,) + a.shape[-2:])  # not -1: ambiguous for empty matrices
    return batch, flat, nb


def _converge_error(api, what):
    return LinAlgError(f"{api}: The algorithm failed to converge because the input matrix is "
                       f"ill-conditioned or has too many repeated {what} (error code: 1).")


# -- LU -------------------------------------------------------------------------------------------
def _lu_nopivot(a):
    """Doolittle without pivoting, vectorized over the batch: (LU, info)."""
    a = a.copy()
    B, m, n = a.shape
    info = np.zeros(B, dtype=np.int32)
    with np.errstate(all="ignore"):
        for j in range(min(m, n)):
            piv = a[:, j, j]
            fresh = (piv == 0) & (info == 0)
            info[fresh] = j + 1
            a[:, j + 1:, j] /= piv[:, None]
            a[:, j + 1:, j + 1:] -= a[:, j + 1:, j:j + 1] * a[:, j:j + 1, j + 1:]
    return a, info


def lu_factor_ex(be, A, pivot):
    a = be.native(A)
    batch, flat, nb = _mats(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    if not pivot:
        lu, info = _lu_nopivot(flat)
        piv = np.broadcast_to(np.arange(1, k + 1, dtype=np.int32), (nb, k))
    else:
        lu = np.empty(flat.shape, dtype=a.dtype)
        piv = np.empty((nb, k), dtype=np.int32)
        info = np.zeros(nb, dtype=np.int32)
        if nb and m and n:
            getrf = _lapack("getrf", flat)
            for i in range(nb):
                lu[i], p, info[i] = getrf(flat[i])
                piv[i] = p + 1  # scipy's pivots are 0-based; LAPACK's (and PyTorch's) 1-based
    return (_out(be, lu.reshape(a.shape), a.dtype, A.device),
            be.wrap(_c(piv.reshape(batch + (k,))), A.device),
            _info(be, batch, A.device, info.reshape(batch)))


def pivots_to_permutation(be, pivots, m):
    p = be.native(pivots)
    batch = p.shape[:-1]
    k = p.shape[-1]
    V = p.reshape(_nb(p, 1), k).astype(np.int64) - 1
    nb = V.shape[0]
    P = np.broadcast_to(np.arange(m, dtype=np.int64), (nb, m)).copy()
    rows = np.arange(nb)
    for i in range(k):
        j = V[:, i]
        held = P[rows, i].copy()
        P[rows, i] = P[rows, j]
        P[rows, j] = held
    return be.wrap(P.reshape(batch + (m,)), pivots.device)


def lu_solve(be, LU, pivots, B, left, adjoint):
    lu, p, b = be.native(LU), be.native(pivots), be.native(B)
    batch, flu, nb = _mats(lu)
    fb = b.reshape((_nb(b),) + b.shape[-2:])
    fp = p.reshape(_nb(p, 1), p.shape[-1]) - 1
    out = np.empty(fb.shape, dtype=b.dtype)
    if nb and b.size:
        getrs = _lapack("getrs", flu)
        conj = np.iscomplexobj(b)
        for i in range(nb):
            if left:
                out[i] = getrs(flu[i], fp[i], fb[i], trans=2 if adjoint else 0)[0]
            elif not adjoint:  # X A = B  <=>  A^T X^T = B^T
                out[i] = getrs(flu[i], fp[i], fb[i].T, trans=1)[0].T
            else:              # X A^H = B  <=>  A conj(X)^T = conj(B)^T
                rhs = fb[i].conj().T if conj else fb[i].T
                x = getrs(flu[i], fp[i], rhs, trans=0)[0]
                out[i] = x.conj().T if conj else x.T
    return _out(be, out.reshape(b.shape), b.dtype, B.device)


# -- solve, inverse -------------------------------------------------------------------------------
#: from this order on, solve and inv call gesv / getrf + getri matrix by matrix: numpy's gufuncs
#: (copies in and out, an identity right-hand side for inv) take up to 2.5x longer there, and
#: the loop's Python overhead is paid back
_LOOP_FROM = 16


def solve_ex(be, A, B, left):
    a, b = be.native(A), be.native(B)
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a, b = np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)
    batch = a.shape[:-2]
    info = np.zeros(batch, dtype=np.int32)
    if a.size == 0 or b.size == 0:
        x = np.zeros(b.shape, dtype=b.dtype)
    else:
        x = None
        if a.shape[-1] < _LOOP_FROM:
            try:
                x = np.linalg.solve(a, b)
            except np.linalg.LinAlgError:
                pass
        if x is None:
            x, info = _gesv_each(a, b)
    if not left:
        x = np.swapaxes(x, -1, -2)
    return _out(be, x, b.dtype, B.device), _info(be, batch, A.device, info)


def _gesv_each(a, b):
    _, fa, nb = _mats(a)
    fb = b.reshape((_nb(b),) + b.shape[-2:])
    x = np.empty(fb.shape, dtype=b.dtype)
    info = np.zeros(nb, dtype=np.int32)
    gesv = _lapack("gesv", fa)
    with np.errstate(all="ignore"):
        for i in range(nb):
            _, _, x[i], info[i] = gesv(fa[i], fb[i])
    return x.reshape(b.shape), info.reshape(a.shape[:-2])


def inv_ex(be, A):
    a = be.native(A)
    batch = a.shape[:-2]
    info = np.zeros(batch, dtype=np.int32)
    if a.size == 0:
        r = np.zeros(a.shape, dtype=a.dtype)
    else:
        r = None
        if a.shape[-1] < _LOOP_FROM:
            try:
                r = np.linalg.inv(a)
            except np.linalg.LinAlgError:
                pass
        if r is None:
            r, info = _inv_each(a)
    return _out(be, r, a.dtype, A.device), _info(be, batch, A.device, info)


def _inv_each(a):
    _, fa, nb = _mats(a)
    out = np.empty(fa.shape, dtype=a.dtype)
    info = np.zeros(nb, dtype=np.int32)
    getrf, getri = _lapack("getrf", fa), _lapack("getri", fa)
    lw = max(1, 64 * a.shape[-1])  # room for the blocked getri
    with np.errstate(all="ignore"):
        for i in range(nb):
            lu, piv, info[i] = getrf(fa[i])
            out[i] = getri(lu, piv, lwork=lw)[0] if info[i] == 0 else lu
    return out.reshape(a.shape), info.reshape(a.shape[:-2])


# -- Cholesky -------------------------------------------------------------------------------------
def cholesky_ex(be, A, upper):
    a = be.native(A)
    batch = a.shape[:-2]
    info = np.zeros(batch, dtype=np.int32)
    if a.size == 0:
        r = np.zeros(a.shape, dtype=a.dtype)
    elif np.iscomplexobj(a):
        try:
            r = np.linalg.cholesky(a, upper=bool(upper))
        except np.linalg.LinAlgError:
            r, info = _potrf_each(a, upper)
        else:
            if np.isnan(r).any():
                r, info = _potrf_each(a, upper)
    else:
        r, info = _potrf_real(a, upper)
    return _out(be, r, a.dtype, A.device), _info(be, batch, A.device, info)


def _potrf_real(a, upper):
    """potrf matrix by matrix on the transposed (Fortran-ordered) view: no copy in, and
    faster than numpy's gufunc, whose threaded OpenBLAS calls cost more than the work for
    small matrices. A's lower triangle is the upper one of A^T."""
    _, fa, nb = _mats(a)
    out = np.empty(fa.shape, dtype=a.dtype)
    info = np.zeros(nb, dtype=np.int32)
    potrf = _lapack("potrf", fa)
    for i in range(nb):
        c, info[i] = potrf(fa[i].T, lower=bool(upper), clean=True)
        out[i] = c.T
        if not info[i]:
            info[i] = _nan_pivot(fa[i], out[i], upper)
    if info.any():  # LAPACK stops at the failing minor: the rest of the factor is unspecified
        for i in np.nonzero(info)[0]:
            out[i] = np.triu(out[i]) if upper else np.tril(out[i])
    return out.reshape(a.shape), info.reshape(a.shape[:-2])


def _nan_pivot(a, factor, upper):
    """LAPACK's info for a factor whose diagonal went NaN (OpenBLAS's potrf does not test
    for NaN; reference LAPACK stops there, as PyTorch reports): the order of the first such
    pivot, with ``factor`` left as LAPACK leaves it (the columns from that pivot on hold A's
    triangle, the pivot itself its NaN)."""
    d = np.diagonal(factor)
    bad = np.flatnonzero(np.isnan(d))
    if not bad.size:
        return 0
    j = int(bad[0])
    pivot = factor[j, j]
    if upper:
        factor[j:, j:] = np.triu(a[j:, j:])
        factor[j:, :j] = 0
    else:
        factor[j:, j:] = np.tril(a[j:, j:])
        factor[:j, j:] = 0
    factor[j, j] = pivot
    return j + 1


def _potrf_each(a, upper):
    _, fa, nb = _mats(a)
    out = np.empty(fa.shape, dtype=a.dtype)
    info = np.zeros(nb, dtype=np.int32)
    potrf = _lapack("potrf", fa)
    for i in range(nb):
        c, info[i] = potrf(fa[i], lower=not upper, clean=True)
        out[i] = np.triu(c) if upper else np.tril(c)
        if not info[i]:
            info[i] = _nan_pivot(fa[i], out[i], upper)
    return out.reshape(a.shape), info.reshape(a.shape[:-2])


# -- QR, eigendecompositions, SVD -----------------------------------------------------------------
def qr(be, A, mode):
    a = be.native(A)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    if a.size == 0:
        qm = 0 if mode == "r" else m
        qn = m if mode == "complete" else k
        q = np.zeros((0,) if mode == "r" else batch + (qm, qn), dtype=a.dtype)
        if mode == "complete" and m:
            q = np.broadcast_to(np.eye(m, dtype=a.dtype), batch + (m, m))
        r = np.zeros(batch + ((m if mode == "complete" else k), n), dtype=a.dtype)
        return _out(be, q, a.dtype, A.device), _out(be, r, a.dtype, A.device)
    _, fa, nb = _mats(a)
    rows = m if mode == "complete" else k
    qc = m if mode == "complete" else k
    R = np.empty((nb, rows, n), dtype=a.dtype)
    Q = np.zeros((0,), dtype=a.dtype) if mode == "r" else np.empty((nb, m, qc), dtype=a.dtype)
    geqrf = _lapack("geqrf", fa)
    orgqr = _lapack("ungqr" if np.iscomplexobj(a) else "orgqr", fa)
    # the wrappers' default workspaces are the minimum, which makes LAPACK run unblocked: give
    # them room for blocks of 64 columns (2.4x faster at 512 x 512)
    lw_f, lw_q = max(1, 64 * n), max(1, 64 * qc)
    for i in range(nb):  # geqrf + orgqr per matrix: numpy's gufunc is slower (see cholesky)
        f, tau = geqrf(fa[i], lwork=lw_f)[:2]
        R[i, :min(rows, m)] = f[:rows]
        if mode != "r":
            if qc > n:  # the complete Q of a tall matrix: orgqr over m columns
                f = np.concatenate([f, np.zeros((m, qc - n), dtype=a.dtype)], axis=1)
            Q[i] = orgqr(f[:, :qc], tau, lwork=lw_q)[0]
    R = np.triu(R)  # once for the batch (a mask per matrix costs as much as a 64 x 64 QR)
    if mode != "r":
        Q = Q.reshape(batch + (m, qc))
    return _out(be, Q, a.dtype, A.device), _out(be, R.reshape(batch + (rows, n)), a.dtype,
                                                 A.device)


def _syevd_real(a, UPLO, vecs):
    """syevd matrix by matrix on the transposed view (A^T = A: its upper triangle is A's
    lower one)."""
    _, fa, nb = _mats(a)
    n = a.shape[-1]
    w = np.empty((nb, n), dtype=a.dtype)
    v = np.empty(fa.shape, dtype=a.dtype) if vecs else None
    syevd = _lapack("syevd", fa)
    # without vectors the default workspace (2n + 1) leaves the tridiagonal reduction unblocked
    kw = {} if vecs else {"lwork": 2 * n + 1 + 64 * n}
    for i in range(nb):
        r = syevd(fa[i].T, compute_v=int(vecs), lower=int(UPLO == "U"), **kw)
        if r[-1] > 0:
            raise _converge_error("linalg.eigh", "eigenvalues")
        w[i] = r[0]
        if vecs:
            v[i] = r[1]
    return w.reshape(a.shape[:-1]), (v.reshape(a.shape) if vecs else None)


def eigh(be, A, UPLO):
    a = be.native(A)
    real = a.real.dtype
    if a.size == 0:
        return (be.wrap(np.zeros(a.shape[:-1], dtype=real), A.device),
                _out(be, np.zeros(a.shape, dtype=a.dtype), a.dtype, A.device))
    if not np.iscomplexobj(a):
        w, v = _syevd_real(a, UPLO, True)
        return _out(be, w, real, A.device), _out(be, v, a.dtype, A.device)
    try:
        w, v = np.linalg.eigh(a, UPLO=UPLO)
    except np.linalg.LinAlgError:
        raise _converge_error("linalg.eigh", "eigenvalues") from None
    return _out(be, w, real, A.device), _out(be, v, a.dtype, A.device)


def eigvalsh(be, A, UPLO):
    a = be.native(A)
    real = a.real.dtype
    if a.size == 0:
        return be.wrap(np.zeros(a.shape[:-1], dtype=real), A.device)
    if not np.iscomplexobj(a):
        return _out(be, _syevd_real(a, UPLO, False)[0], real, A.device)
    try:
        w = np.linalg.eigvalsh(a, UPLO=UPLO)
    except np.linalg.LinAlgError:
        raise _converge_error("linalg.eigvalsh", "eigenvalues") from None
    return _out(be, w, real, A.device)


def _complex_dtype(a):
    return np.complex128 if a.dtype in (np.float64, np.complex128) else np.complex64


def eig(be, A):
    a = be.native(A)
    c = _complex_dtype(a)
    if a.size == 0:
        return (be.wrap(np.zeros(a.shape[:-1], dtype=c), A.device),
                be.wrap(np.zeros(a.shape, dtype=c), A.device))
    try:
        w, v = np.linalg.eig(a)
    except np.linalg.LinAlgError:
        raise _converge_error("linalg.eig", "eigenvalues") from None
    return _out(be, w, c, A.device), _out(be, v, c, A.device)


def eigvals(be, A):
    a = be.native(A)
    c = _complex_dtype(a)
    if a.size == 0:
        return be.wrap(np.zeros(a.shape[:-1], dtype=c), A.device)
    try:
        w = np.linalg.eigvals(a)
    except np.linalg.LinAlgError:
        raise _converge_error("linalg.eigvals", "eigenvalues") from None
    return _out(be, w, c, A.device)


def svd(be, A, full_matrices):
    a = be.native(A)
    m, n = a.shape[-2:]
    k = min(m, n)
    batch = a.shape[:-2]
    real = a.real.dtype
    if a.size == 0:
        um, vn = (m, n) if full_matrices else (k, k)
        u = np.zeros(batch + (m, um), dtype=a.dtype)
        vh = np.zeros(batch + (vn, n), dtype=a.dtype)
        if full_matrices:
            u = np.broadcast_to(np.eye(m, dtype=a.dtype), u.shape)
            vh = np.broadcast_to(np.eye(n, dtype=a.dtype), vh.shape)
        return (_out(be, u, a.dtype, A.device), be.wrap(np.zeros(batch + (k,), real), A.device),
                _out(be, vh, a.dtype, A.device))
    if not np.iscomplexobj(a):
        u, s, vh = _gesdd_real(a, full_matrices)
    else:
        try:
            u, s, vh = np.linalg.svd(a, full_matrices=bool(full_matrices))
        except np.linalg.LinAlgError:
            raise _converge_error("linalg.svd", "singular values") from None
    return (_out(be, u, a.dtype, A.device), _out(be, s, real, A.device),
            _out(be, vh, a.dtype, A.device))


def _gesdd_real(a, full_matrices):
    """gesdd matrix by matrix on A^T's Fortran view (no copy in): A^T = V S U^T."""
    batch, fa, nb = _mats(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    um, vn = (m, n) if full_matrices else (k, k)
    U = np.empty((nb, m, um), dtype=a.dtype)
    S = np.empty((nb, k), dtype=a.dtype)
    Vh = np.empty((nb, vn, n), dtype=a.dtype)
    gesdd = _lapack("gesdd", fa)
    for i in range(nb):
        u, s, vt, info = gesdd(fa[i].T, full_matrices=int(bool(full_matrices)))
        if info > 0:
            raise _converge_error("linalg.svd", "singular values")
        U[i], S[i], Vh[i] = vt.T, s, u.T
    return (U.reshape(batch + (m, um)), S.reshape(batch + (k,)), Vh.reshape(batch + (vn, n)))


# -- triangular solve, Householder product, matrix exponential ------------------------------------
def solve_triangular(be, A, B, upper, left, unitriangular):
    a, b = be.native(A), be.native(B)
    _, fa, nb = _mats(a)
    fb = b.reshape((_nb(b),) + b.shape[-2:])
    out = np.empty(fb.shape, dtype=b.dtype)
    if nb and b.size:
        # BLAS trsm, not LAPACK trtrs: a zero on the diagonal gives inf/nan as in PyTorch
        # instead of stopping without a solution
        trsm = _blas("trsm", fa)
        with np.errstate(all="ignore"):
            for i in range(nb):
                out[i] = trsm(1.0, fa[i], fb[i], side=0 if left else 1, lower=not upper,
                              diag=int(bool(unitriangular)))
    return _out(be, out.reshape(b.shape), b.dtype, B.device)


def householder_product(be, A, tau):
    a, t = be.native(A), be.native(tau)
    _, fa, nb = _mats(a)
    ft = t.reshape(_nb(t, 1), t.shape[-1])
    out = np.empty(fa.shape, dtype=a.dtype)
    m, n = a.shape[-2:]
    if nb and m and n:
        orgqr = _lapack("ungqr" if np.iscomplexobj(a) else "orgqr", fa)
        k = t.shape[-1]
        for i in range(nb):
            if k:
                out[i] = orgqr(fa[i], ft[i], lwork=64 * n)[0]
            else:
                out[i] = np.eye(m, n, dtype=a.dtype)
    return _out(be, out.reshape(a.shape), a.dtype, A.device)


def matrix_exp(be, A):
    import scipy.linalg  # start-up: scipy.linalg (~400 ms)
    a = be.native(A)
    if a.size == 0:
        return _out(be, np.zeros(a.shape, dtype=a.dtype), a.dtype, A.device)
    # single precision in double, rounded once: scipy's float32 expm loses ~1e-6 relative per
    # squaring where PyTorch's float32 kernel stays within a few ulps
    wide = {np.dtype(np.float32): np.float64, np.dtype(np.complex64): np.complex128}.get(a.dtype)
    with np.errstate(all="ignore"):
        r = scipy.linalg.expm(a.astype(wide) if wide is not None else a)
    return _out(be, r, a.dtype, A.device)


# -- determinants ---------------------------------------------------------------------------------
def det(be, A):
    a = be.native(A)
    if a.shape[-1] == 0:
        return be.wrap(np.ones(a.shape[:-2], dtype=a.dtype), A.device)
    with np.errstate(all="ignore"):
        return _out(be, np.linalg.det(a), a.dtype, A.device)


def slogdet(be, A):
    a = be.native(A)
    real = a.real.dtype
    if a.shape[-1] == 0:
        return (be.wrap(np.ones(a.shape[:-2], dtype=a.dtype), A.device),
                be.wrap(np.zeros(a.shape[:-2], dtype=real), A.device))
    with np.errstate(all="ignore"):
        sign, lad = np.linalg.slogdet(a)
    sign = np.where(np.isnan(lad), 0, sign)  # LAPACK's NaN pivot has no sign (PyTorch: 0)
    return _out(be, sign, a.dtype, A.device), _out(be, lad, real, A.device)


# -- LDL ------------------------------------------------------------------------------------------
def ldl_factor_ex(be, A, hermitian):
    a = be.native(A)
    batch, fa, nb = _mats(a)
    n = a.shape[-1]
    ld = np.zeros(fa.shape, dtype=a.dtype)
    piv = np.zeros((nb, n), dtype=np.int32)
    info = np.zeros(nb, dtype=np.int32)
    if nb and n:
        name = "hetrf" if hermitian and np.iscomplexobj(a) else "sytrf"
        f = _lapack(name, fa)
        for i in range(nb):
            lu, p, info[i] = f(fa[i], lower=1)
            ld[i] = np.tril(lu)
            piv[i] = p
    return (_out(be, ld.reshape(a.shape), a.dtype, A.device),
            be.wrap(_c(piv.reshape(batch + (n,))), A.device),
            _info(be, batch, A.device, info.reshape(batch)))


def ldl_solve(be, LD, pivots, B, hermitian):
    ld, p, b = be.native(LD), be.native(pivots), be.native(B)
    _, fl, nb = _mats(ld)
    fp = p.reshape(_nb(p, 1), p.shape[-1])
    fb = b.reshape((_nb(b),) + b.shape[-2:])
    out = np.empty(fb.shape, dtype=b.dtype)
    if nb and b.size:
        name = "hetrs" if hermitian and np.iscomplexobj(ld) else "sytrs"
        f = _lapack(name, fl)
        for i in range(nb):
            out[i] = f(fl[i], fp[i], fb[i], lower=1)[0]
    return _out(be, out.reshape(b.shape), b.dtype, B.device)


TABLE = {
    "linalg_lu_factor_ex": lu_factor_ex, "_linalg_pivots_to_permutation": pivots_to_permutation,
    "linalg_lu_solve": lu_solve, "linalg_solve_ex": solve_ex, "linalg_inv_ex": inv_ex,
    "linalg_cholesky_ex": cholesky_ex, "linalg_qr": qr, "linalg_eigh": eigh,
    "linalg_eigvalsh": eigvalsh, "linalg_eig": eig, "linalg_eigvals": eigvals,
    "linalg_svd": svd, "linalg_solve_triangular": solve_triangular,
    "linalg_householder_product": householder_product, "linalg_matrix_exp": matrix_exp,
    "linalg_det": det, "linalg_slogdet": slogdet, "linalg_ldl_factor_ex": ldl_factor_ex,
    "linalg_ldl_solve": ldl_solve,
}
