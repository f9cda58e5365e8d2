"""PyTorch's top-level linear algebra functions and Tensor methods (``torch.det``,
``torch.inverse``, ``torch.svd`` with V instead of Vh, ``torch.qr(some=)``,
``torch.cholesky_solve`` ...), and the names that predate ``torch.linalg`` (``chain_matmul``,
``frobenius_norm``, ``nuclear_norm``, ``triangular_solve``'s (solution, cloned_coefficient),
``lu``'s optional infos, ``lu_solve``, ``orgqr``): thin wrappers over the ``linalg`` ops."""
from __future__ import annotations

import math
import warnings

from ... import _dtype
from ... import return_types as _rt
from ..._dtype import FLOATING
from ..._tensor import Tensor, _wrap_dim
from ...dispatch.dispatcher import define
from .. import views as _views
from .._util import _dtype_title, tensor_method, write_out
from ..reduction import sums as _sums
from ..reduction._rules import check_tensor, given, reduce_dims
from ..reduction.norms import vector_norm_op
from . import nonfinite as _nonfinite
from . import products as _products
from . import decompositions as _dec
from . import functions as _fn
from . import solvers as _sol
from ._rules import check_float, check_square, eye_like, mH
from ..._warn import user_stacklevel


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


def chain_matmul(*matrices, out=None):
    """Deprecated in PyTorch for ``torch.linalg.multi_dot``; the same product."""
    warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                  "release. Use torch.linalg.multi_dot instead, which accepts a list of two or "
                  "more tensors rather than multiple parameters.", UserWarning,
                  stacklevel=user_stacklevel())
    if len(matrices) == 1:
        result = matrices[0].clone()
    else:
        result = _fn.multi_dot(list(matrices))
    return result if out is None else out.copy_(result)


def frobenius_norm(input, dim=(-2, -1), keepdim=False, *, out=None):
    """``sqrt(sum |x|^2)`` over ``dim``."""
    dim = (dim,) if isinstance(dim, int) else tuple(dim)
    result = _fn.vector_norm(input, 2, dim, keepdim)
    return result if out is None else out.copy_(result)


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """The sum of singular values over the last two dims (or ``dim``)."""
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim) overload
        dim, keepdim = None, dim
    dim = (-2, -1) if dim is None else tuple(dim)
    result = _fn.matrix_norm(input, "nuc", dim, keepdim)
    return result if out is None else out.copy_(result)


@tensor_method()
def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """Solves ``op(A) X = b`` for triangular ``A`` (``op`` transposes when asked); returns
    ``(solution, cloned_coefficient)`` as PyTorch's deprecated function does."""
    for name, t in (("self", b), ("A", A)):
        if not isinstance(t, Tensor):
            raise TypeError(f"triangular_solve(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    coefficient = A.mT if transpose else A
    solution = _sol.solve_triangular(coefficient, b, upper=bool(upper) != bool(transpose),
                                          unitriangular=unitriangular)
    result = _rt.triangular_solve(solution, A.clone())
    if out is not None:
        out[0].copy_(result[0])
        out[1].copy_(result[1])
        return _rt.triangular_solve(*out)
    return result


@tensor_method()
def lu(A, pivot=True, get_infos=False, out=None):
    """``(LU, pivots)`` or ``(LU, pivots, infos)``: ``torch.linalg.lu_factor_ex`` underneath."""
    LU, pivots, infos = _dec.lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, infos) if get_infos else (LU, pivots)


@tensor_method()
def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """Solves ``A X = b`` from ``torch.lu``'s factorization."""
    return _sol.lu_solve(LU_data, LU_pivots, b, out=out)


@tensor_method()
def orgqr(input, tau, *, out=None):
    """Q from Householder reflectors (``torch.linalg.householder_product``)."""
    return _dec.householder_product(input, tau, out=out)


# -- torch.norm (deprecated for linalg.norm): p-norms over dims, 'fro' and the nuclear norm ----
def _nuclear_norm(x, dim, keepdim):
    s = _nonfinite.svd("norm", _views.movedim(x, dim, (-2, -1)), _products.svdvals_op,
                       mask=(0,))
    r = _sums.sum_op(s, (s.ndim - 1,), False, s.dtype)
    if keepdim:
        for d in sorted(dim):
            r = _views.unsqueeze(r, d)
    return r


nuclear_norm_op = define("nuclear_norm(Tensor self, int[] dim, bool keepdim) -> Tensor",
                         composite=_nuclear_norm)


def _fmt_ord(p):
    return int(p) if math.isfinite(p) and p == int(p) else p


@tensor_method("norm")
def _norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
    """``Tensor.norm``: torch's method takes no ``out``, so ``dtype`` is its fourth argument."""
    return norm(self, p, dim, keepdim, dtype=dtype)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    check_tensor(input, "norm")
    if input.dtype.category < FLOATING:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_dtype_title(input.dtype)}")
    x = input if dtype is None else input.to(_dtype.as_dtype(dtype))
    if p is None:
        p = "fro"
    if isinstance(p, str):
        if p == "nuc":
            r = nuclear_norm_op(x, _matrix_dims(x, dim), bool(keepdim))
            return r if out is None else write_out(out, r, "norm")
        if p != "fro":
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        p = 2
    ord = float(p)
    dims = reduce_dims(x, dim, "norm")
    if (ord < 0 or ord == math.inf) and x.numel() == 0:
        if not given(dim):
            raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_ord(ord)} norm on an "
                               f"empty tensor because the operation does not have an identity")
        for d in dims:
            if x._shape[d] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt_ord(ord)} norm on "
                                   f"the dimension {d} because this dimension is empty and the "
                                   f"operation does not have an identity")
    r = vector_norm_op(x, ord, dims, bool(keepdim))
    return r if out is None else write_out(out, r, "norm")


def _matrix_dims(x, dim):
    if dim is None:
        dim = tuple(range(x.ndim))
    if not isinstance(dim, (list, tuple)) or len(dim) != 2:
        got = " ".join(str(d) for d in dim) if isinstance(dim, (list, tuple)) else dim
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {got}")
    d0, d1 = (_wrap_dim(d, x.ndim, "norm") for d in dim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    return d0, d1


for _name, _fields in (("svd", ["U", "S", "V"]), ("qr", ["Q", "R"]),
                       ("triangular_solve", ["solution", "cloned_coefficient"])):
    setattr(_rt, _name, _rt._return_type(_name, _fields))
