"""``torch.*`` names that predate ``torch.linalg`` / ``torch.special`` or expose lazy conj/neg
bits (issue #25): each is the documented equivalent of a current function, with the old
signature and return shape (``triangular_solve``'s (solution, cloned_coefficient), ``lu``'s
optional infos). ember has no lazy conjugation or negation, so ``is_conj``/``is_neg`` are False
and ``resolve_conj``/``resolve_neg`` return their input, exactly what torch does for a tensor
without those bits. Imported when called: ``linalg``/``special`` load after the core."""
from __future__ import annotations

import warnings
from collections import namedtuple

from ._tensor import Tensor

__all__ = ["chain_matmul", "frobenius_norm", "nuclear_norm", "igamma", "igammac",
           "triangular_solve", "lu", "lu_solve", "orgqr", "is_conj", "is_neg", "resolve_conj",
           "resolve_neg"]

triangular_solve_result = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


def _linalg():
    from . import linalg
    return linalg


def _special():
    from . import special
    return special


def chain_matmul(*matrices, out=None):
    """Deprecated in PyTorch for ``torch.linalg.multi_dot``; the same product."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning, stacklevel=2)
    if len(matrices) == 1:
        result = matrices[0].clone()
    else:
        result = _linalg().multi_dot(list(matrices))
    return result if out is None else out.copy_(result)


def frobenius_norm(input, dim=(-2, -1), keepdim=False, *, out=None):
    """``sqrt(sum |x|^2)`` over ``dim``."""
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    result = _linalg().vector_norm(input, 2, dim, keepdim)
    return result if out is None else out.copy_(result)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of singular values over the last two dims (or ``dim``)."""
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim) overload
        dim, keepdim = None, dim
    dim = (-2, -1) if dim is None else tuple(dim)
    result = _linalg().matrix_norm(input, "nuc", dim, keepdim)
    return result if out is None else out.copy_(result)


def igamma(input, other, *, out=None):
    """The regularized lower incomplete gamma function (``special.gammainc``)."""
    return _special().gammainc(input, other, out=out)


def igammac(input, other, *, out=None):
    """The regularized upper incomplete gamma function (``special.gammaincc``)."""
    return _special().gammaincc(input, other, out=out)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Solves ``op(A) X = b`` for triangular ``A`` (``op`` transposes when asked); returns
    ``(solution, cloned_coefficient)`` as PyTorch's deprecated function does."""
    for name, t in (("self", b), ("A", A)):
        if not isinstance(t, Tensor):
            raise TypeError(f"triangular_solve(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    coefficient = A.mT if transpose else A
    solution = _linalg().solve_triangular(coefficient, b, upper=bool(upper) != bool(transpose),
                                          unitriangular=unitriangular)
    result = triangular_solve_result(solution, A.clone())
    if out is not None:
        out[0].copy_(result[0])
        out[1].copy_(result[1])
        return triangular_solve_result(*out)
    return result


def lu(A, pivot=True, get_infos=False, out=None):
    """``(LU, pivots)`` or ``(LU, pivots, infos)``: ``torch.linalg.lu_factor_ex`` underneath."""
    LU, pivots, infos = _linalg().lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """Solves ``A X = b`` from ``torch.lu``'s factorization."""
    return _linalg().lu_solve(LU_data, LU_pivots, b, out=out)


def orgqr(input, tau, *, out=None):
    """Q from Householder reflectors (``torch.linalg.householder_product``)."""
    return _linalg().householder_product(input, tau, out=out)


def is_conj(input):
    return input.is_conj()


def is_neg(input):
    return input.is_neg()


def resolve_conj(input):
    return input.resolve_conj()


def resolve_neg(input):
    return input.resolve_neg()


def _igamma_(self, other):
    return self.copy_(igamma(self, other))


def _igammac_(self, other):
    return self.copy_(igammac(self, other))


def _sgn_(self):
    return self.copy_(self.sgn())


# Tensor methods of the same names (self first, as in PyTorch)
for _name, _fn in (("igamma", igamma), ("igammac", igammac), ("igamma_", _igamma_),
                   ("igammac_", _igammac_), ("triangular_solve", triangular_solve),
                   ("lu", lu), ("lu_solve", lu_solve), ("orgqr", orgqr), ("sgn_", _sgn_)):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _fn)
del _name, _fn
