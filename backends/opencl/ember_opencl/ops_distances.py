"""Distance kernels (``ember.ops.distances``): ``_cdist_forward`` (a work-item per (b, i, j)
pair, a loop over the M coordinates) and ``_cdist_backward`` (a work-item per (b, i, k)
coordinate of x1, a loop over the R rows of x2 with PyTorch's per-p formulas). Operands are
read through their strides; p's cases are selected per call (0, 1, 2, inf, general)."""
from __future__ import annotations

import math

from ember.kit.binding import bind
from ember.runtime import data_of, offset_of, shape_of, strides_of

from . import kernelkit

SOURCE = r"""
__kernel void cdist_fw(__global T* out, __global const T* a, __global const T* b,
                       const long B, const long P, const long R, const long M, const int kind,
                       const AT p, const long ao, const long as0, const long as1,
                       const long as2, const long bo, const long bs0, const long bs1,
                       const long bs2) {
  const long g = get_global_id(0);
  if (g >= B * P * R) return;
  const long j = g % R, i = (g / R) % P, n = g / (R * P);
  AT acc = 0;
  for (long k = 0; k < M; k++) {
    const AT d = fabs((AT)a[ao + n * as0 + i * as1 + k * as2] -
                      (AT)b[bo + n * bs0 + j * bs1 + k * bs2]);
    if (kind == 0) acc += d != 0;
    else if (kind == 1) acc += d;
    else if (kind == 2) acc += d * d;
    else if (kind == 3) acc = fmax(acc, d);
    else acc += pow(d, p);
  }
  if (kind == 2) acc = sqrt(acc);
  else if (kind == 4) acc = pow(acc, (AT)1 / p);
  out[g] = (T)acc;
}

__kernel void cdist_bw(__global T* out, __global const T* g, __global const T* a,
                       __global const T* b, __global const T* dist, const long B, const long P,
                       const long R, const long M, const int kind, const AT p, const long go,
                       const long gs0, const long gs1, const long gs2, const long ao,
                       const long as0, const long as1, const long as2, const long bo,
                       const long bs0, const long bs1, const long bs2, const long do_,
                       const long ds0, const long ds1, const long ds2) {
  const long t = get_global_id(0);
  if (t >= B * P * M) return;
  const long k = t % M, i = (t / M) % P, n = t / (M * P);
  const AT x = a[ao + n * as0 + i * as1 + k * as2];
  AT acc = 0;
  for (long j = 0; j < R; j++) {
    const AT d = x - (AT)b[bo + n * bs0 + j * bs1 + k * bs2];
    const AT dd = dist[do_ + n * ds0 + i * ds1 + j * ds2];
    const AT gg = g[go + n * gs0 + i * gs1 + j * gs2];
    const AT s = (AT)((d > 0) - (d < 0));
    AT w;
    if (kind == 1) w = s;
    else if (kind == 3) w = fabs(d) == dd ? s : (AT)0;
    else if (dd == 0) w = 0;
    else if (kind == 2) w = d / dd;
    else if (p >= 2) w = d * pow(fabs(d), p - 2) / pow(dd, p - 1);
    else w = (d == 0) ? (AT)0 : s * pow(fabs(d), p - 1) / pow(dd, p - 1);
    acc += gg * w;
  }
  out[t] = (T)acc;
}
"""
_KERNELS = {"cdist_fw": "bbblllliA" + "l" * 8,
            "cdist_bw": "bbbbblllliA" + "l" * 16}


def _kind(p):
    return 0 if p == 0 else 1 if p == 1 else 2 if p == 2 else 3 if math.isinf(p) else 4


def _strides(t):
    return [offset_of(t)] + list(strides_of(t))


def forward(backend, x1, x2, p, compute_mode):
    st, q = backend.state_queue(x1.device)
    n, rows, m = shape_of(x1)
    r = shape_of(x2)[1]
    out = backend.new_tensor(st, (n, rows, r), x1.dtype, x1.device)
    k = kernelkit.program(st, "distances", x1.dtype, SOURCE, _KERNELS)["cdist_fw"]
    kernelkit.launch(st, q, k, out.numel(), data_of(out), data_of(x1),
                     data_of(x2), n, rows, r, m, _kind(p), p if math.isfinite(p) else 0.0,
                     *_strides(x1), *_strides(x2))
    return out


def backward(backend, grad, x1, x2, p, cdist):
    st, q = backend.state_queue(x1.device)
    n, rows, m = shape_of(x1)
    r = shape_of(x2)[1]
    out = backend.new_tensor(st, shape_of(x1), x1.dtype, x1.device)
    if p == 0 or r == 0:
        if out.numel():
            out.zero_()
        return out
    k = kernelkit.program(st, "distances", x1.dtype, SOURCE, _KERNELS)["cdist_bw"]
    kernelkit.launch(st, q, k, out.numel(), data_of(out), data_of(grad),
                     data_of(x1), data_of(x2), data_of(cdist), n, rows, r, m,
                     _kind(p), p if math.isfinite(p) else 0.0, *_strides(grad), *_strides(x1),
                     *_strides(x2), *_strides(cdist))
    return out


TABLE = {"_cdist_forward": forward, "_cdist_backward": backward}


def register(backend):
    bind(backend, TABLE)
