"""Entries for ``ember.linalg``'s decompositions, solvers and matrix functions.

Decompositions whose factors are unique only up to signs (eigenvectors, singular vectors) are
compared through quantities that are not: the values, ``|V|``, the reconstruction. Matrices
that must be symmetric (Hermitian) or positive-definite are made so inside the entry
(``X + X^T``, ``X X^T + n I``), so gradients go through the construction and finite differences
stay on the domain. Samples are small (gradgradcheck differences every element).
"""
from __future__ import annotations

import warnings

import ember

from . import FLOATS, OpInfo
from .linalg import C, samples

L = ember.linalg
LAYOUTS2 = ("contiguous", "transposed")
LOOSE = {"float32": (1e-4, 1e-4)}


def square(n=3, batch=(2,), layouts=LAYOUTS2):
    return [C([(n, n)], lay) for lay in layouts] + [C([batch + (n, n)], lay) for lay in layouts] \
        + [C([(0, 0)]), C([(2, 0, 0)])]


def rect(layouts=LAYOUTS2):
    return [C([(4, 3)], lay) for lay in layouts] + [C([(3, 4)], lay) for lay in layouts] + \
        [C([(2, 4, 3)]), C([(2, 3, 4)], "transposed"), C([(0, 3)])]


def pairs(left=True):
    b = [(3, 2), (2, 3, 2), (3, 1)] if left else [(2, 3), (2, 2, 3), (1, 3)]
    a = [(3, 3), (2, 3, 3), (3, 3)]
    cases = [C([sa, sb], lay) for sa, sb in zip(a, b) for lay in LAYOUTS2]
    return cases + [C([(2, 3, 3), (3, 2) if left else (2, 3)])]  # broadcast batch


def _spd(X):
    n = X.shape[-1]
    return X @ X.mT + n * ember.eye(n, dtype=X.dtype, device=X.device)


def _sym(X):
    return X + X.mT


def _lu_factor(A):
    LU, pivots = L.lu_factor(A)
    return LU, pivots


def _lu_solve(A, B, left=True, adjoint=False):
    LU, pivots = L.lu_factor(A)
    return L.lu_solve(LU, pivots, B, left=left, adjoint=adjoint)


def _svd(A):
    U, S, Vh = L.svd(A, full_matrices=False)
    return S, U.abs(), Vh.abs(), (U * S.unsqueeze(-2)) @ Vh


def _svd_full(A):
    U, S, Vh = L.svd(A)
    return S, U.abs(), Vh.abs()


def _eigh(X, UPLO="L"):
    w, V = L.eigh(_sym(X), UPLO=UPLO)
    return w, V.abs()


def _re(z):
    """The real part through a cast (differentiable, where ``Tensor.real`` is a plain view)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return z.to(ember.float64 if z.dtype is ember.complex128 else ember.float32)


def _eig(X):
    w, V = L.eig(X @ X.mT + ember.eye(X.shape[-1], dtype=X.dtype, device=X.device))
    return _re(w), _re(V * V.conj())  # a symmetric positive-definite input: real spectrum


def _qr(A, mode="reduced"):
    Q, R = L.qr(A, mode=mode)
    return Q, R


def _householder(A):
    k = min(A.shape[-2:])
    return L.householder_product(A, A.narrow(-2, 0, 1).squeeze(-2).narrow(-1, 0, k) * 0.3)


def _ldl(X):
    LD, pivots = L.ldl_factor(_spd(X))
    return L.ldl_solve(LD, pivots, X)


def _pinv_h(X):
    return L.pinv(_sym(X), hermitian=True)


TRI = dict(tolerances=LOOSE)
OPS = [
    OpInfo("linalg.lu_factor", _lu_factor, samples(square() + rect()), FLOATS,
           covers=("linalg_lu_factor_ex",), **TRI),
    OpInfo("linalg.lu", L.lu, samples(square() + rect()), FLOATS,
           covers=("linalg_lu_factor_ex", "_linalg_pivots_to_permutation"), **TRI),
    OpInfo("linalg.lu_solve", _lu_solve, samples(pairs()), FLOATS, covers=("linalg_lu_solve",),
           **TRI),
    OpInfo("linalg.lu_solve left=False adjoint", lambda A, B: _lu_solve(A, B, False, True),
           samples(pairs(False)), FLOATS, covers=("linalg_lu_solve",), **TRI),
    OpInfo("linalg.solve", L.solve, samples(pairs() + [C([(3, 3), (3,)])]), FLOATS,
           covers=("linalg_solve_ex",), **TRI),
    OpInfo("linalg.solve left=False", lambda A, B: L.solve(A, B, left=False),
           samples(pairs(False)), FLOATS, covers=("linalg_solve_ex",), **TRI),
    OpInfo("linalg.inv", L.inv, samples(square()), FLOATS, covers=("linalg_inv_ex",), **TRI),
    OpInfo("linalg.det", L.det, samples(square()), FLOATS, covers=("linalg_det",), **TRI),
    OpInfo("linalg.slogdet", L.slogdet, samples(square()), FLOATS, covers=("linalg_slogdet",),
           **TRI),
    OpInfo("linalg.cholesky", lambda X: L.cholesky(_spd(X)), samples(square()), FLOATS,
           covers=("linalg_cholesky_ex",), **TRI),
    OpInfo("linalg.cholesky upper", lambda X: L.cholesky(_spd(X), upper=True),
           samples(square()[:2]), FLOATS, covers=("linalg_cholesky_ex",), **TRI),
    OpInfo("linalg.qr", _qr, samples(rect() + square()[:2]), FLOATS, covers=("linalg_qr",),
           **TRI),
    OpInfo("linalg.qr complete", lambda A: _qr(A, "complete"),
           samples([C([(3, 4)]), C([(3, 3)], "transposed")]), FLOATS, covers=("linalg_qr",),
           **TRI),
    OpInfo("linalg.qr r", lambda A: _qr(A, "r")[1], samples(rect()[:2]), FLOATS,
           covers=("linalg_qr",), differentiable=False, **TRI),
    OpInfo("linalg.eigh", _eigh, samples(square()), FLOATS, covers=("linalg_eigh",), **TRI),
    OpInfo("linalg.eigh UPLO=U", lambda X: _eigh(X, "U"), samples(square()[:2]), FLOATS,
           covers=("linalg_eigh",), **TRI),
    OpInfo("linalg.eigvalsh", lambda X: L.eigvalsh(_sym(X)), samples(square()), FLOATS,
           covers=("linalg_eigvalsh",), **TRI),
    OpInfo("linalg.eig", _eig, samples(square()[:3]), FLOATS, covers=("linalg_eig",), **TRI),
    OpInfo("linalg.eigvals", lambda X: _re(L.eigvals(_spd(X))), samples(square()[:3]), FLOATS,
           covers=("linalg_eigvals",), **TRI),
    OpInfo("linalg.svd", _svd, samples(rect() + square()[:2]), FLOATS, covers=("linalg_svd",),
           **TRI),
    OpInfo("linalg.svd full_matrices", _svd_full, samples([C([(4, 3)]), C([(2, 3, 4)])]),
           FLOATS, covers=("linalg_svd",), differentiable=False, **TRI),
    OpInfo("linalg.svdvals", L.svdvals, samples(rect() + square()[:2]), FLOATS,
           covers=("linalg_svdvals",), **TRI),
    OpInfo("linalg.solve_triangular", lambda A, B: L.solve_triangular(A, B, upper=True),
           samples(pairs()), FLOATS, covers=("linalg_solve_triangular",), **TRI),
    OpInfo("linalg.solve_triangular lower right unit",
           lambda A, B: L.solve_triangular(A, B, upper=False, left=False, unitriangular=True),
           samples(pairs(False)), FLOATS, covers=("linalg_solve_triangular",), **TRI),
    OpInfo("linalg.householder_product", _householder, samples(rect()[:2] + [C([(2, 4, 3)])]),
           FLOATS, covers=("linalg_householder_product",), **TRI),
    OpInfo("linalg.matrix_exp", L.matrix_exp, samples(square(), low=-1.0, high=1.0), FLOATS,
           covers=("linalg_matrix_exp",), **TRI),
    OpInfo("linalg.matrix_exp large norm", L.matrix_exp,
           samples([C([(3, 3)])], low=-4.0, high=4.0), FLOATS, covers=("linalg_matrix_exp",),
           tolerances={"float32": (1e-3, 1e-3)}),
    OpInfo("linalg.ldl_factor/ldl_solve", _ldl, samples(square()[:3]), FLOATS,
           covers=("linalg_ldl_factor_ex", "linalg_ldl_solve"), differentiable=False, **TRI),
    OpInfo("linalg.pinv", L.pinv, samples(rect()), FLOATS, covers=("linalg_pinv",), **TRI),
    OpInfo("linalg.pinv hermitian", _pinv_h, samples(square()[:3]), FLOATS,
           covers=("linalg_pinv",), **TRI),
    OpInfo("linalg.lstsq", lambda A, B: L.lstsq(A, B, driver="gelsd")[0],
           samples([C([(4, 3), (4, 2)]), C([(2, 4, 3), (2, 4, 2)], "transposed")]), FLOATS,
           covers=(), **TRI),
    OpInfo("linalg.cross", L.cross, samples([C([(3,), (3,)]), C([(2, 3), (2, 3)], "transposed"),
                                             C([(4, 3), (1, 3)])]),
           FLOATS + ("int64",), covers=("linalg_cross",)),
    OpInfo("linalg.matrix_norm 2", lambda A: L.matrix_norm(A, 2), samples(rect()[:3]), FLOATS,
           covers=(), **TRI),
    OpInfo("linalg.cond", L.cond, samples(square()[:3]), FLOATS, covers=(), **TRI),
    OpInfo("linalg.matrix_power -2", lambda A: L.matrix_power(A, -2), samples(square()[:3]),
           FLOATS, covers=(), **TRI),
    OpInfo("linalg.multi_dot", lambda a, b, c: L.multi_dot([a, b, c]),
           samples([C([(3,), (3, 4), (4, 2)]), C([(2, 3), (3, 5), (5,)], "transposed")]),
           FLOATS, covers=()),
]
