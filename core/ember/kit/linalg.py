"""Linear algebra kernels for array-module backends.

``xp.matmul`` takes strided operands as they are (BLAS reads transposed views directly), so no
operand is made contiguous here. Products go through ``be.matmul`` (``ArrayBackend.matmul``:
half precision computed in float32 and rounded once, as PyTorch's CPU kernels accumulate them; a
device backend may compute half precision natively, as CUDA's GemmEx does).
"""
from __future__ import annotations

from ..runtime import dtypes
from .binding import bind
from .host import for_numpy_kernels

HALF = frozenset(d.np for d in (dtypes.float16, dtypes.bfloat16) if d.np is not None)


def _work(xp, arrays):
    """(result dtype, operands to compute with): half precision is computed in float32."""
    dt = arrays[0].dtype
    if dt in HALF:
        f32 = xp.dtype(xp.float32)
        return dt, [a.astype(f32) for a in arrays]
    return dt, arrays


def _result(be, r, dt, dev):
    # C order, as PyTorch's results are: xp's einsum may return its operands' layout, and then
    # ``.view()`` of the result would fail
    return be.wrap(be.xp.asarray(r, dtype=dt, order="C"), dev)


def matmul(be, a, b):
    x, y = be.native(a), be.native(b)
    return _result(be, be.matmul(x, y), x.dtype, a.device)


def einsum(be, equation, operands):
    xp = be.xp
    dt, arrays = _work(xp, [be.native(t) for t in operands])
    r = xp.asarray(xp.einsum(equation, *arrays, optimize=len(arrays) > 1))
    # a pure relabelling ("ij->ji", "ii->i") comes back as a view of the operand
    if any(xp.may_share_memory(r, a) for a in arrays):
        r = r.copy()
    return _result(be, r, dt, operands[0].device)


def svdvals(be, A):
    xp = be.xp
    a = be.native(A)
    real = a.real.dtype
    if a.size == 0:
        k = min(a.shape[-2:])
        return be.wrap(xp.zeros(a.shape[:-2] + (k,), dtype=real), A.device)
    _, (x,) = _work(xp, [a])
    try:
        s = xp.linalg.svd(x, compute_uv=False)
    except xp.linalg.LinAlgError:  # numpy's bare "SVD did not converge"
        from .linalg_lapack import _converge_error  # start-up: kit.linalg_lapack (~70 ms)
        raise _converge_error("linalg.svdvals", "singular values") from None
    return _result(be, s, real, A.device)


def _add_scaled(be, self, r, beta, alpha, dt, dev):
    """``beta * self + alpha * r`` accumulated into the product ``r`` (one result array, where
    the composite makes one per step); ``self`` broadcasts and is not read when ``beta`` is 0.
    The op layer has checked that the scalars fit the dtype. ``be.ieee`` runs a ufunc without
    IEEE warnings (inf * 0, overflow to half), like the elementwise kernels."""
    xp, quiet = be.xp, be.ieee
    if r.dtype.kind in "iub":  # integer scalars wrap into the dtype, as the elementwise ops do
        beta, alpha = (xp.asarray(v).astype(r.dtype) for v in (beta, alpha))
    if alpha != 1:
        quiet(xp.multiply, r, alpha, r)
    if beta != 0:
        s = be.native(self)
        if s.dtype != r.dtype:
            s = s.astype(r.dtype)
        quiet(xp.add, r, s if beta == 1 else quiet(xp.multiply, s, beta), r)
    return be.wrap(r if r.dtype == dt else quiet(r.astype, dt), dev)


def _operands(be, a, b):
    x, y = be.native(a), be.native(b)
    dt = x.dtype
    if dt in HALF:
        x, y = x.astype(be.xp.float32), y.astype(be.xp.float32)
    return dt, x, y


def addmm(be, self, mat1, mat2, beta, alpha):
    """``beta * self + alpha * (mat1 @ mat2)``; also baddbmm's and addmv's kernel (matmul's
    broadcasting covers batches and a vector)."""
    dt, x, y = _operands(be, mat1, mat2)
    # two matrices on the host: the backend's matmul, which picks the faster GEMM layout for a
    # linear layer's x @ W.T (array_backend._swap_helps); a device keeps its array module's
    r = be.matmul(x, y) if be.values_on_host and x.ndim == y.ndim == 2 else be.xp.matmul(x, y)
    return _add_scaled(be, self, r, beta, alpha, dt, mat1.device)


def addr(be, self, vec1, vec2, beta, alpha):
    dt, x, y = _operands(be, vec1, vec2)
    outer = be.xp.multiply(x[:, None], y[None, :])   # (cupy has no ufunc.outer)
    return _add_scaled(be, self, outer, beta, alpha, dt, vec1.device)


def addbmm(be, self, batch1, batch2, beta, alpha):
    # sum_b batch1[b] @ batch2[b] as one GEMM: (n, b*k) @ (b*k, m)
    dt, x, y = _operands(be, batch1, batch2)
    b, n, k = x.shape
    r = be.xp.matmul(x.transpose(1, 0, 2).reshape(n, b * k), y.reshape(b * k, y.shape[2]))
    return _add_scaled(be, self, r, beta, alpha, dt, batch1.device)


def vdot(be, a, b):
    dt, x, y = _operands(be, a, b)
    return _result(be, be.xp.vdot(x, y), dt, a.device)


def trace(be, a):
    # integers and bools sum to int64; half precision accumulates in float32, as torch's
    x = be.native(a)
    out = x.dtype if a.dtype.is_floating_point or a.dtype.is_complex else be.xp.dtype(be.xp.int64)
    work = be.xp.float32 if x.dtype in HALF else out
    return _result(be, be.xp.trace(x, dtype=work), out, a.device)


from .linalg_lapack import TABLE as _LAPACK  # noqa: E402 - the decompositions and solvers

TABLE = {"matmul": matmul, "addmm": addmm, "baddbmm": addmm, "addmv": addmm, "addr": addr,
         "addbmm": addbmm, "vdot": vdot, "trace": trace, "einsum": einsum,
         "linalg_svdvals": svdvals}


def register(backend) -> None:
    bind(backend, TABLE)
    # scipy's LAPACK takes numpy arrays: a device backend (cupy) runs these on the host
    bind(for_numpy_kernels(backend), _LAPACK)
