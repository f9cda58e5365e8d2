"""cuBLAS on the simulated GPU: ``gemm`` reads its operands the way cublasGemmStridedBatchedEx
does -- column-major matrices at ``ptr + j * stride + i + l * ld`` -- so the backend's choice of
transpose flags, leading dimensions and batch strides is checked against numpy's product, not
merely passed through. A leading dimension smaller than the matrix, or a matrix reaching past
its operand's memory, raises (cuBLAS would return CUBLAS_STATUS_INVALID_VALUE or read out of
bounds). The arithmetic follows the compute type: float32 accumulation for half precision,
inputs rounded to TF32 (10-bit mantissa) for CUBLAS_COMPUTE_32F_FAST_TF32."""
from __future__ import annotations

import ml_dtypes
import numpy as np

DATA_TYPES = {0: np.dtype(np.float32), 1: np.dtype(np.float64), 2: np.dtype(np.float16),
              14: np.dtype(ml_dtypes.bfloat16)}
COMPUTE_64F = (70, 71)
COMPUTE_TF32 = 77


class CublasError(RuntimeError):
    pass


def _extent(arr) -> int:
    """Elements from ``arr``'s first element to its last (strides >= 0)."""
    isz = arr.itemsize
    return 1 + sum((n - 1) * (s // isz) for n, s in zip(arr.shape, arr.strides) if n)


def _colmajor(plain, name, batch, rows, cols, ld, stride):
    if ld < max(1, rows):
        raise CublasError(f"CUBLAS_STATUS_INVALID_VALUE: ld{name}={ld} < rows={rows}")
    last = (batch - 1) * stride + (rows - 1) + (cols - 1) * ld
    if last >= _extent(plain):
        raise CublasError(f"cuBLAS would read {name} out of bounds: element {last} of an "
                          f"operand spanning {_extent(plain)} (shape {plain.shape}, strides "
                          f"{plain.strides})")
    isz = plain.itemsize
    return np.lib.stride_tricks.as_strided(plain, (batch, rows, cols),
                                           (stride * isz, isz, ld * isz))


def _tf32(x):
    u = x.view(np.uint32)
    return ((u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def gemm(sim, transa, transb, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
         ldc, stride_c, batch, data_type, compute_type):
    arrays = sim.arrays
    stream = sim.current_stream()
    stamp = stream.issue()
    dt = DATA_TYPES[data_type]
    for name, arr in (("A", a), ("B", b), ("C", c)):
        if arr.dtype != dt:
            raise CublasError(f"{name} is {arr.dtype} but GemmEx was told {dt}")
    ok = arrays.check_readable(a, stream) and arrays.check_readable(b, stream)
    ra, ca = (k, m) if transa else (m, k)
    rb, cb = (n, k) if transb else (k, n)
    A = _colmajor(a.view(np.ndarray), "a", batch, ra, ca, lda, stride_a)
    B = _colmajor(b.view(np.ndarray), "b", batch, rb, cb, ldb, stride_b)
    if beta != 0:
        ok = ok and arrays.check_readable(c, stream)
    C = _colmajor(arrays.writable(c, stream, stamp), "c", batch, m, n, ldc, stride_c)
    work = np.float64 if compute_type in COMPUTE_64F else np.float32
    x = (A.transpose(0, 2, 1) if transa else A).astype(work)
    y = (B.transpose(0, 2, 1) if transb else B).astype(work)
    if compute_type == COMPUTE_TF32:
        x, y = _tf32(x), _tf32(y)
    r = alpha * np.matmul(x, y)
    if beta != 0:
        r = r + beta * C.astype(work)
    C[...] = r.astype(dt)
    if not ok:   # an operand the stream could not know: the product is garbage too
        c._blk.poisoned = True
