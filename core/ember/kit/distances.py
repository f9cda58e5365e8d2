"""Kernels for ``ember.ops.distances`` on array-module backends: exact differences (no matrix
product), in row chunks that keep the (chunk, R, M) difference block near 4 M elements."""
from __future__ import annotations

import contextlib
import math

from .binding import bind

_BLOCK = 1 << 22


def _rows_per_chunk(r, m):
    return max(1, _BLOCK // max(1, r * m))


def _norm(xp, d, p):
    a = xp.abs(d)
    if p == 0:
        return (a != 0).sum(-1).astype(d.dtype)
    if math.isinf(p):
        return a.max(-1) if a.shape[-1] else a.sum(-1)
    if p == 1:
        return a.sum(-1)
    if p == 2:
        return xp.sqrt((a * a).sum(-1))
    return (a ** p).sum(-1) ** (1.0 / p)


def cdist_forward(be, x1, x2, p, compute_mode):
    xp = be.xp
    a, b = be.native(x1), be.native(x2)
    n, rows, m = a.shape
    out = xp.empty((n, rows, b.shape[1]), dtype=a.dtype)
    step = _rows_per_chunk(b.shape[1], m)
    for s in range(0, rows, step):
        out[:, s:s + step] = _norm(xp, a[:, s:s + step, None, :] - b[:, None, :, :], p)
    return be.wrap(out, x1.device)


def _weights(xp, d, dist, p):
    """d (dist)/d x1 per coordinate, PyTorch's ``_cdist_backward`` cases."""
    if p == 1:
        return xp.sign(d)
    if math.isinf(p):
        return xp.sign(d) * (xp.abs(d) == dist)
    zero = dist == 0
    safe = xp.where(zero, 1, dist)
    if p == 2:
        return xp.where(zero, 0, d / safe)
    a = xp.abs(d)
    core = d * a ** (p - 2) if p >= 2 else xp.sign(d) * a ** (p - 1)
    w = xp.where(zero, 0, core / safe ** (p - 1))
    return xp.where(d == 0, 0, w) if p < 1 else w


def cdist_backward(be, grad, x1, x2, p, cdist):
    xp = be.xp
    a, b = be.native(x1), be.native(x2)
    g, dist = be.native(grad), be.native(cdist)
    out = xp.zeros(a.shape, dtype=a.dtype)
    if p == 0:
        return be.wrap(out, x1.device)
    step = _rows_per_chunk(b.shape[1], a.shape[2])
    with xp.errstate(all="ignore") if hasattr(xp, "errstate") else _null():
        for s in range(0, a.shape[1], step):
            d = a[:, s:s + step, None, :] - b[:, None, :, :]
            w = _weights(xp, d, dist[:, s:s + step, :, None], p)
            out[:, s:s + step] = (g[:, s:s + step, :, None] * w).sum(2)
    return be.wrap(out, x1.device)


def _null():
    return contextlib.nullcontext()


TABLE = {"_cdist_forward": cdist_forward, "_cdist_backward": cdist_backward}


def register(backend) -> None:
    bind(backend, TABLE)
