"""PyTorch's top-level linear algebra functions and Tensor methods (``torch.det``,
``torch.inverse``, ``torch.svd`` with V instead of Vh, ``torch.qr(some=)``,
``torch.cholesky_solve`` ...): thin wrappers over the ``linalg`` ops."""
from __future__ import annotations

from ... import return_types as _rt
from .._util import tensor_method, write_out
from . import decompositions as _dec
from . import functions as _fn
from . import solvers as _sol
from ._rules import check_float, check_square, eye_like, mH


@tensor_method()
def det(input):
    return _fn.det(input)


@tensor_method()
def logdet(input):
    return _fn.logdet(input)


@tensor_method()
def slogdet(input):
    sign, lad = _fn.slogdet(input)
    return _rt.slogdet(sign, lad)


@tensor_method()
def inverse(input, *, out=None):
    return _sol.inv(input, out=out)


@tensor_method()
def pinverse(input, rcond=1e-15):
    return _sol.pinv(input, rtol=rcond)


@tensor_method()
def matrix_exp(input):
    return _fn.matrix_exp(input)


@tensor_method()
def matrix_power(input, n):
    return _fn.matrix_power(input, n)


@tensor_method()
def cholesky(input, upper=False, *, out=None):
    return _dec.cholesky(input, upper=upper, out=out)


@tensor_method()
def cholesky_solve(input, input2, upper=False, *, out=None):
    """X with A X = input for A = L L^H (``input2`` = L; U^H U when ``upper``)."""
    api = "cholesky_solve"
    check_square(api, input2, "input2")
    check_float(api, input2)
    L = mH(input2) if upper else input2
    y = _sol.solve_triangular(L, input, upper=False)
    r = _sol.solve_triangular(mH(L), y, upper=True)
    return r if out is None else write_out(out, r, api)


@tensor_method()
def cholesky_inverse(input, upper=False, *, out=None):
    api = "cholesky_inverse"
    check_square(api, input)
    check_float(api, input)
    eye = eye_like(input._shape[-1], input).expand(*input._shape)
    r = cholesky_solve(eye, input, upper)
    return r if out is None else write_out(out, r, api)


@tensor_method()
def svd(input, some=True, compute_uv=True, *, out=None):
    """``torch.svd``: (U, S, V) with V = Vh^H; ``compute_uv=False`` gives zero-filled U, V."""
    if compute_uv:
        U, S, Vh = _dec.svd(input, full_matrices=not some)
        V = mH(Vh)
    else:
        S = _dec.svdvals(input)
        m, n = input._shape[-2:]
        U = input.new_zeros(input._shape[:-2] + (m, m))
        V = input.new_zeros(input._shape[:-2] + (n, n))
    return _dec._outs(out, _rt.svd(U, S, V), "svd")


@tensor_method()
def qr(input, some=True, *, out=None):
    Q, R = _dec.qr(input, "reduced" if some else "complete")
    return _dec._outs(out, _rt.qr(Q, R), "qr")


lu_unpack = _dec.lu_unpack


@tensor_method()
def cross(input, other, dim=None, *, out=None):
    return _fn.cross_legacy(input, other, dim, out=out)


for _name, _fields in (("svd", ["U", "S", "V"]), ("qr", ["Q", "R"])):
    setattr(_rt, _name, _rt._return_type(_name, _fields))
