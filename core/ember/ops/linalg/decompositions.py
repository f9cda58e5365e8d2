"""Matrix decompositions: LU (with the pivots-to-permutation op ``lu_unpack`` builds on),
Cholesky, QR, the Hermitian and general eigendecompositions, the SVD and LDL^H. Each op with
its meta and derivative (PyTorch's formulas, gauge checks included) beside its define, then
the public functions (``torch.linalg``'s names, signatures and errors).

Kernel conventions (every output fresh and C-contiguous; ``info`` int32 of the batch shape,
LAPACK's status per matrix):

* ``linalg_lu_factor_ex(A, pivot) -> (LU, pivots, info)``: LAPACK getrf's packed LU and its
  1-based int32 row interchanges (``pivot=False``: pivots are 1..k).
* ``_linalg_pivots_to_permutation(pivots, m) -> perm``: int64 ``perm`` with ``(P^T A)[i] =
  A[perm[i]]``.
* ``linalg_cholesky_ex(A, upper) -> (L, info)``; ``linalg_qr(A, mode) -> (Q, R)`` (mode 'r':
  Q is empty); ``linalg_eigh(A, UPLO) -> (L, Q)`` and ``linalg_eigvalsh(A, UPLO)``
  (ascending); ``linalg_eig(A) -> (L, V)``, ``linalg_eigvals(A)`` (complex);
  ``linalg_svd(A, full_matrices) -> (U, S, Vh)`` (S descending); ``linalg_ldl_factor_ex(A,
  hermitian) -> (LD, pivots, info)`` (LAPACK sytrf's format).
"""
from __future__ import annotations

from ... import _dtype
from ... import return_types as _rt
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import NOT_DIFFERENTIABLE, Derivative
from ...dispatch.grad_mode import is_grad_enabled
from .. import _meta, _primitives, factories as _fac, shape as _shape
from .._util import write_out
from . import nonfinite as _nonfinite
from . import products as _products
from ._rules import (batch_of, check_at_least_2d, check_errors, check_float, check_float_matrices,
                     diag, diag_embed, eye_like, mH, quiet_div, real_part,
                     same_batch_rule)

_INT32 = _dtype.int32


def _outs(out, results, api):
    """Honor a tuple ``out=`` for several results."""
    if out is None:
        return results
    if not isinstance(out, (tuple, list)) or len(out) != len(results):
        raise TypeError(f"{api}(): argument 'out' must be a tuple of {len(results)} Tensors")
    return type(results)(*(write_out(o, r, api) for o, r in zip(out, results)))


def ex_result(r, raise_errors, api, out):
    """What an ``*_ex`` function returns: its results with ``info`` (checked only when the
    caller passed ``check_errors=True``), written to ``out`` when given."""
    if raise_errors:
        check_errors(r.info, api)
    return _outs(out, r, api.removeprefix("torch."))


def _meta_square(api, A):
    s = _meta.shape_of(_meta.tensor_arg(api, A))
    if len(s) < 2 or s[-1] != s[-2]:
        raise RuntimeError(f"{api}: A must be batches of square matrices, got shape {list(s)}")
    return s


def _meta_matrix(api, A):
    s = _meta.shape_of(_meta.tensor_arg(api, A))
    if len(s) < 2:
        raise RuntimeError(f"{api}: The input tensor A must have at least 2 dimensions, got "
                           f"shape {list(s)}")
    return s


# -- LU ---------------------------------------------------------------------------------------
def _lu_factor_meta(A, pivot):
    s = _meta_matrix("linalg.lu_factor_ex", A)
    k = min(s[-2:])
    return (s, A.dtype), (s[:-2] + (k,), _INT32), (s[:-2], _INT32)


def _lu_backward(L_grad, U_grad, P, L, U, pivot):
    """PyTorch's ``linalg_lu_backward``: the gradient of A = P L U from those of L and U."""
    st = _primitives.solve_triangular_op
    m, n = L._shape[-2], U._shape[-1]
    k = min(m, n)
    if m == n:
        gA = (mH(L) @ L_grad).tril(-1) + (U_grad @ mH(U)).triu()
        gA = st(mH(U), gA, False, False, False)
        gA = st(mH(L), gA, True, True, True)
    elif m < n:
        U1, U2g = U.narrow(-1, 0, k), U_grad.narrow(-1, k, n - k)
        gA = mH(L) @ L_grad - U_grad.triu() @ mH(U)
        gA = st(mH(U1), gA.tril(-1), False, False, False)
        gA = _cat([gA + U_grad.narrow(-1, 0, k).triu(), U2g], -1)
        gA = st(mH(L), gA, True, True, True)
    else:
        L1, L2g = L.narrow(-2, 0, k), L_grad.narrow(-2, k, m - k)
        gA = U_grad @ mH(U) - mH(L) @ L_grad.tril(-1)
        gA = st(mH(L1), gA.triu(), True, True, True)
        gA = _cat([gA + L_grad.narrow(-2, 0, k).tril(-1), L2g], -2)
        gA = st(mH(U), gA, False, False, False)
    return P @ gA if pivot else gA


def _cat(ts, dim):
    return _shape.cat(ts, dim)


def _lu_factor_backward(ctx, g, A, pivot):
    LU, pivots, _ = ctx.result
    P, L, U = _unpack(LU, pivots, True, pivot)
    m, n = LU._shape[-2:]
    k = min(m, n)
    gLU = g[0]
    return (_lu_backward(gLU.narrow(-1, 0, k), gLU.narrow(-2, 0, k), P, L, U, pivot),)


lu_factor_ex_op = define("linalg_lu_factor_ex(Tensor A, bool pivot) -> (Tensor LU, Tensor pivots, "
                         "Tensor info)", meta=_lu_factor_meta,
                         derivative=Derivative(_lu_factor_backward, save=("result",),
                                               outputs=(True, False, False), complex_ok=True),
                         doc="LAPACK getrf: packed LU, 1-based int32 pivots, int32 info.")


def _perm_meta(pivots, m):
    s = _meta.shape_of(_meta.tensor_arg("lu_unpack", pivots))
    return s[:-1] + (m,), _dtype.int64


pivots_to_permutation_op = define(
    "_linalg_pivots_to_permutation(Tensor pivots, int m) -> Tensor", meta=_perm_meta,
    derivative=NOT_DIFFERENTIABLE,
    doc="The row permutation (int64, length m) that LAPACK's 1-based interchanges apply.")


def _permutation_matrix(perm, dtype):
    """P with A = P L U, from ``perm`` with (P^T A)[i] = A[perm[i]]."""
    m = perm._shape[-1]
    cols = _fac.arange(m, device=perm.device)
    return perm.unsqueeze(-1).eq(cols).to(dtype).mT


def _unpack(LU, pivots, unpack_data, unpack_pivots):
    m, n = LU._shape[-2:]
    k = min(m, n)
    P = L = U = None
    if unpack_pivots:
        P = _permutation_matrix(pivots_to_permutation_op(pivots, m), LU.dtype)
    if unpack_data:
        L = LU.narrow(-1, 0, k).tril(-1) + eye_like(m, LU, m=k)
        U = LU.narrow(-2, 0, k).triu()
    return P, L, U


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    check_float_matrices("linalg.lu_factor_ex", A)
    r = _rt.linalg_lu_factor_ex(*lu_factor_ex_op(A, bool(pivot)))
    return ex_result(r, check_errors, "torch.linalg.lu_factor_ex", out)


def lu_factor(A, *, pivot=True, out=None):
    check_float_matrices("linalg.lu_factor", A)
    LU, pivots, info = lu_factor_ex_op(A, bool(pivot))
    check_errors(info, "torch.linalg.lu_factor")
    return _outs(out, _rt.linalg_lu_factor(LU, pivots), "linalg.lu_factor")


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    check_at_least_2d("torch.lu_unpack", LU_data, "LU_data")
    if LU_pivots.dtype is not _INT32:
        raise RuntimeError(f"torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           f"torch.int32 dtype. Note: this function is intended to be used with "
                           f"the output produced by torch.linalg.lu_factor, got "
                           f"{LU_pivots.dtype}")
    m, n = LU_data._shape[-2:]
    if LU_pivots._shape != LU_data._shape[:-2] + (min(m, n),):
        raise RuntimeError(f"torch.lu_unpack: Expected LU_pivots.size(-1) == min(m, n) and the "
                           f"batch shapes to match, but got LU_data of shape "
                           f"{list(LU_data._shape)} and LU_pivots of shape "
                           f"{list(LU_pivots._shape)}")
    P, L, U = _unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)
    empty = LU_data.new_zeros((0,))
    r = _rt.lu_unpack(P if P is not None else empty, L if L is not None else empty,
                      U if U is not None else empty)
    return _outs(out, r, "lu_unpack")


def lu(A, *, pivot=True, out=None):
    check_float_matrices("linalg.lu", A)
    LU, pivots, _ = lu_factor_ex_op(A, bool(pivot))
    P, L, U = _unpack(LU, pivots, True, bool(pivot))
    if P is None:
        P = A.new_zeros((0,))
    return _outs(out, _rt.linalg_lu(P, L, U), "linalg.lu")


# -- Cholesky ---------------------------------------------------------------------------------
def _cholesky_meta(A, upper):
    s = _meta_square("linalg.cholesky", A)
    return (s, A.dtype), (s[:-2], _INT32)


def _cholesky_backward(ctx, g, A, upper):
    """Iain Murray's formula (PyTorch's ``cholesky_backward``); ``gL`` need not be lower
    triangular."""
    L = ctx.result[0]
    gL = g[0]
    if upper:
        L, gL = mH(L), mH(gL)
    st = _primitives.solve_triangular_op
    gA = (mH(L) @ gL).tril()
    gA = (gA + mH(gA.tril(-1))) * 0.5
    gA = st(mH(L), gA, True, True, False)
    return (st(L, gA, False, False, False),)


cholesky_ex_op = define("linalg_cholesky_ex(Tensor A, bool upper) -> (Tensor L, Tensor info)",
                        meta=_cholesky_meta,
                        derivative=Derivative(_cholesky_backward, save=("result",),
                                              outputs=(True, False), complex_ok=True),
                        doc="A = L L^H (upper: A = U^H U); info > 0: the order of the leading "
                            "minor that is not positive-definite.")


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    check_float_matrices("linalg.cholesky", A, square=True)
    r = _rt.linalg_cholesky_ex(*cholesky_ex_op(A, bool(upper)))
    return ex_result(r, check_errors, "linalg.cholesky_ex", out)


def cholesky(A, *, upper=False, out=None):
    check_float_matrices("linalg.cholesky", A, square=True)
    L, info = cholesky_ex_op(A, bool(upper))
    check_errors(info, "linalg.cholesky")
    return L if out is None else write_out(out, L, "linalg.cholesky")


# -- QR ---------------------------------------------------------------------------------------
_QR_MODES = ("reduced", "complete", "r")


def _qr_meta(A, mode):
    s = _meta_matrix("linalg.qr", A)
    m, n = s[-2:]
    k = min(m, n)
    b = s[:-2]
    if mode == "r":
        return ((0,), A.dtype), (b + (k, n), A.dtype)
    if mode == "complete":
        return (b + (m, m), A.dtype), (b + (m, n), A.dtype)
    return (b + (m, k), A.dtype), (b + (k, n), A.dtype)


def _qr_backward(ctx, g, A, mode):
    """PyTorch's ``linalg_qr_backward``."""
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
                           "to differentiate through linalg.qr.")
    Q, R = ctx.result
    gQ, gR = g
    m, n = Q._shape[-2], R._shape[-1]
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    st = _primitives.solve_triangular_op
    gA = gR @ mH(R) - mH(Q) @ gQ
    if m >= n:
        X = gA.triu()
        sym = X + mH(X)
        gA = Q @ (sym - diag_embed(real_part(diag(sym)) * 0.5).to(sym.dtype))
        gA = gA + gQ
        return (st(mH(R), gA, False, False, False),)
    X = -gA
    ret = (X - mH(X)).tril()
    if ret.dtype.category == _dtype.COMPLEX:
        ret = ret - diag_embed(diag(ret).imag * 0.5) * 1j
    gA = Q @ ret
    gA = st(mH(R.narrow(-1, 0, m)), gA, False, False, False)
    gA = _cat([gA, _fac.zeros(R._shape[:-1] + (n - m,), dtype=gA.dtype, device=gA.device)], -1)
    return (gA + Q @ gR,)


qr_op = define("linalg_qr(Tensor A, str mode) -> (Tensor Q, Tensor R)", meta=_qr_meta,
               derivative=Derivative(_qr_backward, save=("result",), complex_ok=True),
               doc="Householder QR; mode 'reduced', 'complete' or 'r' (Q empty).")


def qr(A, mode="reduced", *, out=None):
    check_float_matrices("linalg.qr", A)
    if mode not in _QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    return _outs(out, _rt.linalg_qr(*qr_op(A, mode)), "linalg.qr")


# -- Hermitian eigendecomposition -------------------------------------------------------------
def _eigh_meta(A, UPLO):
    s = _meta_square("linalg.eigh", A)
    return (s[:-1], _meta.real_of(A.dtype)), (s, A.dtype)


def _eig_backward_common(gL, gV, L, V, hermitian):
    """PyTorch's ``linalg_eig_backward`` (arXiv:1701.00392 eq. 4.77), with the gauge check:
    a loss that depends on the phase of complex eigenvectors has no derivative."""
    VhgV = mH(V) @ gV
    d = diag(VhgV)
    if V.dtype.category == _dtype.COMPLEX:
        im = d.imag
        if not _allclose_zero(im):
            api = "linalg_eigh_backward" if hermitian else "linalg_eig_backward"
            raise RuntimeError(f"{api}: The eigenvectors in the complex case are specified up "
                               f"to multiplication by e^{{i phi}}. The specified loss function "
                               f"depends on this quantity, so it is ill-defined.")
    if hermitian:
        VhgV = (VhgV - mH(VhgV)) * 0.5
    else:
        VhgV = VhgV - mH(V) @ (V * real_part(d).unsqueeze(-2).to(V.dtype))
    Lc = L.conj()
    n = L._shape[-1]
    E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1) + eye_like(n, Lc)  # 1 on the diagonal
    gA = quiet_div(VhgV, E)
    gA = gA - diag_embed(diag(gA)) + diag_embed(gL.to(gA.dtype))
    if hermitian:
        return V @ (gA @ mH(V))
    return _primitives.solve_op(mH(V), gA @ mH(V), True)[0]


def _allclose_zero(x, tol=1e-2):
    return x.numel() == 0 or bool(x.abs().le(tol).all())


def _eigh_backward(ctx, g, A, UPLO):
    L, V = ctx.result
    return (_eig_backward_common(g[0], g[1], L, V, True),)


eigh_op = define("linalg_eigh(Tensor A, str UPLO) -> (Tensor eigenvalues, Tensor eigenvectors)",
                 meta=_eigh_meta, derivative=Derivative(_eigh_backward, save=("result",),
                                                        complex_ok=True),
                 doc="Eigenvalues ascending (real) and orthonormal eigenvectors of the "
                     "Hermitian matrices whose UPLO triangle A holds.")


def _eigvalsh_meta(A, UPLO):
    s = _meta_square("linalg.eigvalsh", A)
    return s[:-1], _meta.real_of(A.dtype)


def _eigvalsh_backward(ctx, g, A, UPLO):
    _, V = eigh_op(A, UPLO)  # recorded when the caller builds a graph of the gradient
    return (V @ (diag_embed(g.to(V.dtype)) @ mH(V)),)


eigvalsh_op = define("linalg_eigvalsh(Tensor A, str UPLO) -> Tensor", meta=_eigvalsh_meta,
                     derivative=Derivative(_eigvalsh_backward, save=("A",), complex_ok=True,
                                           name="LinalgEighBackward0"),
                     doc="The eigenvalues alone (ascending).")


def _check_uplo(UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


def eigh(A, UPLO="L", *, out=None):
    check_float_matrices("linalg.eigh", A, square=True)
    _check_uplo(UPLO)
    r = _nonfinite.eigh(A, UPLO, lambda a: eigh_op(a, UPLO))
    return _outs(out, _rt.linalg_eigh(*r), "linalg.eigh")


def eigvalsh(A, UPLO="L", *, out=None):
    check_float_matrices("linalg.eigvalsh", A, square=True)
    _check_uplo(UPLO)
    r = _nonfinite.eigh(A, UPLO, lambda a: eigvalsh_op(a, UPLO), mask=(0,))
    return r if out is None else write_out(out, r, "linalg.eigvalsh")


# -- general eigendecomposition ---------------------------------------------------------------
def _complex_of(d):
    if d.category == _dtype.COMPLEX:
        return d
    return _dtype.complex128 if d is _dtype.float64 else _dtype.complex64


def _eig_meta(A):
    s = _meta_square("linalg.eig", A)
    c = _complex_of(A.dtype)
    return (s[:-1], c), (s, c)


def _eig_backward(ctx, g, A):
    L, V = ctx.result
    return (_eig_backward_common(g[0], g[1], L, V, False),)


eig_op = define("linalg_eig(Tensor A) -> (Tensor eigenvalues, Tensor eigenvectors)",
                meta=_eig_meta, derivative=Derivative(_eig_backward, save=("result",),
                                                      complex_ok=True),
                doc="Complex eigenvalues and unit-norm eigenvectors (LAPACK geev).")


def _eigvals_meta(A):
    s = _meta_square("linalg.eigvals", A)
    return s[:-1], _complex_of(A.dtype)


def _eigvals_backward(ctx, g, A):
    _, V = eig_op(A)
    return (_primitives.solve_op(mH(V), g.unsqueeze(-1) * mH(V), True)[0],)


eigvals_op = define("linalg_eigvals(Tensor A) -> Tensor", meta=_eigvals_meta,
                    derivative=Derivative(_eigvals_backward, save=("A",), complex_ok=True,
                                          name="LinalgEigBackward0"),
                    doc="The eigenvalues alone (complex).")


def eig(A, *, out=None):
    check_float_matrices("linalg.eig", A, square=True)
    return _outs(out, _rt.linalg_eig(*eig_op(A)), "linalg.eig")


def eigvals(A, *, out=None):
    check_float_matrices("linalg.eigvals", A, square=True)
    r = eigvals_op(A)
    return r if out is None else write_out(out, r, "linalg.eigvals")


# -- SVD --------------------------------------------------------------------------------------
def _svd_meta(A, full_matrices):
    s = _meta_matrix("linalg.svd", A)
    m, n = s[-2:]
    k = min(m, n)
    b = s[:-2]
    um, vn = (m, n) if full_matrices else (k, k)
    return (b + (m, um), A.dtype), (b + (k,), _meta.real_of(A.dtype)), (b + (vn, n), A.dtype)


def svd_backward(gU, gS, gVh, U, S, Vh):
    """PyTorch's ``svd_backward`` (reduced U, Vh): distinct singular values assumed; a loss
    that depends on the phase of complex singular vectors raises."""
    m, n = U._shape[-2], Vh._shape[-1]
    complex_ = U.dtype.category == _dtype.COMPLEX
    UhgU = mH(U) @ gU
    UhgU = UhgU - mH(UhgU)
    VhgV = Vh @ mH(gVh)
    VhgV = VhgV - mH(VhgV)
    if complex_:
        a, b = diag(UhgU).imag, diag(VhgV).imag
        if not bool(((a + b).abs() <= 1e-2 + 1e-2 * b.abs()).all()):
            raise RuntimeError("svd_backward: The singular vectors in the complex case are "
                               "specified up to multiplication by e^{i phi}. The specified loss "
                               "function depends on this phase term, making it ill-defined.")
    S2 = S * S
    E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye_like(S._shape[-1], S2)  # 1 on the diagonal
    Sc = S.to(U.dtype)
    gA = quiet_div(UhgU * Sc.unsqueeze(-2) + Sc.unsqueeze(-1) * VhgV, E.to(U.dtype))
    gA = gA + diag_embed(gS.to(U.dtype))
    if complex_:
        gA = gA + diag_embed(quiet_div(diag(UhgU), (S * 2).to(U.dtype)))
    if m > n:
        gA = U @ gA
        gUSinv = quiet_div(gU, Sc.unsqueeze(-2))
        gA = gA + gUSinv - U @ (mH(U) @ gUSinv)
        return gA @ Vh
    if m < n:
        gA = gA @ Vh
        SinvgVh = quiet_div(gVh, Sc.unsqueeze(-1))
        gA = gA + SinvgVh - (SinvgVh @ mH(Vh)) @ Vh
        return U @ gA
    return U @ (gA @ Vh)


def _svd_backward(ctx, g, A, full_matrices):
    U, S, Vh = ctx.result
    gU, gS, gVh = g
    if full_matrices:
        k = S._shape[-1]
        U, Vh = U.narrow(-1, 0, k), Vh.narrow(-2, 0, k)
        gU, gVh = gU.narrow(-1, 0, k), gVh.narrow(-2, 0, k)
    return (svd_backward(gU, gS, gVh, U, S, Vh),)


svd_op = define("linalg_svd(Tensor A, bool full_matrices) -> (Tensor U, Tensor S, Tensor Vh)",
                meta=_svd_meta, derivative=Derivative(_svd_backward, save=("result",),
                                                      complex_ok=True),
                doc="A = U diag(S) Vh, S descending.")


def _svdvals_backward(ctx, g, A):
    U, _, Vh = svd_op(A, False)
    return (U @ (g.to(U.dtype).unsqueeze(-1) * Vh),)


_products.svdvals_op.derivative = Derivative(_svdvals_backward, save=("A",), complex_ok=True,
                                             name="LinalgSvdBackward0")


def _check_driver(driver, api):
    if driver is not None:
        raise RuntimeError(f"{api}: keyword argument `driver=` is only supported on CUDA inputs "
                           f"with cuSOLVER backend.")


def svd(A, full_matrices=True, *, driver=None, out=None):
    check_float_matrices("linalg.svd", A)
    _check_driver(driver, "linalg.svd")
    r = _nonfinite.svd("linalg.svd", A, lambda a: svd_op(a, bool(full_matrices)))
    return _outs(out, _rt.linalg_svd(*r), "linalg.svd")


def svdvals(A, *, driver=None, out=None):
    check_float_matrices("linalg.svdvals", A)
    _check_driver(driver, "linalg.svdvals")
    r = _nonfinite.svd("linalg.svdvals", A, _products.svdvals_op, mask=(0,))
    return r if out is None else write_out(out, r, "linalg.svdvals")


# -- LDL^H ------------------------------------------------------------------------------------
def _ldl_meta(A, hermitian):
    s = _meta_square("linalg.ldl_factor_ex", A)
    return (s, A.dtype), (s[:-1], _INT32), (s[:-2], _INT32)


# PyTorch has no derivative for it either: a backward through it raises, naming the op
ldl_factor_ex_op = define("linalg_ldl_factor_ex(Tensor A, bool hermitian) -> (Tensor LD, "
                          "Tensor pivots, Tensor info)", meta=_ldl_meta,
                          doc="LAPACK sytrf (hetrf when hermitian): compact L D L^T and its "
                              "1-based pivots (negative for 2x2 blocks).")


def ldl_factor_ex(A, *, hermitian=False, check_errors=False, out=None):
    check_float_matrices("torch.linalg.ldl_factor_ex", A, square=True)
    r = _rt.linalg_ldl_factor_ex(*ldl_factor_ex_op(A, bool(hermitian)))
    return ex_result(r, check_errors, "torch.linalg.ldl_factor_ex", out)


def ldl_factor(A, *, hermitian=False, out=None):
    check_float_matrices("torch.linalg.ldl_factor", A, square=True)
    LD, pivots, info = ldl_factor_ex_op(A, bool(hermitian))
    check_errors(info, "torch.linalg.ldl_factor")
    return _outs(out, _rt.linalg_ldl_factor(LD, pivots), "linalg.ldl_factor")


# -- Householder product ----------------------------------------------------------------------
def _householder_meta(A, tau):
    s = _meta_matrix("linalg.householder_product", A)
    return s, A.dtype


def _householder_product(A, tau):
    """Q = H_0 ... H_{k-1}, H_i = I - tau_i v_i v_i^H (v_i: column i below the diagonal, 1 on
    it), first n columns: applied right to left onto the first n columns of I."""
    m, n = A._shape[-2:]
    k = tau._shape[-1]
    V = A.tril(-1) + eye_like(m, A, m=n)
    Q = eye_like(m, A, m=n).expand(*batch_of(A), m, n)
    if k == 0:      # no reflector: the identity, still in A's graph (gradient 0) as torch's
        Q = A.clone().copy_(Q)
    for i in range(k - 1, -1, -1):
        v = V.narrow(-1, i, 1)
        t = tau.narrow(-1, i, 1).unsqueeze(-1)
        Q = Q - (t * v) @ (mH(v) @ Q)
    return Q


householder_product_op = define("linalg_householder_product(Tensor A, Tensor tau) -> Tensor",
                                meta=_householder_meta, composite=_householder_product,
                                doc="The first n columns of the product of k Householder "
                                    "reflectors (LAPACK orgqr); differentiated through the "
                                    "composite (householder_product runs it when a gradient "
                                    "is needed).")


def householder_product(A, tau, *, out=None):
    api = "torch.linalg.householder_product"
    check_at_least_2d(api, A, "input")
    if not isinstance(tau, Tensor) or tau.ndim < 1:
        raise RuntimeError(f"{api}: input.dim() must be greater than or equal to 2 and tau must "
                           f"have at least 1 dimension")
    m, n = A._shape[-2:]
    if m < n:
        raise RuntimeError(f"{api}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if tau._shape[-1] > n:
        raise RuntimeError(f"{api}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if tau.ndim != A.ndim - 1 or tau._shape[:-1] != A._shape[:-2]:
        raise RuntimeError(f"{api}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau._shape[:-1])}")
    check_float(api, A)
    if tau.dtype is not A.dtype:
        raise RuntimeError(f"{api}: tau dtype {tau.dtype} does not match input dtype "
                           f"{A.dtype}")
    if _grad_needed(A, tau):
        # the op has no derivative of its own (a backend's LAPACK kernel has none): record the
        # composite's ops, which differentiate to any order and in forward mode
        r = _householder_product(A, tau)
    else:
        r = householder_product_op(A, tau)
    return r if out is None else write_out(out, r, "linalg.householder_product")


def _grad_needed(*tensors):
    return is_grad_enabled() and any(t.requires_grad for t in tensors)


for _name, _fields in (("linalg_lu_factor_ex", ["LU", "pivots", "info"]),
                       ("linalg_lu_factor", ["LU", "pivots"]),
                       ("linalg_lu", ["P", "L", "U"]), ("lu_unpack", ["P", "L", "U"]),
                       ("linalg_cholesky_ex", ["L", "info"]), ("linalg_qr", ["Q", "R"]),
                       ("linalg_eigh", ["eigenvalues", "eigenvectors"]),
                       ("linalg_eig", ["eigenvalues", "eigenvectors"]),
                       ("linalg_svd", ["U", "S", "Vh"]),
                       ("linalg_ldl_factor_ex", ["LD", "pivots", "info"]),
                       ("linalg_ldl_factor", ["LD", "pivots"])):
    setattr(_rt, _name, _rt._return_type(_name, _fields))


# -- ember.func: vmap's batch is one more leading dim (the jvps come from the backward formulas)
for _op in (lu_factor_ex_op, pivots_to_permutation_op, cholesky_ex_op, qr_op, eigh_op,
            eigvalsh_op, eig_op, eigvals_op, svd_op, ldl_factor_ex_op):
    _op.def_batch_rule(same_batch_rule(_op))
