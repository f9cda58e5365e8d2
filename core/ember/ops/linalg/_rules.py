"""What the linear algebra family shares: argument checks with PyTorch's messages (products and
fused multiply-adds make the same ones) and the layout helpers of its derivative formulas."""
from __future__ import annotations

import math

from ... import _dtype
from ..._tensor import Tensor
from .. import _batching, _grad, elementwise as _ew, factories as _fac
from .. import views as _views
from .._util import _broadcast_pair, _dtype_title, cpp_dtype_name, every_example  # noqa: F401

# PyTorch names dtypes by their C++ scalar type in a few messages ("float != double")


# -- argument checks ----------------------------------------------------------------------------
def check_tensors(op, **named):
    for pos, (name, t) in enumerate(named.items(), 1):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                            f"{type(t).__name__}")


def no_bool(op, t):
    if t.dtype is _dtype.bool_:
        raise NotImplementedError(f"\"{op}\" not implemented for 'Bool'")


def inner_product_check(op, a, b):
    """The checks ``dot``/``vdot`` (and 1-D @ 1-D) make, with PyTorch's messages."""
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"{op}: 1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op} : expected both vectors to have same dtype, but found "
                           f"{_dtype_title(a.dtype)} and {_dtype_title(b.dtype)}")
    n, m = a._shape[0], b._shape[0]
    if n != m:
        raise RuntimeError(f"{op}: inconsistent tensor size, expected tensor [{n}] and src [{m}] "
                           f"to have the same number of elements, but got {n} and {m} elements "
                           f"respectively")


def mv_check(mat, vec, bias_dtype=None, op="mv"):
    if mat.dtype is not vec.dtype or bias_dtype not in (None, mat.dtype):
        names = [_dtype_title(d) for d in (bias_dtype or vec.dtype, mat.dtype, vec.dtype)]
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {names[0]}, "
                           f"{names[1]}, and {names[2]}")
    k = mat._shape[-1]
    if k != vec._shape[0]:
        rows = math.prod(mat._shape[:-1])
        raise RuntimeError(f"{op}: size mismatch, got input ({rows}), mat ({rows}x{k}), vec "
                           f"({vec._shape[0]})")


def same_dtype(a, b, op):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}: expected m1 and m2 to have the same dtype, but got: "
                           f"{cpp_dtype_name(a.dtype)} != {cpp_dtype_name(b.dtype)}")


def matmul_check(a, b, op="matmul"):
    na, nb = a.ndim, b.ndim
    if not na or not nb:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {na}D "
                           f"and {nb}D")
    if na == 1 and nb == 1:
        inner_product_check("dot", a, b)
    elif nb == 1:
        mv_check(a, b, op=op)
    else:
        same_dtype(a, b, op)
        ka, kb = a._shape[-1], b._shape[-2]
        if nb == 2:
            # PyTorch folds the batch dims of ``a`` into rows and reports the folded shapes
            if ka != kb:
                raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied "
                                   f"({math.prod(a._shape[:-1])}x{ka} and {kb}x{b._shape[-1]})")
        else:
            batch = math.prod(_broadcast_pair(a._shape[:-2], b._shape[:-2]))
            if ka != kb:
                raise RuntimeError(f"{op}: Expected size for first two dimensions of batch2 "
                                   f"tensor to be: [{batch}, {ka}] but got: [{batch}, {kb}].")
    no_bool("matmul", a)


def mm_check(a, b, names=("self", "mat2"), op="mm"):
    if a.ndim != 2:
        raise RuntimeError(f"{op}: {names[0]} must be a matrix, got a {a.ndim}-D tensor")
    if b.ndim != 2:
        raise RuntimeError(f"{op}: {names[1]} must be a matrix, got a {b.ndim}-D tensor")
    same_dtype(a, b, op)
    if a._shape[1] != b._shape[0]:
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied ({a._shape[0]}x"
                           f"{a._shape[1]} and {b._shape[0]}x{b._shape[1]})")


def bmm_check(a, b, op="bmm"):
    if a.ndim != 3:
        raise RuntimeError(f"{op}: batch1 must be a 3D tensor, got a {a.ndim}-D tensor")
    if b.ndim != 3:
        raise RuntimeError(f"{op}: batch2 must be a 3D tensor, got a {b.ndim}-D tensor")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}: expected scalar type {_dtype_title(a.dtype)} but found "
                           f"{_dtype_title(b.dtype)}")
    if b._shape[:2] != (a._shape[0], a._shape[2]):
        raise RuntimeError(f"{op}: Expected size for first two dimensions of batch2 tensor to "
                           f"be: [{a._shape[0]}, {a._shape[2]}] but got: [{b._shape[0]}, "
                           f"{b._shape[1]}].")


def mv_shape_check(mat, vec, bias_ndim=1):
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {bias_ndim}, {mat.ndim}, "
                           f"{vec.ndim}")


# -- derivative helpers -------------------------------------------------------------------------
def mT(t):
    """The transpose of the last two dims (a view): one dispatched transpose (0.6 us; a permute
    with its dims list took 1.2, and every linear layer's backward takes two)."""
    n = t.ndim
    return _views.transpose_op(t, n - 2, n - 1)


def col_major(t):
    """A 2-D operand laid out as the transpose of a contiguous matrix (``W.t()`` in linear):
    its gradient is made as ``(g^T a)^T`` so it arrives at ``W`` contiguous and the engine need
    not copy it."""
    return t.ndim == 2 and t._stride[0] == 1 and t._stride[1] != 1 and t._shape[1] > 1


# -- decompositions and solvers: errors, checks, helpers ------------------------------------------
class LinAlgError(RuntimeError):
    """A linear algebra routine failed on the values it was given (a singular matrix, one that
    is not positive-definite, no convergence): PyTorch's ``torch.linalg.LinAlgError``."""


LinAlgError.__module__ = "ember.linalg"
_LOW_PRECISION = ("float16", "bfloat16")


def check_at_least_2d(api, A, name="A"):
    if not isinstance(A, Tensor):
        raise TypeError(f"{api}(): argument '{name}' must be Tensor, not {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{api}: The input tensor {name} must have at least 2 dimensions.")


def check_square(api, A, name="A"):
    check_at_least_2d(api, A, name)
    m, n = A._shape[-2:]
    if m != n:
        raise RuntimeError(f"{api}: {name} must be batches of square matrices, but they are {m} "
                           f"by {n} matrices")


def check_float(api, A, allow_low=False):
    d = A.dtype
    if d.category < _dtype.FLOATING:
        raise RuntimeError(f"{api}: Expected a floating point or complex tensor as input. Got "
                           f"{_dtype_title(d)}")
    if not allow_low and d.name in _LOW_PRECISION:
        raise RuntimeError(f"{api}: Low precision dtypes not supported. Got {_dtype_title(d)}")


def check_float_matrices(api, A, *, square=False, allow_low=False):
    """What a decomposition takes: batches of floating or complex matrices (square ones when
    ``square``)."""
    if square:
        check_square(api, A)
    else:
        check_at_least_2d(api, A)
    check_float(api, A, allow_low)


def check_same_dtype(api, A, B, names=("A", "B")):
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{api}: Expected {names[0]} and {names[1]} to have the same dtype, "
                           f"but found {names[0]} of type {_dtype_title(A.dtype)} and "
                           f"{names[1]} of type {_dtype_title(B.dtype)} instead.")


def check_same_device(api, A, B, names=("A", "B")):
    if A.device is not B.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least "
                           f"two devices, {A.device} and {B.device}! ({api}: {names[0]} and "
                           f"{names[1]})")


def _failure(api, info):
    if "linalg.inv" in api:
        return (f"The diagonal element {info} is zero, the inversion could not be completed "
                f"because the input matrix is singular.")
    if "solve" in api:
        return "The solver failed because the input matrix is singular."
    if "cholesky" in api:
        return (f"The factorization could not be completed because the input is not "
                f"positive-definite (the leading minor of order {info} is not "
                f"positive-definite).")
    if "svd" in api:
        return (f"The algorithm failed to converge because the input matrix is ill-conditioned "
                f"or has too many repeated singular values (error code: {info}).")
    if "eig" in api:
        return (f"The algorithm failed to converge because the input matrix is ill-conditioned "
                f"or has too many repeated eigenvalues (error code: {info}).")
    if "ldl" in api:
        return (f"The factorization could not be completed because the input has a zero "
                f"diagonal block D[{info - 1}] (error code: {info}).")
    return f"The algorithm failed (error code: {info})."


def check_errors(info, api):
    """PyTorch's ``_linalg_check_errors``: raise for the first nonzero ``info`` (a LAPACK-style
    status per matrix), naming the batch element when the input was batched. Reads ``info``
    (one device synchronization) only when some element failed."""
    if info.numel() == 0 or info.device.type == "meta":
        return  # a meta tensor has no values to check (PyTorch skips the check there too)
    # under vmap the check holds or fails for the whole batch, whose element it names (the
    # batch is physical in PyTorch's kernels too)
    info = every_example(info)
    failed = info.ne(0)
    if not bool(failed.any()):
        return
    flat = info.reshape(-1).tolist()
    i = next(k for k, v in enumerate(flat) if v != 0)
    code = flat[i]
    batch = f": (Batch element {i})" if info.ndim else ""
    if code < 0:
        raise RuntimeError(f"{api}{batch}: Argument {-code} has illegal value. Most certainly "
                           f"there is a bug in the implementation calling the backend library.")
    if "lu_factor" in api:
        raise RuntimeError(f"{api}{batch}: U[{code},{code}] is zero and using it on lu_solve "
                           f"would result in a division by zero. If you still want to perform "
                           f"the factorization, consider calling linalg.lu(A, pivot) or "
                           f"linalg.lu_factor_ex(A, pivot)")
    raise LinAlgError(f"{api}{batch}: {_failure(api, code)}")


def mH(t):
    """The conjugate transpose of the last two dims."""
    r = mT(t)
    return _grad.conj(r) if t.dtype.category == _dtype.COMPLEX else r


def batch_of(A):
    return A._shape[:-2]


def eye_like(n, like, dtype=None, m=None):
    """The identity (n x m) on ``like``'s device, in ``like``'s dtype unless given."""
    return _fac.eye_op.on(like.device, n, n if m is None else m, dtype or like.dtype,
                          like.device)


def diag_embed(v):
    """(..., k) -> (..., k, k) with ``v`` on the diagonal (differentiable: a product with I)."""
    return v.unsqueeze(-1) * eye_like(v._shape[-1], v)


def diag(t):
    return t.diagonal(0, -2, -1)


def quiet_div(num, den):
    """``num / den`` that stays 0 where ``num`` is exactly 0: a gradient an output never
    received arrives as zeros, and must not turn into 0/0 at repeated eigen/singular values."""
    # only 0/0 is masked: elsewhere this stays a plain division, linear in ``num`` around 0
    # (forward AD differentiates a backward formula at a zero output gradient); the denominator
    # is replaced there so no nan appears even in the branch ``where`` discards (its derivative
    # would turn 0 * inf into nan)
    zero = num.eq(0).logical_and(den.eq(0))
    return _ew.where(zero, 0.0, num / _ew.where(zero, 1.0, den))


def real_part(t):
    return t.real if t.dtype.category == _dtype.COMPLEX else t


_EPS = {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07,
        "float64": 2.220446049250313e-16}


def eps_of(d):
    """The machine epsilon of a real floating dtype."""
    return _EPS[d.name]


def same_batch_rule(op):
    """vmap rule of the decompositions and solvers: their tensors share the leading (batch) dims
    and the kernels loop over them, so vmap's batch is one more leading dim; an unbatched operand
    is expanded and copied (the kernels take one layout per batch)."""
    positions = [i for i in op.schema.tensor_positions]

    def rule(args, bdims, layer):
        if all(i >= len(args) or bdims[i] is None for i in positions):
            return _batching.unbatched(op, args)
        size = _batching.batch_size_of(args, bdims, layer)
        new = list(args)
        for i in positions:
            if i < len(args) and isinstance(args[i], Tensor) and bdims[i] is None:
                new[i] = _batching.materialize(args[i], None, size).contiguous()
        out = op(*new)
        return out, (0,) * len(out) if isinstance(out, (tuple, list)) else 0
    rule.family = "trailing"
    return rule
