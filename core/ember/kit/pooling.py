"""Pooling kernels for array-module backends, one kernel per kind for any number of spatial dims
(the 2-D and 3-D ops share them).

* max pooling: the windows of the input padded with the dtype's lowest value as a strided view
  (N, C, *out, *k), one copy to (N, C, *out, prod(k)), ``argmax`` (the first maximum; a NaN
  counts as the largest and the window's last NaN wins, as PyTorch's pooling kernels update
  on every NaN, unlike its ``max``/``argmax``, which keep the first) and a table of each
  window element's flat input position (cached per shape) turns window offsets into PyTorch's
  indices. A padded element never wins over the window's first real one: the table maps it
  there, as PyTorch's kernel starts each window at its first real element. The backward puts
  each gradient at its index, in one assignment when windows cannot overlap and with one
  ``bincount`` otherwise. 2-D float32/float64 host arrays take csrc/pool.c instead (the
  forward a kernel offset at a time over rows of windows, the non-overlapping backward a
  compiled scatter), split over the compiled kernels' threads: the same values and indices.
* average pooling: one strided add per kernel offset, divided by per-position counts computed
  once per shape; the backward adds the divided gradient back the same way.
* adaptive average pooling: one small averaging matrix per spatial dim (``matmul`` along it);
  the backward multiplies by the transposes.
* adaptive max pooling: variable windows gathered to the largest window size (short windows
  repeat their last element, which never changes a maximum), then as max pooling.
"""
from __future__ import annotations

import itertools
import math
from functools import lru_cache

import numpy as np

from .._fastpath import C as _C
from .binding import bind
from .linalg import HALF


def _lowest(dt):
    if dt.kind == "f":
        return -np.inf
    if dt.kind == "b":
        return False
    return np.iinfo(dt).min


def _out_size(length, k, s, p, d, ceil_mode):
    num = length + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= length + p:
        out -= 1
    return out


def _padded(xp, x, lo, hi, value):
    """``x`` with ``lo``/``hi`` elements of ``value`` around each spatial dim (``x`` itself
    when nothing is added)."""
    if not any(lo) and not any(hi):
        return x
    shape = x.shape[:2] + tuple(s + a + b for s, a, b in zip(x.shape[2:], lo, hi))
    out = xp.full(shape, value, dtype=x.dtype)
    out[(Ellipsis,) + tuple(slice(a, a + s) for a, s in zip(lo, x.shape[2:]))] = x
    return out


def _geometry(sp, kernel, stride, padding, dilation, ceil_mode):
    """(output sizes, extra high-side padding so that every window exists in the view)."""
    out = tuple(_out_size(L, k, s, p, d, ceil_mode) for L, k, s, p, d in
                zip(sp, kernel, stride, padding, dilation))
    hi = tuple(p + max(0, (o - 1) * s + d * (k - 1) + 1 - (L + 2 * p)) for L, o, k, s, p, d in
               zip(sp, out, kernel, stride, padding, dilation))
    return out, hi


def _windows(xp, xp_, kernel, stride, dilation, out):
    st = xp_.strides
    nsp = len(kernel)
    shape = xp_.shape[:2] + tuple(out) + tuple(kernel)
    strides = st[:2] + tuple(st[2 + i] * stride[i] for i in range(nsp)) + \
        tuple(st[2 + i] * dilation[i] for i in range(nsp))
    return xp.lib.stride_tricks.as_strided(xp_, shape, strides)


@lru_cache(maxsize=256)
def _position_table(sp, out, kernel, stride, padding, dilation):
    """(prod(out), prod(k)) flat input position of each window element; padded elements map
    to their window's first real element."""
    nsp = len(sp)
    grids = []
    for i in range(nsp):
        start = np.arange(out[i]) * stride[i] - padding[i]
        pos = start[:, None] + np.arange(kernel[i])[None, :] * dilation[i]     # (o, k)
        first = start + ((np.maximum(-start, 0) + dilation[i] - 1) // dilation[i]) * dilation[i]
        pos = np.where((pos < 0) | (pos >= sp[i]), first[:, None], pos)
        grids.append(pos)
    table = np.zeros((1,) * (2 * nsp), dtype=np.int64)
    step = 1
    for i in reversed(range(nsp)):
        shape = [1] * (2 * nsp)
        shape[i], shape[nsp + i] = out[i], kernel[i]
        table = table + grids[i].reshape(shape) * step
        step *= sp[i]
    table = np.broadcast_to(table, tuple(out) + tuple(kernel))
    return np.ascontiguousarray(table.reshape(math.prod(out), math.prod(kernel)))


def _argmax_pick(be, flat, table):
    """(values, indices) of the window maxima: ``flat`` is (N, C, L, K), table (L, K). The
    first maximum wins, except that a window's last NaN does (PyTorch's pooling)."""
    xp = be.xp
    arg = flat.argmax(axis=-1)
    if flat.dtype.kind in "fc":
        nan = xp.isnan(flat)
        last_nan = flat.shape[-1] - 1 - nan[..., ::-1].argmax(axis=-1)
        arg = xp.where(nan.any(axis=-1), last_nan, arg)
    values = xp.take_along_axis(flat, arg[..., None], axis=-1)[..., 0]
    indices = be.host_constant(table)[xp.arange(table.shape[0])[None, None, :], arg]
    return values, indices


def _floating(dt):
    return dt.kind == "f" or dt.name == "bfloat16"


def _window_maxima(be, parts, table, shape):
    """(values, indices) from the window elements ``parts`` (one strided view per kernel
    offset, in window order) without data-dependent branches: ``argmax`` and ``where`` over
    random data mispredict a branch per element (about 10x slower here). The first element
    equal to the maximum wins, and in a window with a NaN its last NaN (as PyTorch's). On host
    arrays a window with a NaN is left to ``argmax`` (one check beats NaN-aware compares); a
    device backend compares NaN-aware rather than read the check back."""
    xp = be.xp
    values = parts[0].copy()
    for p in parts[1:]:
        xp.maximum(values, p, out=values)
    nan = None
    if _floating(values.dtype):
        if be.values_on_host:
            if xp.isnan(values).any():
                return None
        else:
            nan = values != values
    t = be.host_constant(table).reshape(shape[2:] + (len(parts),))
    indices = xp.zeros(shape, dtype=xp.int64)
    found = xp.zeros(shape, dtype=bool)
    for k, p in enumerate(parts):
        hit = (p == values) & ~found
        found |= hit
        if nan is not None:   # every NaN overrides: the last one stays
            hit = (hit & ~nan) | (p != p)
        indices = xp.where(hit, t[..., k], indices)
    return values, indices


def max_pool(be, self, kernel_size, stride, padding, dilation, ceil_mode):
    xp = be.xp
    x = be.native(self)
    n, c = x.shape[:2]
    sp = x.shape[2:]
    k, s, p, d = (tuple(v) for v in (kernel_size, stride, padding, dilation))
    out, hi = _geometry(sp, k, s, p, d, ceil_mode)
    dev = self.device
    if len(k) == 2 and _C is not None:   # compiled, plane by plane (csrc/pool.c)
        values = xp.empty((n, c) + out, dtype=x.dtype)
        indices = xp.empty((n, c) + out, dtype=xp.int64)
        if _C.max_pool2d(x, values, indices, k, s, p, d):
            return be.wrap(values, dev), be.wrap(indices, dev)
    padded = _padded(xp, x, p, hi, _lowest(x.dtype))
    table = _position_table(sp, out, k, s, p, d)
    parts = [padded[region] for region in _offsets(k, s, out, d)]
    picked = _window_maxima(be, parts, table, (n, c) + out)
    if picked is None:  # NaNs: the last one in each window wins
        win = _windows(xp, padded, k, s, d, out)
        picked = _argmax_pick(be, win.reshape(n, c, math.prod(out), math.prod(k)), table)
    values, indices = picked
    return (be.wrap(xp.ascontiguousarray(values).reshape((n, c) + out), dev),
            be.wrap(xp.ascontiguousarray(indices).reshape((n, c) + out), dev))


def _scatter_to_indices(be, grad_output, self, indices, overlapping):
    """Each gradient added at its flat per-plane index: a zero tensor of ``self``'s shape."""
    xp = be.xp
    g = be.native(grad_output)
    idx = be.native(indices)
    n, c = self.shape[:2]
    plane = math.prod(self.shape[2:])
    rows = n * c
    g2 = g.reshape(rows, -1)
    i2 = idx.reshape(rows, -1)
    if not overlapping:  # no input position is in two windows: a plain assignment
        out = xp.zeros((rows, plane), dtype=g.dtype)
        if _C is None or not _C.scatter_rows(out, i2, g2):   # compiled: csrc/pool.c
            xp.put_along_axis(out, i2, g2, axis=1)
    else:
        flat = (i2 + (xp.arange(rows) * plane)[:, None]).ravel()
        acc = be.bincount("max_pool_backward", flat, g2.ravel(), rows * plane)
        out = acc.astype(g.dtype) if g.dtype.kind != "c" else acc
    return be.wrap(out.reshape(tuple(self.shape)), self.device)


def max_pool_backward(be, grad_output, self, kernel_size, stride, padding, dilation, ceil_mode,
                      indices):
    overlapping = any(s < d * (k - 1) + 1 for k, s, d in zip(kernel_size, stride, dilation))
    return _scatter_to_indices(be, grad_output, self, indices, overlapping)


# -- average pooling ------------------------------------------------------------------------------
@lru_cache(maxsize=256)
def _avg_divisor(sp, out, kernel, stride, padding, count_include_pad):
    """Per output position divisor (PyTorch's rule), or one number when all are equal."""
    total = np.ones((), dtype=np.float64)
    for L, o, k, s, p in zip(sp, out, kernel, stride, padding):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, L + p)
        cnt = end - start
        if not count_include_pad:
            cnt = np.minimum(end, L) - np.maximum(start, 0)
        total = np.multiply.outer(total, cnt.astype(np.float64))
    first = total.flat[0]
    return float(first) if (total == first).all() else total


def _offsets(kernel, stride, out, dilation=None):
    """The strided region of the padded input holding window element ``offset`` of every
    window, for each kernel offset in window (row-major) order."""
    dilation = dilation or (1,) * len(kernel)
    for offset in itertools.product(*(range(k) for k in kernel)):
        yield (Ellipsis,) + tuple(slice(o * d, o * d + (m - 1) * s + 1, s)
                                  for o, d, m, s in zip(offset, dilation, out, stride))


def _avg_setup(self, kernel_size, stride, padding, ceil_mode, count_include_pad,
               divisor_override):
    sp = tuple(self.shape[2:])
    k, s, p = (tuple(v) for v in (kernel_size, stride, padding))
    out, hi = _geometry(sp, k, s, p, (1,) * len(k), ceil_mode)
    div = divisor_override if divisor_override is not None else \
        _avg_divisor(sp, out, k, s, p, bool(count_include_pad))
    return sp, k, s, p, out, hi, div


def _divide(xp, total, div, dt):
    if dt.kind in "iub":  # PyTorch divides integers in C++: truncation
        return xp.trunc(total / div).astype(dt)
    return (total / div).astype(dt, copy=False)


def avg_pool(be, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
             divisor_override):
    xp = be.xp
    x = be.native(self)
    dt = x.dtype
    sp, k, s, p, out, hi, div = _avg_setup(self, kernel_size, stride, padding, ceil_mode,
                                          count_include_pad, divisor_override)
    work = x.astype(xp.float32) if dt in HALF else x.astype(xp.int64) if dt.kind in "iub" else x
    xp_ = _padded(xp, work, p, hi, 0)
    total = None
    for region in _offsets(k, s, out):
        part = xp_[region]
        total = part.copy() if total is None else xp.add(total, part, out=total)
    r = _divide(xp, total, div if isinstance(div, float) or isinstance(div, int)
                else be.host_constant(div), dt)
    return be.wrap(xp.ascontiguousarray(r), self.device)


def avg_pool_backward(be, grad_output, self, kernel_size, stride, padding, ceil_mode,
                      count_include_pad, divisor_override):
    xp = be.xp
    g = be.native(grad_output)
    dt = g.dtype
    sp, k, s, p, out, hi, div = _avg_setup(self, kernel_size, stride, padding, ceil_mode,
                                          count_include_pad, divisor_override)
    work = g.astype(xp.float32) if dt in HALF else g
    gd = work / (div if isinstance(div, (int, float)) else be.host_constant(div, work.dtype))
    acc = xp.zeros(tuple(self.shape[:2]) + tuple(L + a + b for L, a, b in zip(sp, p, hi)),
                   dtype=gd.dtype)
    for region in _offsets(k, s, out):
        acc[region] += gd
    r = acc[(Ellipsis,) + tuple(slice(a, a + L) for a, L in zip(p, sp))]
    return be.wrap(xp.ascontiguousarray(r, dtype=dt), self.device)


# -- adaptive pooling -----------------------------------------------------------------------------
def _bounds(length, out):
    o = np.arange(out)
    return (o * length) // out, -((-(o + 1) * length) // out)


@lru_cache(maxsize=256)
def _avg_matrix(length, out):
    """(out, length): row i averages window i."""
    start, end = _bounds(length, out)
    i = np.arange(length)
    inside = (i[None, :] >= start[:, None]) & (i[None, :] < end[:, None])
    return inside / np.maximum(end - start, 1)[:, None].astype(np.float64)


def _along(xp, a, dim, m):
    """Contract dim ``dim`` of ``a`` with the rows of matrix ``m`` (new size m.shape[0])."""
    moved = xp.moveaxis(a, dim, -1)
    return xp.moveaxis(xp.matmul(moved, m.T), -1, dim)


def adaptive_avg_pool(be, self, output_size):
    xp = be.xp
    x = be.native(self)
    dt = x.dtype
    r = x.astype(xp.float32) if dt in HALF else x
    for i, (L, o) in enumerate(zip(x.shape[2:], output_size)):
        if L == o:
            continue
        r = _along(xp, r, 2 + i, be.host_constant(_avg_matrix(L, o), r.dtype))
    return be.wrap(xp.ascontiguousarray(r, dtype=dt), self.device)


def adaptive_avg_pool_backward(be, grad_output, self):
    xp = be.xp
    g = be.native(grad_output)
    dt = g.dtype
    r = g.astype(xp.float32) if dt in HALF else g
    for i, (L, o) in enumerate(zip(self.shape[2:], g.shape[2:])):
        if L == o:
            continue
        r = _along(xp, r, 2 + i, be.host_constant(_avg_matrix(L, o), r.dtype).T)
    return be.wrap(xp.ascontiguousarray(r, dtype=dt), self.device)


@lru_cache(maxsize=256)
def _adaptive_rows(length, out):
    """(out, kmax) input positions of each window, short windows padded with their last one."""
    start, end = _bounds(length, out)
    kmax = int((end - start).max()) if out else 1
    return np.minimum(start[:, None] + np.arange(kmax)[None, :], end[:, None] - 1)


@lru_cache(maxsize=256)
def _adaptive_table(sp, out):
    rows = [_adaptive_rows(L, o) for L, o in zip(sp, out)]
    nsp = len(sp)
    table = np.zeros((1,) * (2 * nsp), dtype=np.int64)
    step = 1
    for i in reversed(range(nsp)):
        shape = [1] * (2 * nsp)
        shape[i], shape[nsp + i] = rows[i].shape
        table = table + rows[i].reshape(shape) * step
        step *= sp[i]
    ks = tuple(r.shape[1] for r in rows)
    table = np.broadcast_to(table, tuple(out) + ks)
    return np.ascontiguousarray(table.reshape(math.prod(out), math.prod(ks)))


def adaptive_max_pool(be, self, output_size):
    xp = be.xp
    x = be.native(self)
    n, c = x.shape[:2]
    sp = tuple(x.shape[2:])
    out = tuple(output_size)
    table = _adaptive_table(sp, out)
    flat = x.reshape(n, c, -1)[:, :, be.host_constant(table)]        # (N, C, L, K)
    values, indices = _argmax_pick(be, flat, table)
    dev = self.device
    return (be.wrap(xp.ascontiguousarray(values).reshape((n, c) + out), dev),
            be.wrap(xp.ascontiguousarray(indices).reshape((n, c) + out), dev))


def adaptive_max_pool_backward(be, grad_output, self, indices):
    return _scatter_to_indices(be, grad_output, self, indices, True)


TABLE = {}
for _n in (2, 3):
    TABLE[f"max_pool{_n}d_with_indices"] = max_pool
    TABLE[f"max_pool{_n}d_with_indices_backward"] = max_pool_backward
    TABLE[f"avg_pool{_n}d"] = avg_pool
    TABLE[f"avg_pool{_n}d_backward"] = avg_pool_backward
    TABLE[f"_adaptive_avg_pool{_n}d"] = adaptive_avg_pool
    TABLE[f"_adaptive_avg_pool{_n}d_backward"] = adaptive_avg_pool_backward
    TABLE[f"adaptive_max_pool{_n}d"] = adaptive_max_pool
    TABLE[f"adaptive_max_pool{_n}d_backward"] = adaptive_max_pool_backward


def register(backend) -> None:
    bind(backend, TABLE)
