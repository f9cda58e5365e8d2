"""``nll_loss_forward`` / ``nll_loss_backward`` on the device: one kernel per row (forward: the
row's loss and weight, summed by the reduction kernels) and one per element (backward), with
no host round trip: a target outside [0, C) is recorded on the device (``deferred``) and raises
IndexError at the next synchronization, like PyTorch's device-side asserts."""
from __future__ import annotations

import numpy as np

from ember.kit.binding import bind
from ember.runtime import data_of, get_op, shape_of

from . import cltypes, deferred, progs
from .ops_pool import plain

SRC = r"""
__kernel void nll_rows(__global T* loss, __global T* wout, __global const T* x,
                       __global const long* t, __global const T* w, const long N, const long C,
                       const long ignore, const int has_w, __global long* rec) {
  const long i = get_global_id(0);
  if (i >= N) return;
  const long ti = t[i];
  if (ti == ignore) { loss[i] = 0; wout[i] = 0; return; }
  if (ti < 0 || ti >= C) { RECORD(rec, CODE, ti, ignore, C); loss[i] = 0; wout[i] = 0; return; }
  const T wi = has_w ? w[ti] : (T)1;
  loss[i] = -x[i * C + ti] * wi;
  wout[i] = wi;
}

/* reduction: 0 none (g per row), 1 mean (g scalar, divided by total), 2 sum (g scalar) */
__kernel void nll_grad(__global T* out, __global const T* g, __global const long* t,
                       __global const T* w, __global const T* total, const long N,
                       const long C, const long ignore, const int has_w, const int reduction) {
  const long e = get_global_id(0);
  if (e >= N * C) return;
  const long i = e / C, c = e % C, ti = t[i];
  T v = 0;
  if (c == ti && ti != ignore && ti >= 0 && ti < C) {
    const T wi = has_w ? w[ti] : (T)1;
    v = -wi * (reduction == 0 ? g[i] : g[0]);
    if (reduction == 1) v = v / total[0];
  }
  out[e] = v;
}
"""


def _kernels(st, dt):
    key = ("nll", dt)
    return progs.program(st, key, lambda: "\n".join([
        progs.header(st), f"typedef {cltypes.CTYPE[dt]} T;",
        f"#define CODE {deferred.NLL_TARGET}", deferred.C_RECORD, SRC]), {
        "nll_rows": [None] * 5 + [np.int64] * 3 + [np.int32, None],
        "nll_grad": [None] * 5 + [np.int64] * 3 + [np.int32, np.int32]})


def nll_loss_forward(backend, self, target, weight, reduction, ignore_index):
    st, q = backend.state_queue(self.device)
    x, t = plain(backend, self), plain(backend, target)
    n, c = shape_of(x)
    dt = x.dtype
    w = plain(backend, weight) if weight is not None else None
    loss = backend.new_tensor(st, (n,), dt, x.device)
    wout = backend.new_tensor(st, (n,), dt, x.device)
    if n:
        progs.launch(st, q, _kernels(st, dt)["nll_rows"], n, data_of(loss),
                     data_of(wout), data_of(x), data_of(t),
                     data_of(w if w is not None else x), n, c, ignore_index,
                     int(w is not None), deferred.slot(st, "nll_loss_forward", self, target))
    total = get_op("sum")(wout, (0,), False, dt)
    if reduction == 0:
        return loss, total
    s = get_op("sum")(loss, (0,), False, dt)
    return (s if reduction == 2 else get_op("div")(s, total, None, dt)), total


def nll_loss_backward(backend, grad_output, self, target, weight, reduction, ignore_index,
                      total_weight):
    st, q = backend.state_queue(self.device)
    t = plain(backend, target)
    n, c = shape_of(self)
    dt = self.dtype
    g = plain(backend, grad_output)
    w = plain(backend, weight) if weight is not None else None
    tw = plain(backend, total_weight)
    out = backend.new_tensor(st, (n, c), dt, self.device)
    if n * c:
        progs.launch(st, q, _kernels(st, dt)["nll_grad"], n * c, data_of(out),
                     data_of(g), data_of(t), data_of(w if w is not None else g),
                     data_of(tw), n, c, ignore_index, int(w is not None), int(reduction))
    return out


TABLE = {"nll_loss_forward": nll_loss_forward, "nll_loss_backward": nll_loss_backward}


def register(backend):
    bind(backend, TABLE)
