"""The recurrent steps of ``ember.ops.rnn``: the backend's GEMM plus one fused gate kernel.

A forward step is the hidden-to-hidden product (``ops_linalg.matmul`` on a transposed view of
the weight: no copy) and one kernel that, per (batch row, hidden unit), adds the projected
input and the bias, applies the gate nonlinearities and writes every output: LSTM's h', c' and
workspace (i, f, g, o, tanh(c')); GRU's h' and workspace (r, z, n, h_n); RNN's h'. A backward
step is one kernel for the gate gradients and one GEMM for the gradient of h (GRU adds its
direct term in a last small kernel). LSTM's projection is one more GEMM each way.
``lstm_layer`` and its backward run a padded direction's steps in one call: the same GEMM and
gate kernel per step, the kernels writing into the step's rows of the layer's outputs (offset
arguments), so no op is dispatched per step and nothing is concatenated (projected layers run
the step composite).

The math is the step composites': gates = gates_x + (h W^T + b), sigmoid(x) = 1 / (1 +
exp(-x)); half precision computes in float. Operands that are not row-major are copied to
dense buffers first (the steps of a layer never are).
"""
from __future__ import annotations

import numpy as np

from ember.kit.binding import bind, bind_with
from ember.runtime import (data_of, get_op, layout_of, offset_of, shape_of, storage_of,
                           strides_of, tensor_constructor)

from . import cltypes, progs
from .ops_linalg import matmul as _gemm

_L = np.int64

SRC = r"""
#define SIG(x) ((AT)1 / ((AT)1 + exp(-(x))))
#define LD(p, i) ((AT)(p)[i])

__kernel void lstm_fwd(__global T* hraw, __global T* cy, __global T* ws, const long oy,
                       __global const T* hh, __global const T* gx, const long ogx,
                       __global const T* bias, const long ob, __global const T* cx,
                       const long ocx, const long B, const long H) {
  const long k = get_global_id(0);
  if (k >= B * H) return;
  const long b = k / H, j = k - b * H, G = 4 * H;
  AT pre[4];
  for (int q = 0; q < 4; ++q) {
    AT h = LD(hh, b * G + q * H + j);
#if HAS_BIAS
    h += LD(bias, ob + q * H + j);
#endif
    pre[q] = LD(gx, ogx + b * G + q * H + j) + h;
  }
  const AT i = SIG(pre[0]), f = SIG(pre[1]), g = tanh(pre[2]), o = SIG(pre[3]);
  const AT c = f * LD(cx, ocx + k) + i * g;
  const AT tc = tanh(c);
  __global T* w = ws + 5 * oy + b * 5 * H + j;
  w[0] = (T)i; w[H] = (T)f; w[2 * H] = (T)g; w[3 * H] = (T)o; w[4 * H] = (T)tc;
  cy[oy + k] = (T)c;
  hraw[oy + k] = (T)(o * tc);
}

/* od: the row offset (in elements of an (*, H) array) of this step in d and, with
   HAS_GOUT (a layer's step), in grad_output and in ghs, which receives gh + grad_output */
__kernel void lstm_bwd(__global T* d, __global T* gcx, __global const T* gh, const long ogh,
                       __global const T* gcy, const long ogcy, __global const T* cx,
                       const long ocx, __global const T* ws, const long ows, const long B,
                       const long H, const long od, __global const T* gout,
                       __global T* ghs) {
  const long k = get_global_id(0);
  if (k >= B * H) return;
  const long b = k / H, j = k - b * H;
  __global const T* w = ws + ows + b * 5 * H + j;
  const AT i = w[0], f = w[H], g = w[2 * H], o = w[3 * H], tc = w[4 * H];
#if HAS_GOUT
  const AT h = LD(gh, ogh + k) + LD(gout, od + k);
  ghs[od + k] = (T)h;
#else
  const AT h = LD(gh, ogh + k);
#endif
  const AT gc = LD(gcy, ogcy + k) + h * o * ((AT)1 - tc * tc);
  __global T* r = d + 4 * od + b * 4 * H + j;
  r[0] = (T)(gc * g * i * ((AT)1 - i));
  r[H] = (T)(gc * LD(cx, ocx + k) * f * ((AT)1 - f));
  r[2 * H] = (T)(gc * i * ((AT)1 - g * g));
  r[3 * H] = (T)(h * tc * o * ((AT)1 - o));
  gcx[k] = (T)(gc * f);
}

__kernel void gru_fwd(__global T* hy, __global T* ws, __global const T* hh,
                      __global const T* gx, const long ogx, __global const T* bias,
                      const long ob, __global const T* hx, const long ohx, const long B,
                      const long H) {
  const long k = get_global_id(0);
  if (k >= B * H) return;
  const long b = k / H, j = k - b * H, G = 3 * H;
  AT hr = LD(hh, b * G + j), hz = LD(hh, b * G + H + j), hn = LD(hh, b * G + 2 * H + j);
#if HAS_BIAS
  hr += LD(bias, ob + j); hz += LD(bias, ob + H + j); hn += LD(bias, ob + 2 * H + j);
#endif
  const AT r = SIG(LD(gx, ogx + b * G + j) + hr);
  const AT z = SIG(LD(gx, ogx + b * G + H + j) + hz);
  const AT n = tanh(LD(gx, ogx + b * G + 2 * H + j) + r * hn);
  __global T* w = ws + b * 4 * H + j;
  w[0] = (T)r; w[H] = (T)z; w[2 * H] = (T)n; w[3 * H] = (T)hn;
  hy[k] = (T)(n + z * (LD(hx, ohx + k) - n));
}

__kernel void gru_bwd(__global T* dx, __global T* dh, __global T* gz, __global const T* g,
                      const long og, __global const T* hx, const long ohx,
                      __global const T* ws, const long ows, const long B, const long H) {
  const long k = get_global_id(0);
  if (k >= B * H) return;
  const long b = k / H, j = k - b * H;
  __global const T* w = ws + ows + b * 4 * H + j;
  const AT r = w[0], z = w[H], n = w[2 * H], hn = w[3 * H];
  const AT gy = LD(g, og + k);
  const AT dn = gy * ((AT)1 - z) * ((AT)1 - n * n);
  const AT dr = dn * hn * r * ((AT)1 - r);
  const AT dz = gy * (LD(hx, ohx + k) - n) * z * ((AT)1 - z);
  __global T* px = dx + b * 3 * H + j;
  __global T* ph = dh + b * 3 * H + j;
  px[0] = (T)dr; px[H] = (T)dz; px[2 * H] = (T)dn;
  ph[0] = (T)dr; ph[H] = (T)dz; ph[2 * H] = (T)(dn * r);
  gz[k] = (T)(gy * z);
}

__kernel void add_into(__global T* acc, __global const T* x, const long n) {
  const long k = get_global_id(0);
  if (k < n) acc[k] = (T)((AT)acc[k] + (AT)x[k]);
}

__kernel void rnn_fwd(__global T* hy, __global const T* hh, __global const T* gx,
                      const long ogx, __global const T* bias, const long ob, const long B,
                      const long H) {
  const long k = get_global_id(0);
  if (k >= B * H) return;
  const long j = k % H;
  AT h = LD(hh, k);
#if HAS_BIAS
  h += LD(bias, ob + j);
#endif
  const AT pre = LD(gx, ogx + k) + h;
#if RELU
  hy[k] = (T)(pre > (AT)0 ? pre : (AT)0);
#else
  hy[k] = (T)tanh(pre);
#endif
}

__kernel void rnn_bwd(__global T* d, __global const T* g, const long og, __global const T* y,
                      const long oy, const long n) {
  const long k = get_global_id(0);
  if (k >= n) return;
  const AT v = LD(y, oy + k), gy = LD(g, og + k);
#if RELU
  d[k] = (T)(v > (AT)0 ? gy : (AT)0);
#else
  d[k] = (T)(gy * ((AT)1 - v * v));
#endif
}
"""

_ARGS = {
    "lstm_fwd": [None] * 3 + [_L] + [None] * 2 + [_L, None, _L, None, _L, _L, _L],
    "lstm_bwd": [None] * 3 + [_L, None, _L, None, _L, None, _L, _L, _L, _L, None, None],
    "gru_fwd": [None] * 4 + [_L, None, _L, None, _L, _L, _L],
    "gru_bwd": [None] * 4 + [_L, None, _L, None, _L, _L, _L],
    "add_into": [None, None, _L],
    "rnn_fwd": [None] * 3 + [_L, None, _L, _L, _L],
    "rnn_bwd": [None] * 2 + [_L, None, _L, _L],
}


def _kernels(st, dtype, has_bias, relu, has_gout=False):
    key = ("rnn", dtype, has_bias, relu, has_gout)
    at = "float" if dtype.itemsize < 4 else cltypes.CTYPE[dtype]

    def source():
        return "\n".join([progs.header(st), f"typedef {cltypes.CTYPE[dtype]} T;",
                          f"typedef {at} AT;", f"#define HAS_BIAS {int(has_bias)}",
                          f"#define RELU {int(relu)}", f"#define HAS_GOUT {int(has_gout)}",
                          SRC])
    return progs.program(st, key, source, _ARGS)


class _Dense:
    """Operands as row-major buffers (kernel arguments ``buffer, offset``): a tensor itself
    when it is one, else a contiguous copy, kept alive here until the kernel is queued (a copy
    freed earlier could be handed to the next copy and overwritten before the kernel reads
    it)."""

    def __init__(self, backend, st):
        self.backend, self.st, self.keep = backend, st, []

    def __call__(self, t):
        if t is None:
            return None, 0
        expected, step = [], 1
        for n in reversed(shape_of(t)):
            expected.append(step)
            step *= n
        if not all(n == 1 or s == e for n, s, e in zip(shape_of(t), strides_of(t),
                                                        reversed(expected))):
            copy = self.backend.new_tensor(self.st, shape_of(t), t.dtype, t.device)
            self.backend.copy_(copy, t)
            self.keep.append(copy)
            t = copy
        return data_of(t), offset_of(t)


def _t(w):
    """The transposed view of a 2-D tensor (metadata only: no op is dispatched)."""
    (rows, cols), (row_stride, col_stride), offset = layout_of(w)
    return tensor_constructor()(storage_of(w), (cols, rows), (col_stride, row_stride), offset,
                                w.dtype, w.device)


def _launch(st, q, knl, n, *args):
    if n:
        progs.launch(st, q, knl, n, *args)


def lstm_step(backend, gates_x, hx, cx, w_hh, b_hh, w_hr):
    st, q = backend.state_queue(gates_x.device)
    B, H = shape_of(cx)
    hh = _gemm(backend, hx, _t(w_hh))
    new = lambda *shape: backend.new_tensor(st, shape, gates_x.dtype, gates_x.device)  # noqa: E731
    hraw, cy, ws = new(B, H), new(B, H), new(B, 5 * H)
    dense = _Dense(backend, st)
    gx, ogx = dense(gates_x)
    cxb, ocx = dense(cx)
    bias, ob = dense(b_hh)
    k = _kernels(st, gates_x.dtype, b_hh is not None, False)["lstm_fwd"]
    _launch(st, q, k, B * H, data_of(hraw), data_of(cy), data_of(ws), 0,
            data_of(hh), gx, ogx, bias, ob, cxb, ocx, B, H)
    hy = hraw if w_hr is None else _gemm(backend, hraw, _t(w_hr))
    return hy, cy, ws


def lstm_step_backward(backend, grad_hy, grad_cy, cx, workspace, w_hh, w_hr):
    st, q = backend.state_queue(cx.device)
    B, H = shape_of(cx)
    gh = grad_hy if w_hr is None else _gemm(backend, grad_hy, w_hr)
    d = backend.new_tensor(st, (B, 4 * H), cx.dtype, cx.device)
    gcx = backend.new_tensor(st, (B, H), cx.dtype, cx.device)
    dense = _Dense(backend, st)
    args = [dense(t) for t in (gh, grad_cy, cx, workspace)]
    k = _kernels(st, cx.dtype, False, False)["lstm_bwd"]
    _launch(st, q, k, B * H, data_of(d), data_of(gcx),
            *[x for pair in args for x in pair], B, H, 0, data_of(d), data_of(d))
    return d, _gemm(backend, d, w_hh), gcx


def _rows(t, start, count):
    """Rows [start, start + count) of a row-major 2-D tensor, as a view (no op dispatched)."""
    cols = shape_of(t)[1]
    return tensor_constructor()(storage_of(t), (count, cols), (cols, 1),
                                offset_of(t) + start * cols, t.dtype, t.device)


def _step_rows(steps, reverse):
    return range(steps - 1, -1, -1) if reverse else range(steps)


def lstm_layer(backend, composite, gates_x, hx, cx, w_hh, b_hh, w_hr, steps, reverse):
    """The layer's steps in one call: per step the recurrent GEMM and the gate kernel, which
    writes h', c' and the workspace straight into the step's rows of the layer's outputs (the
    step-by-step composite pays a dispatch per step and three concatenations)."""
    if w_hr is not None:
        return composite(gates_x, hx, cx, w_hh, b_hh, w_hr, steps, reverse)
    st, q = backend.state_queue(gates_x.device)
    B, H = shape_of(cx)
    rows = B * steps
    new = lambda *shape: backend.new_tensor(st, shape, gates_x.dtype, gates_x.device)  # noqa: E731
    out, cells, ws = new(rows, H), new(rows, H), new(rows, 5 * H)
    dense = _Dense(backend, st)
    gx, ogx = dense(gates_x)
    bias, ob = dense(b_hh)
    k = _kernels(st, gates_x.dtype, b_hh is not None, False)["lstm_fwd"]
    w_t = _t(w_hh)
    h, (cb, oc) = hx, dense(cx)
    for t in _step_rows(steps, reverse):
        hh = _gemm(backend, h, w_t)
        _launch(st, q, k, B * H, data_of(out), data_of(cells), data_of(ws), t * B * H,
                data_of(hh), gx, ogx + t * B * 4 * H, bias, ob, cb, oc, B, H)
        h = _rows(out, t * B, B)
        cb, oc = data_of(cells), t * B * H
    return out, _copy(backend, st, h), _copy(backend, st, _rows(cells, t * B, B)), cells, ws


def _from_start(backend, st, dense, t):
    """A row-major buffer holding ``t`` from its offset 0 (``t``'s own, or a copy's)."""
    buf, offset = dense(t)
    if offset == 0:
        return buf
    copy = _copy(backend, st, t)
    dense.keep.append(copy)
    return data_of(copy)


def _copy(backend, st, t):
    out = backend.new_tensor(st, shape_of(t), t.dtype, t.device)
    backend.copy_(out, t)
    return out


def lstm_layer_backward(backend, composite, grad_output, grad_hy, grad_cy, cx, cells,
                        workspace, w_hh, w_hr, steps, reverse):
    """The steps walked back: per step one kernel (the hidden gradient of the step plus
    grad_output, stored for the caller, and the gate gradients into the step's rows of d) and
    the GEMM with w_hh."""
    if w_hr is not None:
        return composite(grad_output, grad_hy, grad_cy, cx, cells, workspace, w_hh, w_hr,
                         steps, reverse)
    st, q = backend.state_queue(cx.device)
    B, H = shape_of(cx)
    rows = B * steps
    new = lambda *shape: backend.new_tensor(st, shape, cx.dtype, cx.device)  # noqa: E731
    d, gh = new(rows, 4 * H), new(rows, H)
    dense = _Dense(backend, st)
    # the kernel addresses these by step row from the buffer's start
    gout, cs, wsb = (_from_start(backend, st, dense, x) for x in (grad_output, cells, workspace))
    k = _kernels(st, cx.dtype, False, False, has_gout=True)["lstm_bwd"]
    order = list(_step_rows(steps, reverse))
    g_h, g_c = dense(grad_hy), dense(grad_cy)
    c0 = dense(cx)
    g_hx = None
    for i in range(steps - 1, -1, -1):
        t = order[i]
        gcx = new(B, H)
        c_prev = c0 if i == 0 else (cs, order[i - 1] * B * H)
        _launch(st, q, k, B * H, data_of(d), data_of(gcx), *g_h, *g_c, *c_prev,
                wsb, t * B * 5 * H, B, H, t * B * H, gout, data_of(gh))
        dense.keep.append(gcx)   # the next step's kernel reads it: alive until that is queued
        g_hx = _gemm(backend, _rows(d, t * B, B), w_hh)
        g_h, g_c = (data_of(g_hx), offset_of(g_hx)), (data_of(gcx), 0)
    return d, g_hx, gcx, gh


def gru_step(backend, gates_x, hx, w_hh, b_hh):
    st, q = backend.state_queue(gates_x.device)
    B, H = shape_of(hx)
    hh = _gemm(backend, hx, _t(w_hh))
    hy = backend.new_tensor(st, (B, H), hx.dtype, hx.device)
    ws = backend.new_tensor(st, (B, 4 * H), hx.dtype, hx.device)
    dense = _Dense(backend, st)
    gx, ogx = dense(gates_x)
    h, oh = dense(hx)
    bias, ob = dense(b_hh)
    k = _kernels(st, hx.dtype, b_hh is not None, False)["gru_fwd"]
    _launch(st, q, k, B * H, data_of(hy), data_of(ws), data_of(hh), gx, ogx,
            bias, ob, h, oh, B, H)
    return hy, ws


def gru_step_backward(backend, grad_hy, hx, workspace, w_hh):
    st, q = backend.state_queue(hx.device)
    B, H = shape_of(hx)
    new = lambda *shape: backend.new_tensor(st, shape, hx.dtype, hx.device)  # noqa: E731
    dx, dh, gz = new(B, 3 * H), new(B, 3 * H), new(B, H)
    dense = _Dense(backend, st)
    args = [dense(t) for t in (grad_hy, hx, workspace)]
    knls = _kernels(st, hx.dtype, False, False)
    _launch(st, q, knls["gru_bwd"], B * H, data_of(dx), data_of(dh),
            data_of(gz), *[x for pair in args for x in pair], B, H)
    g_hx = _gemm(backend, dh, w_hh)
    _launch(st, q, knls["add_into"], B * H, data_of(g_hx), data_of(gz), B * H)
    return dx, dh, g_hx


def rnn_step(backend, gates_x, hx, w_hh, b_hh, nonlinearity):
    st, q = backend.state_queue(gates_x.device)
    B, H = shape_of(hx)
    hh = _gemm(backend, hx, _t(w_hh))
    hy = backend.new_tensor(st, (B, H), hx.dtype, hx.device)
    dense = _Dense(backend, st)
    gx, ogx = dense(gates_x)
    bias, ob = dense(b_hh)
    k = _kernels(st, hx.dtype, b_hh is not None, nonlinearity == "relu")["rnn_fwd"]
    _launch(st, q, k, B * H, data_of(hy), data_of(hh), gx, ogx, bias, ob, B, H)
    return hy


def rnn_step_backward(backend, grad_hy, hy, w_hh, nonlinearity):
    st, q = backend.state_queue(hy.device)
    B, H = shape_of(hy)
    d = backend.new_tensor(st, (B, H), hy.dtype, hy.device)
    dense = _Dense(backend, st)
    g, og = dense(grad_hy)
    y, oy = dense(hy)
    k = _kernels(st, hy.dtype, False, nonlinearity == "relu")["rnn_bwd"]
    _launch(st, q, k, B * H, data_of(d), g, og, y, oy, B * H)
    return d, _gemm(backend, d, w_hh)


TABLE = {"lstm_step": lstm_step, "lstm_step_backward": lstm_step_backward,
         "gru_step": gru_step, "gru_step_backward": gru_step_backward,
         "rnn_step": rnn_step, "rnn_step_backward": rnn_step_backward}


def register(backend):
    bind(backend, TABLE)
    for op, kernel in (("lstm_layer", lstm_layer), ("lstm_layer_backward", lstm_layer_backward)):
        bind_with(backend, op, kernel, get_op(op).composite)
