"""Kernels for ``ember.ops.resampling`` on array-module backends: one gather + weighted sum per
spatial dim with the op layer's tables (``resample_tables``), in float32 for half inputs."""
from __future__ import annotations

from ..ops import resampling as _rs
from .binding import bind


def _apply(be, a, tables):
    xp = be.xp
    nd = len(tables)
    for d, (idx, w) in enumerate(tables):
        dim = a.ndim - nd + d
        n_out, k = idx.shape
        picked = xp.take(a, xp.asarray(idx.reshape(-1)), axis=dim)
        if w is None:
            a = picked
            continue
        shape = a.shape[:dim] + (n_out, k) + a.shape[dim + 1:]
        weights = xp.asarray(w).reshape((n_out, k) + (1,) * (a.ndim - dim - 1))
        a = (picked.reshape(shape) * weights).sum(axis=dim + 1)
    return a


def upsample(be, x, output_size, mode, align_corners, scales):
    a = be.native(x)
    tables = _rs.resample_tables(mode, a.shape[2:], output_size, align_corners, scales, x.dtype)
    r = _apply(be, a, tables)
    return be.wrap(be.xp.ascontiguousarray(r.astype(a.dtype, copy=False)), x.device)


def upsample_backward(be, g, input_size, output_size, mode, align_corners, scales):
    a = be.native(g)
    tables = _rs.resample_tables(mode, input_size, output_size, align_corners, scales, g.dtype,
                                 backward=True)
    cd = _rs.compute_dtype(g.dtype).np
    r = _apply(be, a if a.dtype == cd else a.astype(cd), tables)
    return be.wrap(be.xp.ascontiguousarray(r.astype(a.dtype, copy=False)), g.device)


TABLE = {"upsample": upsample, "upsample_backward": upsample_backward}


def register(backend) -> None:
    bind(backend, TABLE)
