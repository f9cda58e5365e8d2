"""Linear algebra kernels for array-module backends.

``xp.matmul`` takes strided operands as they are (BLAS reads transposed views directly), so no
operand is made contiguous here. Half-precision products are computed in float32 and rounded
once, as PyTorch's CPU kernels accumulate them.
"""
from __future__ import annotations

import functools

from .. import _dtype
from .array_backend import ieee_caller

HALF = frozenset(d.np for d in (_dtype.float16, _dtype.bfloat16) if d.np is not None)


def addmm(backend, quiet, self, mat1, mat2, beta, alpha):
    """``beta * self + alpha * (mat1 @ mat2)`` accumulated into the product's own buffer (one
    result array, where the composite makes one per step); ``self`` broadcasts and is not read
    when ``beta`` is 0. The op layer has checked that the scalars fit the dtype. ``quiet`` runs
    a ufunc without IEEE warnings (inf * 0, overflow to half), like the elementwise kernels."""
    xp = backend.xp
    x, y = backend.native(mat1), backend.native(mat2)
    dt = x.dtype
    if dt in HALF:
        x, y = x.astype(xp.float32), y.astype(xp.float32)
    r = xp.matmul(x, y)
    if r.dtype.kind in "iub":  # integer scalars wrap into the dtype, as the elementwise ops do
        beta, alpha = (xp.asarray(v).astype(r.dtype) for v in (beta, alpha))
    if alpha != 1:
        quiet(xp.multiply, r, alpha, r)
    if beta != 0:
        s = backend.native(self)
        if s.dtype != r.dtype:
            s = s.astype(r.dtype)
        quiet(xp.add, r, s if beta == 1 else quiet(xp.multiply, s, beta), r)
    return backend.wrap(r if r.dtype == dt else quiet(r.astype, dt), mat1.device)


def register(backend):
    xp = backend.xp
    native, wrap = backend.native, backend.wrap
    K = backend.kernels.register
    f32 = xp.dtype(xp.float32)

    def work(arrays):
        dt = arrays[0].dtype
        if dt in HALF:
            return dt, [a.astype(f32) for a in arrays]
        return dt, arrays

    def result(r, dt, dev):
        # C order, as PyTorch's results are: xp's einsum may return its operands' layout, and
        # then ``.view()`` of the result would fail
        return wrap(xp.asarray(r, dtype=dt, order="C"), dev)

    def matmul(a, b):
        dt, (x, y) = work([native(a), native(b)])
        return result(xp.matmul(x, y), dt, a.device)

    def einsum(equation, operands):
        dt, arrays = work([native(t) for t in operands])
        r = xp.asarray(xp.einsum(equation, *arrays, optimize=len(arrays) > 1))
        # a pure relabelling ("ij->ji", "ii->i") comes back as a view of the operand
        if any(xp.may_share_memory(r, a) for a in arrays):
            r = r.copy()
        return result(r, dt, operands[0].device)

    def svdvals(A):
        a = native(A)
        real = a.real.dtype
        if a.size == 0:
            k = min(a.shape[-2:])
            return wrap(xp.zeros(a.shape[:-2] + (k,), dtype=real), A.device)
        _, (x,) = work([a])
        return result(xp.linalg.svd(x, compute_uv=False), real, A.device)

    K("matmul", matmul)
    K("addmm", functools.partial(addmm, backend, ieee_caller(xp)))
    K("einsum", einsum)
    K("linalg_svdvals", svdvals)
