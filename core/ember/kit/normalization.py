"""Normalisation kernels for array-module backends: batch, layer and group norm and their
backward ops, each a handful of whole-array expressions over an (outer, groups, inner) view.

Every kind is the same computation on a different 3-D view of the input: statistics per middle
index over the outer and inner dims (batch norm: (N, C, spatial)), or per outer index over the
rest (layer norm: (rows, 1, normalized); group norm: (N * G, 1, C/G * spatial)). Statistics are
accumulated in float32 for half inputs and in the input's dtype otherwise; the variance is the
mean of squared deviations (two passes, no cancellation).
"""
from __future__ import annotations

from .binding import bind
from .linalg import HALF
from .row_reduce import row_sum


def _work(xp, a):
    return a.astype(xp.float32) if a is not None and a.dtype in HALF else a


def _stats(xp, x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    xm = x - mean
    var = xp.mean(xm * xm, axis=axes, keepdims=True)
    return mean, xm, var, 1.0 / xp.sqrt(var + eps)


def _wrap(be, arr, dtype, device):
    if arr.dtype != dtype:
        arr = arr.astype(dtype)
    return be.wrap(arr if arr.flags.c_contiguous else be.xp.ascontiguousarray(arr), device)


# -- batch norm -----------------------------------------------------------------------------------
def _spatial(x):
    """The product of the dims after the channel dim (explicit: -1 is ambiguous when empty)."""
    n = 1
    for s in x.shape[2:]:
        n *= s
    return n


def batch_norm(be, input, weight, bias, running_mean, running_var, training, momentum, eps):
    xp = be.xp
    x0 = be.native(input)
    dt = x0.dtype
    n, c = x0.shape[:2]
    x = _work(xp, x0).reshape(n, c, _spatial(x0))
    dev = input.device
    if training:
        mean, xm, var, invstd = _stats(xp, x, (0, 2), eps)
        count = x.size // max(c, 1)
        for running, value in ((running_mean, mean), (running_var, var)):
            if running is None:
                continue
            r = be.native(running)
            v = value.reshape(c)
            if running is running_var:
                v = v * (count / max(count - 1, 1))
            r *= 1 - momentum
            r += (momentum * v).astype(r.dtype, copy=False)
    else:
        mean = _work(xp, be.native(running_mean)).reshape(1, c, 1)
        invstd = 1.0 / xp.sqrt(_work(xp, be.native(running_var)).reshape(1, c, 1) + eps)
        xm = x - mean
    scale = invstd if weight is None else invstd * _work(xp, be.native(weight)).reshape(1, c, 1)
    out = xm * scale
    if bias is not None:
        out += _work(xp, be.native(bias)).reshape(1, c, 1)
    sd = xp.float32 if dt in HALF else dt
    if training:
        save_mean, save_invstd = mean.reshape(c), invstd.reshape(c)
    else:
        save_mean = save_invstd = xp.empty((0,), dtype=sd)
    return (_wrap(be, out.reshape(x0.shape), dt, dev), _wrap(be, save_mean, sd, dev),
            _wrap(be, save_invstd, sd, dev))


def batch_norm_backward(be, grad_out, input, weight, running_mean, running_var, save_mean,
                        save_invstd, train, eps, output_mask):
    xp = be.xp
    x0 = be.native(input)
    dt = x0.dtype
    n, c = x0.shape[:2]
    x = _work(xp, x0).reshape(n, c, _spatial(x0))
    g = _work(xp, be.native(grad_out)).reshape(n, c, _spatial(x0))
    dev = input.device
    if train:
        mean = _work(xp, be.native(save_mean)).reshape(1, c, 1)
        invstd = _work(xp, be.native(save_invstd)).reshape(1, c, 1)
    else:
        mean = _work(xp, be.native(running_mean)).reshape(1, c, 1)
        invstd = 1.0 / xp.sqrt(_work(xp, be.native(running_var)).reshape(1, c, 1) + eps)
    xh = (x - mean) * invstd
    s1 = g.sum(axis=(0, 2), keepdims=True)
    s2 = (g * xh).sum(axis=(0, 2), keepdims=True)
    gi = gw = gb = None
    if output_mask[0]:
        scale = invstd if weight is None else \
            invstd * _work(xp, be.native(weight)).reshape(1, c, 1)
        if train:
            m = x.size // max(c, 1)
            r = (g - s1 / m - xh * (s2 / m)) * scale
        else:
            r = g * scale
        gi = _wrap(be, r.reshape(x0.shape), dt, dev)
    if output_mask[1]:
        gw = _wrap(be, s2.reshape(c), dt, dev)
    if output_mask[2]:
        gb = _wrap(be, s1.reshape(c), dt, dev)
    return gi, gw, gb


# -- layer norm and group norm: statistics per row of a (rows, elements) view --------------------
def _row_norm(be, input, rows, cols, eps):
    xp = be.xp
    x0 = be.native(input)
    x = _work(xp, x0).reshape(rows, cols)        # (not -1: ambiguous for an empty input)
    if not cols:
        mean, xm, var, rstd = _stats(xp, x, (1,), eps)
        return x0, xm * rstd, mean, rstd
    # _stats along the rows, with the short-row sums of kit/row_reduce.py
    mean = row_sum(xp, x) / cols
    xm = x - mean
    var = row_sum(xp, xm * xm) / cols
    rstd = 1.0 / xp.sqrt(var + eps)
    return x0, xm * rstd, mean, rstd


def layer_norm(be, input, normalized_shape, weight, bias, eps):
    xp = be.xp
    k = len(normalized_shape)
    lead = tuple(input.shape[:input.ndim - k])
    rows = cols = 1
    for s in lead:
        rows *= s
    for s in normalized_shape:
        cols *= s
    x0, xh, mean, rstd = _row_norm(be, input, rows, cols, eps)
    dt = x0.dtype
    out = xh
    if weight is not None:
        out = out * _work(xp, be.native(weight)).reshape(1, -1)
    if bias is not None:
        out = out + _work(xp, be.native(bias)).reshape(1, -1)
    sd = xp.float32 if dt in HALF else dt
    stats = lead + (1,) * k
    dev = input.device
    return (_wrap(be, out.reshape(x0.shape), dt, dev), _wrap(be, mean.reshape(stats), sd, dev),
            _wrap(be, rstd.reshape(stats), sd, dev))


def _row_backward(xp, g, x, mean, rstd, m):
    """N(g) = rstd * (g - mean(g) - xh * mean(g * xh)) per row (the input gradient)."""
    xh = (x - mean) * rstd
    return rstd * (g - row_sum(xp, g) / m - xh * (row_sum(xp, g * xh) / m)), xh


def layer_norm_backward(be, grad_out, input, normalized_shape, mean, rstd, weight, bias,
                        output_mask):
    xp = be.xp
    x0 = be.native(input)
    dt = x0.dtype
    d = 1
    for s in normalized_shape:
        d *= s
    rows = x0.size // d if d else 0
    x = _work(xp, x0).reshape(rows, d)
    g = _work(xp, be.native(grad_out)).reshape(rows, d)
    mu = _work(xp, be.native(mean)).reshape(rows, 1)
    rs = _work(xp, be.native(rstd)).reshape(rows, 1)
    w = _work(xp, be.native(weight)).reshape(1, d) if weight is not None else None
    dev = input.device
    gi = gw = gb = None
    xh = (x - mu) * rs
    if output_mask[0]:
        r, _ = _row_backward(xp, g if w is None else g * w, x, mu, rs, d)
        gi = _wrap(be, r.reshape(x0.shape), dt, dev)
    ns = tuple(normalized_shape)
    if output_mask[1]:
        gw = _wrap(be, (g * xh).sum(axis=0).reshape(ns), dt, dev)
    if output_mask[2]:
        gb = _wrap(be, g.sum(axis=0).reshape(ns), dt, dev)
    return gi, gw, gb


def group_norm(be, input, weight, bias, N, C, HxW, group, eps):
    xp = be.xp
    x0, xh, mean, rstd = _row_norm(be, input, N * group, (C // group) * HxW, eps)
    dt = x0.dtype
    out = xh.reshape(N, C, HxW)
    if weight is not None:
        out = out * _work(xp, be.native(weight)).reshape(1, C, 1)
    if bias is not None:
        out = out + _work(xp, be.native(bias)).reshape(1, C, 1)
    sd = xp.float32 if dt in HALF else dt
    dev = input.device
    return (_wrap(be, out.reshape(x0.shape), dt, dev),
            _wrap(be, mean.reshape(N, group), sd, dev), _wrap(be, rstd.reshape(N, group), sd, dev))


def group_norm_backward(be, grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask):
    xp = be.xp
    x0 = be.native(input)
    dt = x0.dtype
    rows, m = N * group, (C // group) * HxW
    x = _work(xp, x0).reshape(rows, m)
    g = _work(xp, be.native(grad_out)).reshape(N, C, HxW)
    mu = _work(xp, be.native(mean)).reshape(rows, 1)
    rs = _work(xp, be.native(rstd)).reshape(rows, 1)
    dev = input.device
    gi = gw = gb = None
    xh = ((x - mu) * rs).reshape(N, C, HxW)
    if output_mask[0]:
        gx = g if weight is None else g * _work(xp, be.native(weight)).reshape(1, C, 1)
        r, _ = _row_backward(xp, gx.reshape(rows, m), x, mu, rs, m)
        gi = _wrap(be, r.reshape(x0.shape), dt, dev)
    if output_mask[1]:
        gw = _wrap(be, (g * xh).sum(axis=(0, 2)), dt, dev)
    if output_mask[2]:
        gb = _wrap(be, g.sum(axis=(0, 2)), dt, dev)
    return gi, gw, gb


TABLE = {
    "native_batch_norm": batch_norm, "native_batch_norm_backward": batch_norm_backward,
    "native_layer_norm": layer_norm, "native_layer_norm_backward": layer_norm_backward,
    "native_group_norm": group_norm, "native_group_norm_backward": group_norm_backward,
}


def register(backend) -> None:
    bind(backend, TABLE)
