"""Batch, layer and group norm and their backward ops on the device, written with the backend's
own kernels (the reductions of ``ops_reduction``, the elementwise template) over the same
(outer, groups, inner) views as the array kit (``ember.kit.normalization``): statistics in two
passes (mean, then mean of squared deviations), one op per layer for autograd, a dozen short
launches inside it.
"""
from __future__ import annotations

from ember.runtime import dtypes as D
from ember.runtime import get_op, shape_of


def _ops():
    return {n: get_op(n) for n in ("sum", "mean", "sub", "mul", "add", "div", "rsqrt",
                                   "mul_", "add_", "_to_copy")}


_OPS = None


def _o():
    global _OPS
    if _OPS is None:
        _OPS = _ops()
    return _OPS


def _acc(t):
    """float32 work for half inputs."""
    if t is not None and t.dtype is D.float16:
        return _o()["_to_copy"](t, D.float32)
    return t


def _cast(t, dt):
    return t if t.dtype is dt else _o()["_to_copy"](t, dt)


def _stats(x, dims, eps):
    o = _o()
    mean = o["mean"](x, dims, True, x.dtype)
    xm = o["sub"](x, mean, 1, x.dtype)
    var = o["mean"](o["mul"](xm, xm, x.dtype), dims, True, x.dtype)
    rstd = o["rsqrt"](o["add"](var, eps, 1, x.dtype), x.dtype)
    return mean, xm, var, rstd


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps):
    o = _o()
    n, c = shape_of(input)[:2]
    x = _acc(input).reshape(n, c, _prod(shape_of(input)[2:]))
    wt = x.dtype
    if training:
        mean, xm, var, invstd = _stats(x, (0, 2), eps)
        count = x.numel() // max(c, 1)
        for running, value, scale in ((running_mean, mean, 1.0),
                                      (running_var, var, count / max(count - 1, 1))):
            if running is None:
                continue
            v = _cast(o["mul"](value.reshape(c), momentum * scale, wt), running.dtype)
            o["mul_"](running, 1 - momentum, running.dtype)
            o["add_"](running, v, 1, running.dtype)
    else:
        mean = _acc(running_mean).reshape(1, c, 1)
        invstd = o["rsqrt"](o["add"](_acc(running_var).reshape(1, c, 1), eps, 1, wt), wt)
        xm = o["sub"](x, mean, 1, wt)
    scale = invstd if weight is None else o["mul"](invstd, _acc(weight).reshape(1, c, 1), wt)
    out = o["mul"](xm, scale, wt)
    if bias is not None:
        out = o["add"](out, _acc(bias).reshape(1, c, 1), 1, wt)
    if training:
        save_mean, save_invstd = mean.reshape(c), invstd.reshape(c)
    else:
        save_mean = input.new_empty((0,), dtype=wt)
        save_invstd = input.new_empty((0,), dtype=wt)
    return _cast(out, input.dtype).reshape(shape_of(input)), save_mean, save_invstd


def batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
                        save_invstd, train, eps, output_mask):
    o = _o()
    n, c = shape_of(input)[:2]
    hw = _prod(shape_of(input)[2:])
    x = _acc(input).reshape(n, c, hw)
    wt = x.dtype
    g = _acc(grad_out).reshape(n, c, hw)
    if train:
        mean, invstd = _acc(save_mean).reshape(1, c, 1), _acc(save_invstd).reshape(1, c, 1)
    else:
        mean = _acc(running_mean).reshape(1, c, 1)
        invstd = o["rsqrt"](o["add"](_acc(running_var).reshape(1, c, 1), eps, 1, wt), wt)
    xh = o["mul"](o["sub"](x, mean, 1, wt), invstd, wt)
    s1 = o["sum"](g, (0, 2), True, wt)
    s2 = o["sum"](o["mul"](g, xh, wt), (0, 2), True, wt)
    gi = gw = gb = None
    if output_mask[0]:
        scale = invstd if weight is None else o["mul"](invstd, _acc(weight).reshape(1, c, 1), wt)
        if train:
            m = x.numel() // max(c, 1)
            r = o["sub"](o["sub"](g, o["div"](s1, m, None, wt), 1, wt),
                         o["mul"](xh, o["div"](s2, m, None, wt), wt), 1, wt)
            r = o["mul"](r, scale, wt)
        else:
            r = o["mul"](g, scale, wt)
        gi = _cast(r, input.dtype).reshape(shape_of(input))
    if output_mask[1]:
        gw = _cast(s2.reshape(c), input.dtype)
    if output_mask[2]:
        gb = _cast(s1.reshape(c), input.dtype)
    return gi, gw, gb


def _row_backward(g, x, mean, rstd, m):
    o = _o()
    wt = x.dtype
    xh = o["mul"](o["sub"](x, mean, 1, wt), rstd, wt)
    sg = o["div"](o["sum"](g, (1,), True, wt), m, None, wt)
    sgx = o["div"](o["sum"](o["mul"](g, xh, wt), (1,), True, wt), m, None, wt)
    r = o["sub"](o["sub"](g, sg, 1, wt), o["mul"](xh, sgx, wt), 1, wt)
    return o["mul"](r, rstd, wt), xh


def layer_norm(input, normalized_shape, weight, bias, eps):
    o = _o()
    k = len(normalized_shape)
    lead = tuple(shape_of(input)[:input.ndim - k])
    d = _prod(normalized_shape)
    x = _acc(input).reshape(input.numel() // d if d else 0, d)
    wt = x.dtype
    mean, xm, _, rstd = _stats(x, (1,), eps)
    out = o["mul"](xm, rstd, wt)
    if weight is not None:
        out = o["mul"](out, _acc(weight).reshape(1, -1), wt)
    if bias is not None:
        out = o["add"](out, _acc(bias).reshape(1, -1), 1, wt)
    stats = lead + (1,) * k
    return (_cast(out, input.dtype).reshape(shape_of(input)), mean.reshape(stats),
            rstd.reshape(stats))


def _prod(shape):
    r = 1
    for s in shape:
        r *= s
    return r


def layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight, bias,
                        output_mask):
    o = _o()
    d = _prod(normalized_shape)
    rows = input.numel() // d if d else 0
    x = _acc(input).reshape(rows, d)
    wt = x.dtype
    g = _acc(grad_out).reshape(rows, d)
    mu, rs = _acc(mean).reshape(rows, 1), _acc(rstd).reshape(rows, 1)
    ns = tuple(normalized_shape)
    gi = gw = gb = None
    gx = g if weight is None else o["mul"](g, _acc(weight).reshape(1, d), wt)
    r, xh = _row_backward(gx, x, mu, rs, d)
    if output_mask[0]:
        gi = _cast(r, input.dtype).reshape(shape_of(input))
    if output_mask[1]:
        gw = _cast(o["sum"](o["mul"](g, xh, wt), (0,), False, wt).reshape(ns), input.dtype)
    if output_mask[2]:
        gb = _cast(o["sum"](g, (0,), False, wt).reshape(ns), input.dtype)
    return gi, gw, gb


def group_norm(input, weight, bias, N, C, HxW, group, eps):
    o = _o()
    x = _acc(input).reshape(N * group, (C // group) * HxW)   # (-1: ambiguous when empty)
    wt = x.dtype
    mean, xm, _, rstd = _stats(x, (1,), eps)
    out = o["mul"](xm, rstd, wt).reshape(N, C, HxW)
    if weight is not None:
        out = o["mul"](out, _acc(weight).reshape(1, C, 1), wt)
    if bias is not None:
        out = o["add"](out, _acc(bias).reshape(1, C, 1), 1, wt)
    return (_cast(out, input.dtype).reshape(shape_of(input)), mean.reshape(N, group),
            rstd.reshape(N, group))


def group_norm_backward(grad_out, input, mean, rstd, weight, N, C, HxW, group, output_mask):
    o = _o()
    rows, m = N * group, (C // group) * HxW
    x = _acc(input).reshape(rows, m)
    wt = x.dtype
    g = _acc(grad_out).reshape(N, C, HxW)
    mu, rs = _acc(mean).reshape(rows, 1), _acc(rstd).reshape(rows, 1)
    gx = g if weight is None else o["mul"](g, _acc(weight).reshape(1, C, 1), wt)
    r, xh = _row_backward(gx.reshape(rows, m), x, mu, rs, m)
    gi = gw = gb = None
    if output_mask[0]:
        gi = _cast(r, input.dtype).reshape(shape_of(input))
    if output_mask[1]:
        gw = _cast(o["sum"](o["mul"](g, xh.reshape(N, C, HxW), wt), (0, 2), False, wt),
                   input.dtype)
    if output_mask[2]:
        gb = _cast(o["sum"](g, (0, 2), False, wt), input.dtype)
    return gi, gw, gb


# written with the backend's own ops over the kit's views: no backend argument
TABLE = {
    "native_batch_norm": batch_norm, "native_batch_norm_backward": batch_norm_backward,
    "native_layer_norm": layer_norm, "native_layer_norm_backward": layer_norm_backward,
    "native_group_norm": group_norm, "native_group_norm_backward": group_norm_backward,
}


def register(backend):
    backend.kernels.update(TABLE)
