"""What the linear algebra family shares: argument checks with PyTorch's messages (products and
fused multiply-adds make the same ones) and the layout helpers of its derivative formulas."""
from __future__ import annotations

import math

from ... import _dtype
from ..._tensor import Tensor
from .. import views as _views
from .._util import _broadcast_pair, _dtype_title

# PyTorch names dtypes by their C++ scalar type in a few messages ("float != double")
_CPP = {"float32": "float", "float64": "double", "float16": "c10::Half",
        "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int", "int16": "short int",
        "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
        "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def cpp_dtype_name(d) -> str:
    return _CPP[d.name]


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


def same_dtype(a, b):
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
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
        same_dtype(a, b)
        ka, kb = a._shape[-1], b._shape[-2]
        if nb == 2:
            # PyTorch folds the batch dims of ``a`` into rows and reports the folded shapes
            if ka != kb:
                raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied "
                                   f"({math.prod(a._shape[:-1])}x{ka} and {kb}x{b._shape[-1]})")
        else:
            batch = math.prod(_broadcast_pair(a._shape[:-2], b._shape[:-2]))
            if ka != kb:
                raise RuntimeError(f"{op}: Expected size for first two dimensions of batch2 tensor to "
                                   f"be: [{batch}, {ka}] but got: [{batch}, {kb}].")
    no_bool("matmul", a)


def mm_check(a, b, names=("self", "mat2"), op="mm"):
    if a.ndim != 2:
        raise RuntimeError(f"{op}: {names[0]} must be a matrix, got a {a.ndim}-D tensor")
    if b.ndim != 2:
        raise RuntimeError(f"{op}: {names[1]} must be a matrix, got a {b.ndim}-D tensor")
    same_dtype(a, b)
    if a._shape[1] != b._shape[0]:
        raise RuntimeError(f"{op}: mat1 and mat2 shapes cannot be multiplied ({a._shape[0]}x"
                           f"{a._shape[1]} and {b._shape[0]}x{b._shape[1]})")


def bmm_check(a, b, op="bmm"):
    if a.ndim != 3:
        raise RuntimeError(f"{op}: batch1 must be a 3D tensor, got a {a.ndim}-D tensor")
    if b.ndim != 3:
        raise RuntimeError(f"{op}: batch2 must be a 3D tensor, got a {b.ndim}-D tensor")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_title(a.dtype)} but found "
                           f"{_dtype_title(b.dtype)}")
    if b._shape[:2] != (a._shape[0], a._shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{a._shape[0]}, {a._shape[2]}] but got: [{b._shape[0]}, "
                           f"{b._shape[1]}].")


def mv_shape_check(mat, vec, bias_ndim=1):
    if mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {bias_ndim}, {mat.ndim}, "
                           f"{vec.ndim}")


# -- derivative helpers -------------------------------------------------------------------------
def mT(t):
    """The transpose of the last two dims (a view)."""
    dims = list(range(t.ndim))
    dims[-1], dims[-2] = dims[-2], dims[-1]
    return _views.permute_op(t, tuple(dims))


def col_major(t):
    """A 2-D operand laid out as the transpose of a contiguous matrix (``W.t()`` in linear):
    its gradient is made as ``(g^T a)^T`` so it arrives at ``W`` contiguous and the engine need
    not copy it."""
    return t.ndim == 2 and t._stride[0] == 1 and t._stride[1] != 1 and t._shape[1] > 1
