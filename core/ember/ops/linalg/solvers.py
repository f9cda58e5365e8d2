"""Linear solvers: LU solve, the general solver, the triangular solver, the inverse, the LDL^H
solver, the pseudoinverse and least squares; each op's meta and derivative beside its define,
then the public functions.

Kernel conventions (outputs fresh, C-contiguous; operands already broadcast to one batch
shape by the public functions):

* ``linalg_lu_solve(LU, pivots, B, left, adjoint)``: X with op(A) X = B (left) or X op(A) = B
  for A = P L U, op the conjugate transpose when ``adjoint``.
* ``linalg_solve_ex(A, B, left) -> (X, info)``: AX = B or XA = B with B a matrix; a backend
  without a kernel runs the composite (LU factor + LU solve).
* ``linalg_solve_triangular(A, B, upper, left, unitriangular)``: only the ``upper``/lower
  triangle of A is read (its diagonal taken as ones when ``unitriangular``).
* ``linalg_inv_ex(A) -> (inverse, info)``; ``linalg_ldl_solve(LD, pivots, B, hermitian)``.
"""
from __future__ import annotations

from ... import _dtype
from ... import return_types as _rt
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _meta, _primitives, elementwise as _ew, factories as _fac
from .._util import _broadcast_pair, every_example, write_out
from . import decompositions as _dec
from . import nonfinite as _nonfinite
from ._rules import (batch_of, check_at_least_2d, check_errors, check_float,
                     check_float_matrices, check_same_device, check_same_dtype, check_square,
                     eps_of, eye_like, mH, same_batch_rule)
from ...dispatch.grad_mode import no_grad


def _expand_batch(t, batch):
    shape = tuple(batch) + t._shape[-2:]
    return t if t._shape == shape else t.expand(*shape)


def _common_batch(api, A, B):
    try:
        return _broadcast_pair(batch_of(A), batch_of(B))
    except RuntimeError:
        raise RuntimeError(f"{api}: the batch dimensions of A {list(batch_of(A))} and B "
                           f"{list(batch_of(B))} are not broadcastable") from None


# -- LU solve ---------------------------------------------------------------------------------
def _lu_solve_meta(LU, pivots, B, left, adjoint):
    return _meta.shape_of(B), B.dtype


def _lu_solve_LU_grad(gX, LU, pivots, X, left, adjoint):
    """PyTorch's ``linalg_lu_solve_LU``: the gradient with respect to the packed LU."""
    st = solve_triangular_op
    P, L, U = _dec._unpack(LU, pivots, True, left == adjoint)
    if left != adjoint:
        gR = st(mH(U), -((gX if left else mH(gX)) @ (mH(X) if left else X)), False, True, False)
        gL = st(mH(L), gR @ mH(U), True, True, True).tril(-1)
        return gL + gR.triu()
    gR = -(P.mT @ (X if left else mH(X)) @ (mH(gX) if left else gX) @ P)
    gR = st(mH(L), gR, True, False, True)
    gU = st(mH(U), mH(L) @ gR, False, False, False).triu()
    return gR.tril(-1) + gU


def _lu_solve_backward(ctx, g, LU, pivots, B, left, adjoint):
    gLU = gB = None
    if ctx.needs(0):
        gLU = _lu_solve_LU_grad(g, LU, pivots, ctx.result, left, adjoint)
    if ctx.needs(2):
        gB = lu_solve_op(LU, pivots, g, left, not adjoint)
    return gLU, None, gB


lu_solve_op = define("linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, bool left, "
                     "bool adjoint) -> Tensor", meta=_lu_solve_meta,
                     derivative=Derivative(_lu_solve_backward, save=("LU", "pivots", "result"),
                                           diff=("LU", "B"), complex_ok=True),
                     doc="Solve with a packed LU factorization (getrs).")


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    api = "linalg.lu_solve"
    check_square(api, LU, "LU")
    check_at_least_2d(api, B, "B")
    check_float(api, LU)
    check_same_dtype(api, LU, B, ("LU", "B"))
    if pivots.dtype is not _dtype.int32:
        raise RuntimeError(f"{api}: pivots should be a Tensor of scalar type torch.int32")
    n = LU._shape[-1]
    if pivots._shape[-1:] != (n,):
        raise RuntimeError(f"{api}: Number of pivots per batch should be same as the dimension "
                           f"of the matrix")
    if (B._shape[-2] if left else B._shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{api}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B._shape[-2]}x{B._shape[-1]})")
    batch = _common_batch(api, LU, B)
    LU_ = _expand_batch(LU, batch)
    piv = pivots if pivots._shape[:-1] == tuple(batch) else pivots.expand(*batch, n)
    r = lu_solve_op(LU_, piv, _expand_batch(B, batch), bool(left), bool(adjoint))
    return r if out is None else write_out(out, r, api)


# -- the general solver -----------------------------------------------------------------------
def _solve_meta(A, B, left):
    return (_meta.shape_of(B), B.dtype), (_meta.shape_of(A)[:-2], _dtype.int32)


def _solve_composite(A, B, left):
    LU, pivots, info = _dec.lu_factor_ex_op(A, True)
    return lu_solve_op(LU, pivots, B, left, False), info


def _solve_backward(ctx, g, A, B, left):
    """PyTorch's ``linalg_solve_backward``: gB = A^{-H} gX, gA = -gB X^H (left)."""
    X = ctx.result[0]
    gX = g[0]
    gB = solve_op(mH(A), gX, left)[0]
    gA = None
    if ctx.needs(0):
        gA = -(gB @ mH(X)) if left else -(mH(X) @ gB)
    return gA, gB if ctx.needs(1) else None


solve_op = define("linalg_solve_ex(Tensor A, Tensor B, bool left) -> (Tensor result, "
                  "Tensor info)", meta=_solve_meta, composite=_solve_composite,
                  derivative=Derivative(_solve_backward, save=("A", "result"),
                                        outputs=(True, False), complex_ok=True),
                  doc="AX = B (left) or XA = B for square A and a matrix B of the same batch.")


def _vector_rhs(A, B):
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B._shape == A._shape[:-1])


def _solve_args(api, A, B, left):
    check_square(api, A)
    if not isinstance(B, Tensor):
        raise TypeError(f"{api}(): argument 'B' must be Tensor, not {type(B).__name__}")
    check_float(api, A)
    check_same_dtype(api, A, B)
    check_same_device(api, A, B)
    vector = _vector_rhs(A, B)
    if vector and not left:
        raise RuntimeError(f"{api}: Vector broadcasting of the left hand side is not supported "
                           f"for left=False. In this case linalg.solve is equivalent to "
                           f"B / A.squeeze(-1)")
    B_ = B.unsqueeze(-1) if vector else B
    if B_.ndim < 2:
        raise RuntimeError(f"{api}: The input tensor B must have at least 2 dimensions.")
    return (*_equation_operands(api, A, B_, left), vector)


def _equation_operands(api, A, B, left):
    """A square A and a matrix B that ``AX = B`` (``left``) or ``XA = B`` can pair, broadcast
    to one batch shape."""
    n = A._shape[-1]
    if (B._shape[-2] if left else B._shape[-1]) != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"{api}: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {B._shape[-2]}x{B._shape[-1]})")
    batch = _common_batch(api, A, B)
    return _expand_batch(A, batch), _expand_batch(B, batch)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    A_, B_, vector = _solve_args("linalg.solve_ex", A, B, left)
    X, info = _nonfinite.solve(A_, lambda a: solve_op(a, B_, bool(left)))
    if check_errors:
        check_errors_(info, "torch.linalg.solve_ex")
    if vector:
        X = X.squeeze(-1)
    return _dec._outs(out, _rt.linalg_solve_ex(X, info), "linalg.solve_ex")


check_errors_ = check_errors


def solve(A, B, *, left=True, out=None):
    A_, B_, vector = _solve_args("linalg.solve", A, B, left)
    X, info = _nonfinite.solve(A_, lambda a: solve_op(a, B_, bool(left)))
    check_errors(info, "torch.linalg.solve")
    if vector:
        X = X.squeeze(-1)
    return X if out is None else write_out(out, X, "linalg.solve")


# -- triangular solver ------------------------------------------------------------------------
def _solve_triangular_meta(A, B, upper, left, unitriangular):
    return _meta.shape_of(B), B.dtype


def _solve_triangular_backward(ctx, g, A, B, upper, left, unitriangular):
    """PyTorch's ``linalg_solve_triangular_backward``: G_B = A^{-H} G_X, G_A = -G_B X^H
    projected onto the triangle that was read."""
    X = ctx.result
    gB = solve_triangular_op(mH(A), g, not upper, left, unitriangular)
    gA = None
    if ctx.needs(0):
        gA = -(gB @ mH(X)) if left else -(mH(X) @ gB)
        u = int(unitriangular)
        gA = gA.triu(u) if upper else gA.tril(-u)
    return gA, gB if ctx.needs(1) else None


solve_triangular_op = define("linalg_solve_triangular(Tensor A, Tensor B, bool upper, bool left, "
                             "bool unitriangular) -> Tensor", meta=_solve_triangular_meta,
                             derivative=Derivative(_solve_triangular_backward,
                                                   save=("A", "result"), complex_ok=True),
                             doc="Triangular solve (trtrs/trsm) with A and B of one batch "
                                 "shape.")
_primitives.provide(solve_op=solve_op, solve_triangular_op=solve_triangular_op)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    api = "linalg.solve_triangular"
    check_at_least_2d(api, A)
    check_at_least_2d(api, B, "B")
    check_float_matrices(api, A, square=True)
    check_same_dtype(api, A, B)
    check_same_device(api, A, B)
    A, B = _equation_operands(api, A, B, left)
    r = solve_triangular_op(A, B, bool(upper), bool(left), bool(unitriangular))
    return r if out is None else write_out(out, r, api)


# -- inverse ----------------------------------------------------------------------------------
def _inv_meta(A):
    s = _meta.shape_of(_meta.tensor_arg("linalg.inv_ex", A))
    return (s, A.dtype), (s[:-2], _dtype.int32)


def _inv_composite(A):
    n = A._shape[-1]
    eye = eye_like(n, A).expand(*A._shape)
    return solve_op(A, eye, True)


def _inv_backward(ctx, g, A):
    inv = mH(ctx.result[0])
    return (-(inv @ (g[0] @ inv)),)


inv_ex_op = define("linalg_inv_ex(Tensor A) -> (Tensor inverse, Tensor info)", meta=_inv_meta,
                   composite=_inv_composite,
                   derivative=Derivative(_inv_backward, save=("result",), outputs=(True, False),
                                         complex_ok=True),
                   doc="The inverse and getrf's info (> 0: U[info, info] is zero).")


def inv_ex(A, *, check_errors=False, out=None):
    check_float_matrices("linalg.inv_ex", A, square=True)
    r = _rt.linalg_inv_ex(*_nonfinite.solve(A, inv_ex_op))
    return _dec.ex_result(r, check_errors, "linalg.inv_ex", out)


def inv(A, *, out=None):
    check_float_matrices("linalg.inv", A, square=True)
    r, info = _nonfinite.solve(A, inv_ex_op)
    check_errors(info, "linalg.inv")
    return r if out is None else write_out(out, r, "linalg.inv")


# -- LDL solve --------------------------------------------------------------------------------
def _ldl_solve_meta(LD, pivots, B, hermitian):
    return _meta.shape_of(B), B.dtype


ldl_solve_op = define("linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, bool hermitian) -> "
                      "Tensor", meta=_ldl_solve_meta,
                      doc="Solve with linalg_ldl_factor_ex's factorization (sytrs/hetrs).")


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    api = "torch.linalg.ldl_solve"
    check_square(api, LD, "LD")
    check_at_least_2d(api, B, "B")
    check_same_dtype(api, LD, B, ("LD", "B"))
    if pivots.dtype is not _dtype.int32:
        raise RuntimeError(f"{api}: Expected pivots to be integers. Got {pivots.dtype}")
    n = LD._shape[-1]
    if B._shape[-2] != n:
        raise RuntimeError(f"{api}: Incompatible shapes of LD and B ({n}x{n} and "
                           f"{B._shape[-2]}x{B._shape[-1]})")
    batch = _common_batch(api, LD, B)
    piv = pivots if pivots._shape[:-1] == tuple(batch) else pivots.expand(*batch, n)
    r = ldl_solve_op(_expand_batch(LD, batch), piv, _expand_batch(B, batch), bool(hermitian))
    return r if out is None else write_out(out, r, "linalg.ldl_solve")


# -- pseudoinverse ----------------------------------------------------------------------------
def _pinv_meta(A, atol, rtol, hermitian):
    s = _meta.shape_of(_meta.tensor_arg("linalg.pinv", A))
    return s[:-2] + (s[-1], s[-2]), A.dtype


def _pinv_composite(A, atol, rtol, hermitian):
    if hermitian:
        S, Q = _dec.eigh_op(A, "L")
        smax = S.abs().amax(-1, True) if S._shape[-1] else S
    else:
        U, S, Vh = _dec.svd_op(A, False)
        smax = S.narrow(-1, 0, 1) if S._shape[-1] else S
    tol = _ew.binary_api["maximum"](atol.unsqueeze(-1), rtol.unsqueeze(-1) * smax)
    # eigenvalues may be negative: the cutoff is on |lambda|, the inverse is 1 / lambda
    inv_s = _ew.where(S.abs().gt(tol), S.reciprocal(), 0.0).to(A.dtype)
    if hermitian:
        return (Q * inv_s.unsqueeze(-2)) @ mH(Q)
    return mH(Vh) @ (inv_s.unsqueeze(-1) * mH(U))


def _pinv_backward(ctx, g, A, atol, rtol, hermitian):
    """PyTorch's ``pinv_backward``."""
    pinvA = ctx.result
    m, n = A._shape[-2:]
    pinvAh, gh = mH(pinvA), mH(g)
    if m <= n:
        K = gh @ pinvA
        KpinvAh = K @ pinvAh
        gA = -mH(pinvA @ K) + KpinvAh - (A @ pinvA) @ KpinvAh + (pinvAh @ pinvA) @ (gh - K @ A)
    else:
        K = pinvA @ gh
        pinvAhK = pinvAh @ K
        gA = -mH(K @ pinvA) + (gh - A @ K) @ pinvA @ pinvAh + pinvAhK - pinvAhK @ pinvA @ A
    return (gA,)


pinv_op = define("linalg_pinv(Tensor A, Tensor atol, Tensor rtol, bool hermitian) -> Tensor",
                 meta=_pinv_meta, composite=_pinv_composite,
                 derivative=Derivative(_pinv_backward, save=("A", "result"), diff=("A",),
                                       complex_ok=True),
                 doc="Moore-Penrose pseudoinverse; singular values below max(atol, rtol * "
                     "s_max) (per batch element) count as zero.")


def _tolerances(A, atol, rtol, api):
    """(atol, rtol) as real tensors broadcastable to the batch (PyTorch's defaults)."""
    real = _meta.real_of(A.dtype)
    m, n = A._shape[-2:]

    def as_t(v):
        if isinstance(v, Tensor):
            if v.dtype.category == _dtype.COMPLEX:
                raise RuntimeError(f"{api}: {v.dtype} tolerances are not supported")
            return v.to(real)
        return _fac.full((), float(v), dtype=real, device=A.device)

    if rtol is None:
        given = atol is not None and (isinstance(atol, Tensor) or float(atol) > 0)
        rtol = 0.0 if given else eps_of(real) * max(m, n)
    if atol is None:
        atol = 0.0
    return as_t(atol), as_t(rtol)


def tolerance_overload(api, name, value, atol, rtol, *, relative):
    """torch's single-tolerance overloads (``pinv(A, rcond)``: relative, ``matrix_rank(A,
    tol)``: absolute): the (atol, rtol) they stand for; not both forms at once."""
    if atol is not None or rtol is not None:
        raise TypeError(f"{api}() received an invalid combination of arguments - {name} "
                        f"cannot be given together with atol or rtol")
    return (0.0, value) if relative else (value, 0.0)


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The pseudoinverse; torch's older overload's ``rcond`` is a relative tolerance
    (``rtol=rcond, atol=0``, numpy's meaning)."""
    api = "linalg.pinv"
    if rcond is not None:
        atol, rtol = tolerance_overload(api, "rcond", rcond, atol, rtol, relative=True)
    check_float_matrices(api, A)
    if hermitian:
        check_square(api, A)
    a, r = _tolerances(A, atol, rtol, api)
    if hermitian:
        res = _nonfinite.eigh(A, "L", lambda x: pinv_op(x, a, r, True), mask=(0,))
    else:
        res = _nonfinite.svd(api, A, lambda x: pinv_op(x, a, r, False), mask=(0,))
    return res if out is None else write_out(out, res, api)


# -- least squares (composite of the pseudoinverse and the SVD) ----------------------------------
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def lstsq(A, B, rcond=None, *, driver=None):
    """The minimum-norm least squares solution through the pseudoinverse (the SVD), as
    LAPACK's gelsd computes it; ``driver`` chooses which of rank/singular values are returned,
    as PyTorch's CPU drivers do (default 'gelsy')."""
    api = "torch.linalg.lstsq"
    check_at_least_2d(api, A, "input")
    if not isinstance(B, Tensor):
        raise TypeError(f"linalg.lstsq(): argument 'b' must be Tensor, not {type(B).__name__}")
    check_float(api, A)
    check_same_dtype(api, A, B, ("input", "other"))
    check_same_device(api, A, B, ("input", "other"))
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError(f"{api}: parameter `driver` should be one of (gels, gelsy, gelsd, "
                           f"gelss)")
    vector = B.ndim == A.ndim - 1
    B_ = B.unsqueeze(-1) if vector else B
    if B_.ndim < 2:
        raise RuntimeError(f"{api}: input must have at least 2 dimensions.")
    m, n = A._shape[-2:]
    if B_._shape[-2] != m:
        raise RuntimeError(f"{api}: input.size(-2) should match other.size(-2)")
    batch = _common_batch(api, A, B_)
    A_, B_ = _expand_batch(A, batch), _expand_batch(B_, batch)
    real = _meta.real_of(A.dtype)
    rc = eps_of(real) * max(m, n) if rcond is None or rcond < 0 else float(rcond)
    zero = _fac.full((), 0.0, dtype=real, device=A.device)
    cutoff = _fac.full((), rc, dtype=real, device=A.device)
    X = _nonfinite.svd(api, A_, lambda a: pinv_op(a, zero, cutoff, False), mask=(0,)) @ B_
    with no_grad():
        S = _nonfinite.svd(api, A_, _dec._products.svdvals_op, mask=(0,))
        smax = S.narrow(-1, 0, 1) if S._shape[-1] else S
        rank = S.gt(smax * rc).sum(-1)
    empty = _fac.empty((0,), dtype=real, device=A.device)
    # no residuals is still an output of the solution's graph in PyTorch (differentiable)
    residuals = X.reshape(-1).narrow(0, 0, 0)
    residuals = residuals.real if residuals.is_complex() else residuals
    if m > n and driver != "gelsy":  # as LAPACK's gels/gelsd/gelss report them
        if n == 0 or bool(every_example(rank.eq(n)).all()):
            R = A_ @ X - B_
            residuals = (R * R.conj()).real.sum(-2) if R.dtype.category == _dtype.COMPLEX \
                else (R * R).sum(-2)
    if vector:
        X = X.squeeze(-1)
        if residuals.numel():
            residuals = residuals.squeeze(-1)
    rank_out = rank if driver != "gels" else _fac.empty((0,), dtype=_dtype.int64,
                                                        device=A.device)
    sv = S if driver in ("gelsd", "gelss") else empty
    return _rt.linalg_lstsq(X, residuals, rank_out, sv)


for _name, _fields in (("linalg_solve_ex", ["result", "info"]),
                       ("linalg_inv_ex", ["inverse", "info"]),
                       ("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])):
    setattr(_rt, _name, _rt._return_type(_name, _fields))


# -- ember.func: vmap's batch is one more leading dim (the jvps come from the backward formulas)
for _op in (lu_solve_op, solve_op, solve_triangular_op, ldl_solve_op):
    _op.def_batch_rule(same_batch_rule(_op))
