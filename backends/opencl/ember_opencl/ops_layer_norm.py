"""``native_layer_norm`` and its backward as fused kernels: a work-item per row of the normalised
shape. The row is read twice for its statistics (mean, then mean of squared deviations, as
``ops_norm`` and the CPU compute them) and once more to write; the backward reads it twice
(the two row sums, then the input gradient) and one more kernel, a work-item per column, sums
the weight's and bias's gradients over the rows. That is 1 + 2 launches where ``ops_norm``'s
composition takes a dozen of short ones each way (a quarter of a small transformer's step on
PoCL).

Rows longer than ``LONG_ROW`` with too few of them to fill the device keep ``ops_norm``'s
reductions, which spread one row over many work-items. Half precision is read into float32
and the statistics stay in it (what ``ops_norm`` returns too).
"""
from __future__ import annotations

import math

import numpy as np

from ember.kit.binding import bind
from ember.runtime import data_of, dtypes as D, layout_of, shape_of

from . import cltypes, ops_norm, progs
from .ops_pool import plain

LONG_ROW = 4096   # a row at least this long runs a work-item's loop alone: reductions win

SRC = r"""
#define X(i) CVT_X(x[i])
#define W(j) (has_w ? CVT_W(w[wo + (j) * ws]) : (AT)1)

__kernel void layer_norm_rows(__global XT* out, __global AT* mean, __global AT* rstd,
                              __global const XT* x, __global const WT* w, const long wo,
                              const long ws, __global const WT* b, const long bo,
                              const long bs, const long M, const long N, const AT eps,
                              const int has_w, const int has_b) {
  const long m = get_global_id(0);
  if (m >= M) return;
  const long r = m * N;
  AT s = 0;
  for (long j = 0; j < N; ++j) s += X(r + j);
  const AT mu = s / (AT)N;
  AT v = 0;
  for (long j = 0; j < N; ++j) { const AT c = X(r + j) - mu; v += c * c; }
  const AT rs = rsqrt(v / (AT)N + eps);
  for (long j = 0; j < N; ++j) {
    AT y = (X(r + j) - mu) * rs;
    if (has_w) y = y * W(j);
    if (has_b) y = y + CVT_W(b[bo + j * bs]);
    out[r + j] = CVT_OUT(y);
  }
  mean[m] = mu;
  rstd[m] = rs;
}

/* gi = (gx - mean(gx) - xh * mean(gx * xh)) * rstd, gx = g * w, xh = (x - mean) * rstd */
__kernel void layer_norm_input_grad(__global XT* gi, __global const XT* g,
                                    __global const XT* x, __global const AT* mean,
                                    const long mo, const long ms, __global const AT* rstd,
                                    const long ro, const long rss, __global const WT* w,
                                    const long wo, const long ws, const long M, const long N,
                                    const int has_w) {
  const long m = get_global_id(0);
  if (m >= M) return;
  const long r = m * N;
  const AT mu = mean[mo + m * ms], rs = rstd[ro + m * rss];
  AT sg = 0, sgx = 0;
  for (long j = 0; j < N; ++j) {
    const AT gx = CVT_X(g[r + j]) * W(j);
    sg += gx;
    sgx += gx * ((X(r + j) - mu) * rs);
  }
  sg = sg / (AT)N;
  sgx = sgx / (AT)N;
  for (long j = 0; j < N; ++j) {
    const AT gx = CVT_X(g[r + j]) * W(j);
    const AT xh = (X(r + j) - mu) * rs;
    gi[r + j] = CVT_OUT((gx - sg - xh * sgx) * rs);
  }
}

/* the weight's gradient sum_m g * xh and the bias's sum_m g, a work-item per column */
__kernel void layer_norm_param_grads(__global XT* gw, __global XT* gb, __global const XT* g,
                                     __global const XT* x, __global const AT* mean,
                                     const long mo, const long ms, __global const AT* rstd,
                                     const long ro, const long rss, const long M,
                                     const long N, const int want_w, const int want_b) {
  const long j = get_global_id(0);
  if (j >= N) return;
  AT sw = 0, sb = 0;
  for (long m = 0; m < M; ++m) {
    const AT gv = CVT_X(g[m * N + j]);
    sb += gv;
    if (want_w) sw += gv * ((X(m * N + j) - mean[mo + m * ms]) * rstd[ro + m * rss]);
  }
  if (want_w) gw[j] = CVT_OUT(sw);
  if (want_b) gb[j] = CVT_OUT(sb);
}
"""

_LONG, _INT = np.int64, np.int32


def _kernels(st, xt, wt, at):
    key = ("layer_norm", xt, wt, at)
    return progs.program(st, key, lambda: "\n".join([
        progs.header(st), f"typedef {cltypes.CTYPE[xt]} XT;", f"typedef {cltypes.CTYPE[wt]} WT;",
        f"typedef {cltypes.CTYPE[at]} AT;",
        f"#define CVT_X(v) {cltypes.cvt('(v)', xt, at)}",
        f"#define CVT_W(v) {cltypes.cvt('(v)', wt, at)}",
        f"#define CVT_OUT(v) {cltypes.cvt('(v)', at, xt)}", SRC]), {
        "layer_norm_rows": [None] * 5 + [_LONG] * 2 + [None] + [_LONG] * 4 + [at.np] +
                           [_INT] * 2,
        "layer_norm_input_grad": [None] * 4 + [_LONG] * 2 + [None] + [_LONG] * 2 + [None] +
                                 [_LONG] * 4 + [_INT],
        "layer_norm_param_grads": [None] * 5 + [_LONG] * 2 + [None] + [_LONG] * 4 +
                                  [_INT] * 2})


def _accumulate(dtype):
    return D.float32 if dtype is D.float16 else dtype


def _rows(input, normalized_shape):
    d = math.prod(normalized_shape)
    return (input.numel() // d if d else 0), d


_FLOATS = (D.float16, D.float32, D.float64)   # bfloat16 has no arithmetic C type: ops_norm


def _fused(st, rows, d, *tensors):
    """Whether the fused kernels take this call: rows that fill the device, float dtypes, one
    parameter dtype."""
    if not (rows and d and (d < LONG_ROW or rows >= st.compute_units)):
        return False
    params = {t.dtype for t in tensors[1:] if t is not None}
    return tensors[0].dtype in _FLOATS and len(params) <= 1 and params <= set(_FLOATS)


def _vector(t, n):
    """``t`` as ``n`` elements (a parameter, or one statistic per row) and its (buffer, offset,
    stride). The caller holds the tensor until its kernel is enqueued: a copy that reshape made
    would otherwise go back to the allocator, and the next allocation could take its buffer."""
    t = t.reshape(n)
    _, strides, offset = layout_of(t)
    return t, (data_of(t), offset, (strides[0] if strides else 1))


def layer_norm(backend, input, normalized_shape, weight, bias, eps):
    st, q = backend.state_queue(input.device)
    rows, d = _rows(input, normalized_shape)
    if not _fused(st, rows, d, input, weight, bias):
        return ops_norm.layer_norm(input, normalized_shape, weight, bias, eps)
    xt = input.dtype
    at = _accumulate(xt)
    param = weight if weight is not None else bias
    wt = param.dtype if param is not None else xt
    x = plain(backend, input)
    out = backend.new_tensor(st, shape_of(input), xt, input.device)
    mean = backend.new_tensor(st, (rows,), at, input.device)
    rstd = backend.new_tensor(st, (rows,), at, input.device)
    w_held, w = _vector(weight, d) if weight is not None else (None, (data_of(x), 0, 0))
    b_held, b = _vector(bias, d) if bias is not None else (None, (data_of(x), 0, 0))
    progs.launch(st, q, _kernels(st, xt, wt, at)["layer_norm_rows"], rows, data_of(out),
                 data_of(mean), data_of(rstd), data_of(x), *w, *b, rows, d, eps,
                 int(weight is not None), int(bias is not None))
    del w_held, b_held   # enqueued: the queue orders any reuse of their buffers after it
    stats = tuple(shape_of(input)[:input.ndim - len(normalized_shape)]) + \
        (1,) * len(normalized_shape)
    return out, mean.reshape(stats), rstd.reshape(stats)


def layer_norm_backward(backend, grad_out, input, normalized_shape, mean, rstd, weight, bias,
                        output_mask):
    st, q = backend.state_queue(input.device)
    rows, d = _rows(input, normalized_shape)
    xt = input.dtype
    at = _accumulate(xt)
    if not _fused(st, rows, d, input, weight) or grad_out.dtype is not xt or \
            mean.dtype is not at or rstd.dtype is not at:
        return ops_norm.layer_norm_backward(grad_out, input, normalized_shape, mean, rstd,
                                            weight, bias, output_mask)
    wt = weight.dtype if weight is not None else xt
    knls = _kernels(st, xt, wt, at)
    g, x = plain(backend, grad_out), plain(backend, input)
    mu_held, mu = _vector(mean, rows)
    rs_held, rs = _vector(rstd, rows)
    gi = gw = gb = None
    if output_mask[0]:
        gi = backend.new_tensor(st, shape_of(input), xt, input.device)
        w_held, w = _vector(weight, d) if weight is not None else (None, (data_of(x), 0, 0))
        progs.launch(st, q, knls["layer_norm_input_grad"], rows, data_of(gi), data_of(g),
                     data_of(x), *mu, *rs, *w, rows, d, int(weight is not None))
        del w_held
    want_w, want_b = bool(output_mask[1]), bool(output_mask[2])
    if want_w or want_b:
        ns = tuple(normalized_shape)
        gw = backend.new_tensor(st, ns, xt, input.device) if want_w else None
        gb = backend.new_tensor(st, ns, xt, input.device) if want_b else None
        progs.launch(st, q, knls["layer_norm_param_grads"], d,
                     data_of(gw if want_w else x), data_of(gb if want_b else x), data_of(g),
                     data_of(x), *mu, *rs, rows, d, int(want_w), int(want_b))
    del mu_held, rs_held
    return gi, gw, gb


TABLE = {"native_layer_norm": layer_norm, "native_layer_norm_backward": layer_norm_backward}


def register(backend):
    bind(backend, TABLE)
