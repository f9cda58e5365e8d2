"""Matrix products on cuBLAS GemmEx: float16 and bfloat16 operands read and written in their own
type with float32 accumulation (tensor cores, nothing upcast), float32 in float32 -- or TF32 on
tensor cores when ``ember.set_float32_matmul_precision("high")`` (or ``"medium"``) allows it,
as ``torch.backends.cuda.matmul.allow_tf32`` does.

Every product is one strided-batched GemmEx call on the operands as they lie in memory: a matrix
whose rows or columns are contiguous is passed with its leading dimension and, when needed, the
transpose flag (so ``x @ w.T`` copies nothing), a batch whose matrices are evenly spaced -- or
broadcast, stride 0 -- is passed with its stride; only other layouts are copied first. cuBLAS is
column-major: the row-major ``C = A @ B`` is computed as ``C^T = B^T A^T`` into a fresh C-ordered
result. ``addmm``'s ``beta * self`` is GemmEx's ``beta * C`` (``self`` broadcast into the result
first), so a half-precision ``addmm`` rounds once. Other dtypes (float64, complex, integers) are
cupy's ``matmul``.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ember import get_float32_matmul_precision
from ember.kit import linalg as kit_linalg
from ember.runtime import alert_not_deterministic, are_deterministic_algorithms_enabled

# cudaDataType and cublasComputeType_t values (library_types.h, cublas_api.h)
CUDA_R_32F, CUDA_R_64F, CUDA_R_16F, CUDA_R_16BF = 0, 1, 2, 14
COMPUTE_32F, COMPUTE_32F_FAST_TF32 = 68, 77
OP_N, OP_T = 0, 1
_DATA_TYPES = {"float16": CUDA_R_16F, "bfloat16": CUDA_R_16BF, "float32": CUDA_R_32F}


def _check_determinism() -> None:
    """PyTorch's rule: cuBLAS (CUDA >= 10.2) is deterministic only with a fixed workspace
    configuration, so deterministic mode alerts unless CUBLAS_WORKSPACE_CONFIG is one."""
    if are_deterministic_algorithms_enabled() and \
            os.environ.get("CUBLAS_WORKSPACE_CONFIG") not in (":4096:8", ":16:8"):
        alert_not_deterministic(
            "a cuBLAS matrix product with CUBLAS_WORKSPACE_CONFIG unset (set "
            "CUBLAS_WORKSPACE_CONFIG=:4096:8 or :16:8 before the process starts for "
            "deterministic cuBLAS)")


def _compute_type(dtype) -> int:
    if dtype.name == "float32" and get_float32_matmul_precision() != "highest":
        return COMPUTE_32F_FAST_TF32
    return COMPUTE_32F


def _layout(shape, strides):
    """(transpose flag for cuBLAS's view of the row-major matrix, leading dimension) of a 2-D
    matrix with element ``strides``, or None when neither its rows nor its columns are
    contiguous. Row-major memory read column-major is the transpose (OP_N gives A^T)."""
    rows, cols = shape
    sr, sc = strides
    if (sc == 1 or cols == 1) and sr >= max(cols, 1):
        return OP_N, max(sr, cols, 1)
    if (sr == 1 or rows == 1) and sc >= max(rows, 1):
        return OP_T, max(sc, rows, 1)
    return None


def _batched(xp, arr, batch):
    """``arr`` (..., r, c) broadcast to ``batch`` as (B, r, c), its batch stride (elements; 0
    when broadcast) and layout; copied only when no such view exists."""
    nb = math.prod(batch)
    isz = arr.itemsize
    mats = xp.broadcast_to(arr, batch + arr.shape[-2:]).reshape((nb,) + arr.shape[-2:])
    layout = _layout(mats.shape[1:], (mats.strides[1] // isz, mats.strides[2] // isz))
    if layout is None:
        mats = xp.ascontiguousarray(mats)
        layout = _layout(mats.shape[1:], (mats.strides[1] // isz, mats.strides[2] // isz))
    return mats, (mats.strides[0] // isz if nb > 1 else 0), layout


def product(be, a, b, out=None, alpha=1.0, beta=0.0):
    """``alpha * (a @ b) + beta * out`` for float16/bfloat16/float32 arrays of one dtype, with
    numpy's broadcasting; a fresh C-ordered array of the product's shape unless ``out`` (C
    ordered, of that shape, holding the addend) is given."""
    xp = be.xp
    va, vb = a.ndim == 1, b.ndim == 1
    if va:
        a = a.reshape(1, -1)
    if vb:
        b = b.reshape(-1, 1)
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    shape = batch + (m, n)
    c = xp.empty(shape, dtype=a.dtype) if out is None else out
    if c.size and k == 0:
        if out is None or beta == 0:
            c[...] = 0
        else:
            c *= beta
    elif c.size:
        _check_determinism()
        ma, sa, (ta, lda) = _batched(xp, a, batch)
        mb, sb, (tb, ldb) = _batched(xp, b, batch)
        dt = be._np2dt[a.dtype]
        # C^T (n x m, ldc = n) = op(B^T) op(A^T)
        be._api.gemm(tb, ta, n, m, k, alpha, mb, ldb, sb, ma, lda, sa, beta, c, n, m * n,
                     math.prod(batch), _DATA_TYPES[dt.name], _compute_type(dt))
    if va and vb:
        return c.reshape(batch)
    if va:
        return c.reshape(batch + (n,))
    if vb:
        return c.reshape(batch + (m,))
    return c


def native(a) -> bool:
    """Whether GemmEx computes products of ``a``'s dtype here (float16, bfloat16, float32)."""
    return a.dtype.name in _DATA_TYPES


def addmm(be, self, mat1, mat2, beta, alpha):
    x, y = be.native(mat1), be.native(mat2)
    if not (native(x) and x.dtype == y.dtype):
        return kit_linalg.addmm(be, self, mat1, mat2, beta, alpha)
    out = be.xp.empty((x.shape[0], y.shape[1]), dtype=x.dtype)
    if beta != 0:
        out[...] = be.native(self)
    return be.wrap(product(be, x, y, out, alpha, beta), mat1.device)


TABLE = {"addmm": addmm}
