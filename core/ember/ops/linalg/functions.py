"""Matrix functions and the rest of ``torch.linalg``: determinants, the matrix exponential
(ops with PyTorch's derivatives, composites over LU / solve for backends without kernels), and
functions composed of other ops: matrix_power, cross, vecdot, multi_dot, norms, cond,
matrix_rank, tensorinv, tensorsolve, vander.

Kernel conventions: ``linalg_det(A)``, ``linalg_slogdet(A) -> (sign, logabsdet)`` (logabsdet
real), ``linalg_matrix_exp(A)``; square matrices of any batch shape.
"""
from __future__ import annotations

import math
import warnings

from ... import _dtype
from ... import return_types as _rt
from ..._tensor import Tensor, _wrap_dim
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _meta, elementwise as _ew, factories as _fac, reduction as _red
from .._util import _broadcast_pair, _dtype_title, every_example, write_out
from . import decompositions as _dec
from . import nonfinite as _nonfinite
from . import products as _products
from . import solvers as _solvers
from ._rules import (check_at_least_2d, check_float, check_float_matrices, check_square, diag,
                     eps_of, eye_like, mH)
from ..reduction._rules import reduce_dims
from ..._warn import user_stacklevel


def _square_meta(api):
    def meta(A):
        s = _dec._meta_square(api, A)
        return s, A.dtype
    return meta


def _perm_sign(pivots):
    """(-1)^(number of row interchanges) of LAPACK pivots, as an int tensor."""
    n = pivots._shape[-1]
    idx = _fac.arange(1, n + 1, dtype=pivots.dtype, device=pivots.device)
    swaps = pivots.ne(idx).sum(-1)
    return 1 - (swaps % 2) * 2


# -- determinant ------------------------------------------------------------------------------
def _det_composite(A):
    LU, pivots, _ = _dec.lu_factor_ex_op(A, True)
    return diag(LU).prod(-1) * _perm_sign(pivots).to(A.dtype)


def _prod_others(x):
    """For each entry of the last dim, the product of the others (safe with zeros)."""
    ones = _fac.ones(x._shape[:-1] + (1,), dtype=x.dtype, device=x.device)
    n = x._shape[-1]
    left = _dec._cat([ones, x.narrow(-1, 0, n - 1)], -1).cumprod(-1)
    right = _dec._cat([ones, x.narrow(-1, 1, n - 1).flip(-1)], -1).cumprod(-1).flip(-1)
    return left * right


def _det_backward(ctx, g, A):
    """PyTorch's ``linalg_det_backward``: det(A) A^{-H} for invertible A, else the adjugate
    through the SVD (computed for every matrix when any is near singular)."""
    det = ctx.result
    n = A._shape[-1]
    if A.numel() == 0:
        return (A.new_zeros(A._shape),)
    eps = eps_of(_meta.real_of(A.dtype))
    if not bool(every_example(det.abs().lt(100 * eps)).any()):
        d = (g * det.conj()).unsqueeze(-1).unsqueeze(-1) * eye_like(n, A)
        return (_solvers.solve_op(mH(A), d.expand(*A._shape), True)[0],)
    U, S, Vh = _dec.svd_op(A, False)
    alpha = (det_op(U) * det_op(Vh)).conj() * g
    D = alpha.unsqueeze(-1) * _prod_others(S.to(A.dtype)).conj()
    return ((U * D.unsqueeze(-2)) @ Vh,)


def _det_meta(A):
    return _dec._meta_square("linalg.det", A)[:-2], A.dtype


det_op = define("linalg_det(Tensor A) -> Tensor", meta=_det_meta,
                composite=_det_composite,
                derivative=Derivative(_det_backward, save=("A", "result"), complex_ok=True),
                doc="The determinant (through the LU factorization).")


def det(A, *, out=None):
    check_float_matrices("linalg.det", A, square=True)
    r = det_op(A)
    return r if out is None else write_out(out, r, "linalg.det")


def _slogdet_meta(A):
    s = _dec._meta_square("linalg.slogdet", A)
    return (s[:-2], A.dtype), (s[:-2], _meta.real_of(A.dtype))


def _slogdet_composite(A):
    LU, pivots, _ = _dec.lu_factor_ex_op(A, True)
    d = diag(LU)
    a = d.abs()
    logabsdet = a.log().sum(-1)
    if A.dtype.category == _dtype.COMPLEX:
        unit = _ew.where(a.eq(0), 0.0, d / a.to(A.dtype))
    else:
        unit = d.sign()
    return unit.prod(-1) * _perm_sign(pivots).to(A.dtype), logabsdet


def _slogdet_backward(ctx, g, A):
    """PyTorch's ``slogdet_backward``: (g_abs - i Im(conj(g_sign) sign)) A^{-H}."""
    g_sign, g_abs = g
    sign = ctx.result[0]
    if A.dtype.category == _dtype.COMPLEX:
        gg = g_abs.to(A.dtype) - (g_sign.conj() * sign).imag.to(A.dtype) * 1j
    else:
        gg = g_abs
    n = A._shape[-1]
    d = (gg.unsqueeze(-1).unsqueeze(-1) * eye_like(n, A)).expand(*A._shape)
    return (_solvers.solve_op(mH(A), d, True)[0],)


slogdet_op = define("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)",
                    meta=_slogdet_meta, composite=_slogdet_composite,
                    derivative=Derivative(_slogdet_backward, save=("A", "result0"),
                                          complex_ok=True),
                    doc="sign and log|det|: sign 0 and logabsdet -inf for singular matrices.")


def slogdet(A, *, out=None):
    check_float_matrices("linalg.slogdet", A, square=True)
    return _dec._outs(out, _rt.linalg_slogdet(*slogdet_op(A)), "linalg.slogdet")


def logdet(A):
    """``torch.logdet``: log det(A); NaN for a negative determinant of a real matrix."""
    check_float_matrices("logdet", A, square=True)
    sign, lad = slogdet_op(A)
    if A.dtype.category == _dtype.COMPLEX:
        return lad.to(A.dtype) + sign.log()
    return _ew.where(sign.lt(0), math.nan, lad)


# -- matrix exponential -----------------------------------------------------------------------
_PADE13 = (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
           129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
           40840800., 960960., 16380., 182., 1.)
_THETA13 = 5.371920351148152


def _matrix_exp_composite(A):
    """Scaling and squaring with the [13/13] Pade approximant (Higham 2005); one scaling for
    the whole batch (its largest 1-norm), so it reads one number from the device."""
    n = A._shape[-1]
    if A.numel() == 0:
        return A.clone()
    if n == 1:
        return A.exp()
    # (a meta tensor has no norm to read: its shapes come out the same with any scaling)
    norm = 0.0 if A.is_meta else float(every_example(A.abs().sum(-2)).amax())
    s = max(0, math.ceil(math.log2(norm / _THETA13))) if norm > _THETA13 else 0
    X = A / (2.0 ** s) if s else A
    b = _PADE13
    eye = eye_like(n, A)
    X2 = X @ X
    X4 = X2 @ X2
    X6 = X4 @ X2
    U = X @ (X6 @ (X6 * b[13] + X4 * b[11] + X2 * b[9]) + X6 * b[7] + X4 * b[5] + X2 * b[3]
             + eye * b[1])
    V = X6 @ (X6 * b[12] + X4 * b[10] + X2 * b[8]) + X6 * b[6] + X4 * b[4] + X2 * b[2] \
        + eye * b[0]
    R = _solvers.solve_op(V - U, V + U, True)[0]
    for _ in range(s):
        R = R @ R
    return R


def _matrix_exp_backward(ctx, g, A):
    """The adjoint of the differential: exp([[A^H, G], [0, A^H]]) top right block (Mathias,
    PyTorch's ``linalg_matrix_exp_differential``)."""
    n = A._shape[-1]
    Ah = mH(A)
    zero = A.new_zeros(A._shape)
    M = _dec._cat([_dec._cat([Ah, g], -1), _dec._cat([zero, Ah], -1)], -2)
    return (matrix_exp_op(M).narrow(-2, 0, n).narrow(-1, n, n),)


matrix_exp_op = define("linalg_matrix_exp(Tensor A) -> Tensor",
                       meta=_square_meta("linalg.matrix_exp"), composite=_matrix_exp_composite,
                       derivative=Derivative(_matrix_exp_backward, save=("A",),
                                             complex_ok=True),
                       doc="The matrix exponential.")


def matrix_exp(A):
    check_float_matrices("linalg.matrix_exp", A, square=True, allow_low=True)
    return matrix_exp_op(A)


# -- matrix_power -----------------------------------------------------------------------------
def matrix_power(A, n, *, out=None):
    check_square("linalg.matrix_power", A)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"linalg_matrix_power(): argument 'n' (position 2) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        check_float("linalg.matrix_power", A)
        A = _solvers.inv(A)
        n = -n
    if n == 0:
        # PyTorch copies the identity into a tensor like A: differentiable, gradient zero
        r = A.clone().copy_(eye_like(A._shape[-1], A).expand(*A._shape))
    else:
        r = None
        z = A
        while n:
            if n & 1:
                r = z if r is None else r @ z
            n >>= 1
            if n:
                z = z @ z
    return r if out is None else write_out(out, r, "linalg.matrix_power")


# -- cross, vecdot, multi_dot -----------------------------------------------------------------
def _cross_meta(a, b, dim):
    return _meta.broadcast("linalg.cross", a, b), a.dtype


def _cross_composite(a, b, dim):
    i1 = _fac.tensor([1, 2, 0], device=a.device)
    i2 = _fac.tensor([2, 0, 1], device=a.device)
    return a.index_select(dim, i1) * b.index_select(dim, i2) - \
        a.index_select(dim, i2) * b.index_select(dim, i1)


cross_op = define("linalg_cross(Tensor self, Tensor other, int dim) -> Tensor", meta=_cross_meta,
                  composite=_cross_composite,
                  doc="The 3-vector cross product along dim (operands broadcast already).")


def cross(input, other, *, dim=-1, out=None):
    api = "linalg.cross"
    for name, t in (("input", input), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"linalg_cross(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if input.ndim != other.ndim:
        raise RuntimeError(f"{api}: inputs must have the same number of dimensions.")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{api}: expected both inputs to have the same dtype, but got "
                           f"{_dtype_title(input.dtype)} and {_dtype_title(other.dtype)}")
    d = _wrap_dim(dim, max(input.ndim, 1), api)
    if input._shape[d] != 3 or other._shape[d] != 3:
        raise RuntimeError(f"{api}: inputs dimension {dim} must have length 3. Got "
                           f"{input._shape[d]} and {other._shape[d]}")
    shape = _broadcast_pair(input._shape, other._shape)
    a = input if input._shape == shape else input.expand(*shape)
    b = other if other._shape == shape else other.expand(*shape)
    r = cross_op(a, b, d)
    return r if out is None else write_out(out, r, api)


def cross_legacy(input, other, dim=None, *, out=None):
    """``torch.cross``: ``dim=None`` (deprecated, as in PyTorch) takes the input's first dim of
    size 3."""
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease "
                      "either pass the dim explicitly or simply use torch.linalg.cross.\nThe "
                      "default value of dim will change to agree with that of linalg.cross in a "
                      "future release.", UserWarning, stacklevel=user_stacklevel())
        dim = next((i for i, p in enumerate(input._shape) if p == 3), None)
        if dim is None:
            raise RuntimeError("cross: no dimension of size 3 in input")
    return cross(input, other, dim=dim, out=out)


def vecdot(x, y, *, dim=-1, out=None):
    api = "linalg.vecdot"
    if x.dtype is not y.dtype:
        raise RuntimeError(f"{api}: Expected x and y to have the same dtype, but found x of "
                           f"type {_dtype_title(x.dtype)} and y of type {_dtype_title(y.dtype)} "
                           f"instead")
    r = (x.conj() * y).sum(dim)
    return r if out is None else write_out(out, r, api)


def _chain_order(shapes):
    """Optimal parenthesization (dynamic programming over the matrix chain)."""
    p = [shapes[0][0]] + [s[1] for s in shapes]
    n = len(shapes)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(tensors, *, out=None):
    api = "multi_dot()"
    tensors = list(tensors)
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"{api}: expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"{api}: all tensors must have be the same dtype but tensor 0 is "
                               f"{_dtype_title(tensors[0].dtype)} and tensor {i} is "
                               f"{_dtype_title(t.dtype)}")
    first, last = tensors[0], tensors[-1]
    if first.ndim not in (1, 2):
        raise RuntimeError(f"{api}: the first tensor must be 1D or 2D but got {first.ndim}D")
    if last.ndim not in (1, 2):
        raise RuntimeError(f"{api}: the last tensor must be 1D or 2D but got {last.ndim}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"{api}: tensor {i} must be 2D but got {t.ndim}D")
    mats = [first.unsqueeze(0) if first.ndim == 1 else first] + tensors[1:-1] + \
        [last.unsqueeze(-1) if last.ndim == 1 else last]
    for i in range(n - 1):
        if mats[i]._shape[1] != mats[i + 1]._shape[0]:
            raise RuntimeError(f"{api}: tensors {i} and {i + 1} with shapes "
                               f"{list(mats[i]._shape)} and {list(mats[i + 1]._shape)} cannot "
                               f"be multiplied")
    split = _chain_order([m._shape for m in mats])

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return product(i, k) @ product(k + 1, j)

    r = product(0, n - 1)
    if first.ndim == 1:
        r = r.squeeze(0)
    if last.ndim == 1:
        r = r.squeeze(-1)
    return r if out is None else write_out(out, r, "linalg.multi_dot")


# -- norms, cond, rank ------------------------------------------------------------------------
def _norm_float(api, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{api}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.dtype.category < _dtype.FLOATING:
        raise RuntimeError(f"{api}: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype_title(x.dtype)}")


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    api = "linalg.vector_norm"
    _norm_float(api, x)
    if isinstance(ord, str):
        raise RuntimeError(f"{api}: Expected ord to be a number, got {ord!r}")
    if dtype is not None:
        x = x.to(_dtype.as_dtype(dtype))
    dims = reduce_dims(x, dim, api)
    ordf = float(ord)
    if (ordf < 0 or math.isinf(ordf)) and x.numel() == 0:
        for d in (dims or range(x.ndim)):
            if x._shape[d] == 0:
                raise RuntimeError(f"{api} cannot compute the {ord} norm on the dimension {d} "
                                   f"because this dimension is empty and the operation does not "
                                   f"have an identity")
    r = _red.vector_norm_op(x, ordf, dims, bool(keepdim))
    return r if out is None else write_out(out, r, api)


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _matrix_dims(api, A, dim):
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"{api}: dim must be a 2-tuple. Got {dim}")
    d0, d1 = (_wrap_dim(d, A.ndim, api) for d in dim)
    if d0 == d1:
        raise RuntimeError(f"{api}: dims must be different. Got ({d0}, {d1})")
    return d0, d1


def _extreme(api, s, dim, largest, keepdim=False):
    """The max (``largest``) or min of ``s`` over ``dim``. Over nothing, the max of
    non-negative values is 0 (PyTorch's norm of an empty matrix); the min has no value."""
    if s._shape[dim] == 0:
        if not largest:
            raise IndexError(f"{api}: Expected reduction dim {dim} to have non-zero size "
                             f"(the minimum over an empty matrix of shape {list(s._shape)})")
        shape = list(s._shape)
        if keepdim:
            shape[dim] = 1
        else:
            del shape[dim]
        return s.new_zeros(tuple(shape))
    return s.amax(dim, keepdim) if largest else s.amin(dim, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    api = "linalg.matrix_norm"
    _norm_float(api, A)
    check_at_least_2d(api, A)
    if ord not in _MATRIX_ORDS:
        raise RuntimeError(f"{api}: Order {ord} not supported.")
    if dtype is not None:
        A = A.to(_dtype.as_dtype(dtype))
    d0, d1 = _matrix_dims(api, A, dim)
    if ord == "fro":
        r = vector_norm(A, 2, (d0, d1), keepdim)
    elif ord in ("nuc", 2, -2):
        s = _nonfinite.svd(api, A.movedim((d0, d1), (-2, -1)), _products.svdvals_op, mask=(0,))
        r = s.sum(-1) if ord == "nuc" else _extreme(api, s, -1, ord > 0)
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
    else:
        inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
        s = A.abs().sum(inner, keepdim=True)
        r = _extreme(api, s, outer, ord > 0, keepdim=True)
        if not keepdim:
            r = r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    return r if out is None else write_out(out, r, api)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    api = "linalg.norm"
    _norm_float(api, A)
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            r = vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        elif len(dims) == 2:
            r = matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        else:
            raise RuntimeError(f"{api}: If dim is specified, it must be of length 1 or 2. Got "
                               f"{list(dims)}")
    elif ord is None:
        r = vector_norm(A, 2, None, keepdim, dtype=dtype)
    elif A.ndim == 1:
        if isinstance(ord, str):
            raise RuntimeError(f"{api}: Expected ord to be a number for a 1D input, got {ord}")
        r = vector_norm(A, ord, None, keepdim, dtype=dtype)
    elif A.ndim == 2:
        r = matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    else:
        raise RuntimeError(f"{api}: If dim is not specified but ord is, the input must be 1D or "
                           f"2D. Got {A.ndim}D.")
    return r if out is None else write_out(out, r, api)


def cond(A, p=None, *, out=None):
    api = "linalg.cond"
    check_float_matrices(api, A)
    if p is None or p in (2, -2):
        s = _nonfinite.svd(api, A, _products.svdvals_op, mask=(0,))
        if s._shape[-1] == 0:  # PyTorch: the condition number of an empty matrix is 0
            r = s.new_zeros(s._shape[:-1])
        else:
            r = s.amax(-1) / s.amin(-1) if p in (None, 2) else s.amin(-1) / s.amax(-1)
    else:
        if p not in _MATRIX_ORDS:
            raise RuntimeError(f"{api}: Order {p} not supported.")
        check_square(api, A)
        inv, info = _nonfinite.solve(A, _solvers.inv_ex_op)
        r = matrix_norm(A, p) * matrix_norm(inv, p)
        r = _ew.where(info.gt(0), math.inf, r)
    return r if out is None else write_out(out, r, api)


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The rank: singular values above ``max(atol, rtol * largest)``; torch's older overload's
    ``tol`` is an absolute tolerance (``atol=tol, rtol=0``)."""
    api = "linalg.matrix_rank"
    if tol is not None:
        atol, rtol = _solvers.tolerance_overload(api, "tol", tol, atol, rtol, relative=False)
    check_float_matrices(api, A)
    a, r = _solvers._tolerances(A, atol, rtol, api)
    if hermitian:
        check_square(api, A)
        S = _nonfinite.eigh(A, "L", lambda x: _dec.eigvalsh_op(x, "L"), mask=(0,)).abs()
    else:
        S = _nonfinite.svd(api, A, _products.svdvals_op, mask=(0,))
    smax = S.amax(-1, True) if S._shape[-1] else S.sum(-1, True)
    tol = _ew.binary_api["maximum"](a.unsqueeze(-1), r.unsqueeze(-1) * smax)
    res = S.gt(tol).sum(-1)
    return res if out is None else write_out(out, res, api)


# -- tensorinv, tensorsolve, vander, diagonal -------------------------------------------------
def tensorinv(A, ind=2, *, out=None):
    api = "linalg.tensorinv"
    if ind <= 0:
        raise RuntimeError(f"{api}: Expected a strictly positive integer for 'ind', but got "
                           f"{ind}")
    rows, cols = A._shape[:ind], A._shape[ind:]
    p, q = math.prod(rows), math.prod(cols)
    if p != q:
        raise RuntimeError(f"{api}: Expected self to satisfy the requirement "
                           f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got {q} != "
                           f"{p}")
    r = _solvers.inv(A.reshape(p, q)).reshape(*(cols + rows))
    return r if out is None else write_out(out, r, api)


def tensorsolve(A, B, dims=None, *, out=None):
    api = "linalg.tensorsolve"
    if dims is not None:
        dims = [_wrap_dim(d, A.ndim, api) for d in dims]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    rest = A._shape[B.ndim:]
    p, q = B.numel(), math.prod(rest)
    if math.prod(A._shape[:B.ndim]) != p or p != q:
        # (PyTorch reshapes other to the leading elements: only the counts must agree)
        raise RuntimeError(f"{api}: Expected self to satisfy the requirement "
                           f"prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                           f"but got {q} != {math.prod(A._shape[:B.ndim])}")
    r = _solvers.solve(A.reshape(p, q), B.reshape(p)).reshape(*rest)
    return r if out is None else write_out(out, r, api)


def vander(x, *, N=None):
    api = "linalg.vander"
    if not isinstance(x, Tensor):
        raise TypeError(f"{api}(): argument 'x' must be Tensor, not {type(x).__name__}")
    if x.ndim == 0:               # PyTorch reads a 0-d x as one point
        x = x.reshape(1)
    n = x._shape[-1] if N is None else int(N)
    if n < 1:
        raise RuntimeError(f"{api}: N must be greater than 1.")
    if x.dtype is _dtype.bool_:
        x = x.to(_dtype.int64)
    ones = _fac.ones(x._shape + (1,), dtype=x.dtype, device=x.device)
    if n == 1:
        return ones
    # the running products first, then the column of ones (torch's order: the result is cat's,
    # so writing into it leaves cumprod's saved result alone)
    return _dec._cat([ones, x.unsqueeze(-1).expand(*x._shape, n - 1).cumprod(-1)], -1)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    return A.diagonal(offset, dim1, dim2)


setattr(_rt, "linalg_slogdet", _rt._return_type("linalg_slogdet", ["sign", "logabsdet"]))
setattr(_rt, "slogdet", _rt._return_type("slogdet", ["sign", "logabsdet"]))
