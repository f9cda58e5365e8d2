"""The CPU backend's lowering of layer norm for ``ember.compile``: ``native_layer_norm`` and
``native_layer_norm_backward`` as C loops over the rows (``Backend.compile_norm``).

The eager kernels (``ember.kit.normalization``) are whole-array numpy expressions: eight or so
passes over the input, each allocating a temporary — ~105 us for a (256, 64) float32 forward
here, against ~14 us in torch's native kernel. One C pass per row computes the statistics
(accumulated in double), normalises and applies the affine parameters; the backward computes
each row's two reductions and the input gradient, and sums the weight and bias gradients over
the rows in double. Results agree with the eager kernels to rounding (the statistics are
summed in another order and precision). Inputs must be contiguous float32/float64 rows;
anything else returns None and the graph keeps the eager kernel."""
from __future__ import annotations

import ctypes

import numpy as np

from .fusion import address, build_kernel, cached_kernel, compiler

_C = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}

_FORWARD = """
#include <stdint.h>
#include <math.h>
int kernel(int64_t rows, int64_t d, const T* x, const T* w, const T* b, double eps, T* y,
           T* mean, T* rstd) {
  for (int64_t r = 0; r < rows; r++) {
    const T* xr = x + r * d;
    T* yr = y + r * d;
    double s = 0;
    for (int64_t i = 0; i < d; i++) s += xr[i];
    const T m = (T)(s / d);
    double v = 0;
    for (int64_t i = 0; i < d; i++) { const double t = (double)(xr[i] - m); v += t * t; }
    const T rs = (T)(1.0 / sqrt((double)(T)(v / d) + eps));
    for (int64_t i = 0; i < d; i++) {
      T h = (xr[i] - m) * rs;
      if (w) h = h * w[i];
      if (b) h = h + b[i];
      yr[i] = h;
    }
    mean[r] = m;
    rstd[r] = rs;
  }
  return 0;
}
"""

_BACKWARD = """
#include <stdint.h>
#include <string.h>
int kernel(int64_t rows, int64_t d, const T* g, const T* x, const T* mean, const T* rstd,
           const T* w, T* gi, double* gw, double* gb) {
  if (gw) memset(gw, 0, sizeof(double) * d);
  if (gb) memset(gb, 0, sizeof(double) * d);
  for (int64_t r = 0; r < rows; r++) {
    const T* gr = g + r * d;
    const T* xr = x + r * d;
    const T m = mean[r], rs = rstd[r];
    if (gi) {
      double s1 = 0, s2 = 0;
      for (int64_t i = 0; i < d; i++) {
        const T gg = w ? gr[i] * w[i] : gr[i];
        const T h = (xr[i] - m) * rs;
        s1 += gg;
        s2 += (double)gg * h;
      }
      const T a = (T)(s1 / d), c = (T)(s2 / d);
      T* out = gi + r * d;
      for (int64_t i = 0; i < d; i++) {
        const T gg = w ? gr[i] * w[i] : gr[i];
        const T h = (xr[i] - m) * rs;
        out[i] = rs * (gg - a - h * c);
      }
    }
    for (int64_t i = 0; i < d; i++) {
      if (gw) gw[i] += (double)gr[i] * ((xr[i] - m) * rs);
      if (gb) gb[i] += gr[i];
    }
  }
  return 0;
}
"""


def _load(template, ctype, argtypes):
    fn = cached_kernel("#define T " + ctype + "\n" + template, build_kernel)
    fn.argtypes = argtypes
    fn.restype = ctypes.c_int
    return fn


def _rows(x, k):
    d = 1
    for s in x.shape[x.ndim - k:]:
        d *= s
    return (x.size // d if d else 0), d


_P = ctypes.c_void_p
_I = ctypes.c_int64


def _ptr(a):
    return None if a is None else address(a)


class LayerNormRunner:
    """``native_layer_norm(input, normalized_shape, weight, bias, eps)`` on CPU tensors; None
    when an operand doesn't fit the C loop."""

    def __init__(self, backend, ctype):
        self.backend = backend
        self.fn = _load(_FORWARD, ctype, [_I, _I, _P, _P, _P, ctypes.c_double, _P, _P, _P])

    def __call__(self, input, normalized_shape, weight, bias, eps):
        be = self.backend
        x = be.native(input)
        w = be.native(weight) if weight is not None else None
        b = be.native(bias) if bias is not None else None
        if not _fits(x, w, b):
            return None
        k = len(normalized_shape)
        rows, d = _rows(x, k)
        y = np.empty(x.shape, x.dtype)
        stats = x.shape[:x.ndim - k] + (1,) * k
        mean, rstd = np.empty(stats, x.dtype), np.empty(stats, x.dtype)
        if rows and d:
            self.fn(rows, d, address(x), _ptr(w), _ptr(b), float(eps), address(y),
                    address(mean), address(rstd))
        dev = input.device
        return be.wrap(y, dev), be.wrap(mean, dev), be.wrap(rstd, dev)


class LayerNormBackwardRunner:
    """``native_layer_norm_backward(grad_out, input, normalized_shape, mean, rstd, weight,
    bias, output_mask)`` on CPU tensors; None when an operand doesn't fit."""

    def __init__(self, backend, ctype):
        self.backend = backend
        self.fn = _load(_BACKWARD, ctype, [_I, _I, _P, _P, _P, _P, _P, _P, _P, _P])

    def __call__(self, grad_out, input, normalized_shape, mean, rstd, weight, bias,
                 output_mask):
        be = self.backend
        g, x = be.native(grad_out), be.native(input)
        mu, rs = be.native(mean), be.native(rstd)
        w = be.native(weight) if weight is not None else None
        if not _fits(x, w, None, g, mu, rs) or g.shape != x.shape:
            return None
        rows, d = _rows(x, len(normalized_shape))
        gi = np.empty(x.shape, x.dtype) if output_mask[0] else None
        gw = np.empty(d, np.float64) if output_mask[1] else None
        gb = np.empty(d, np.float64) if output_mask[2] else None
        if rows and d:
            self.fn(rows, d, address(g), address(x), address(mu), address(rs), _ptr(w),
                    _ptr(gi), _ptr(gw), _ptr(gb))
        elif gw is not None or gb is not None:
            for a in (gw, gb):
                if a is not None:
                    a[...] = 0
        dev, ns = input.device, tuple(normalized_shape)
        return (be.wrap(gi, dev) if gi is not None else None,
                be.wrap(gw.astype(x.dtype).reshape(ns), dev) if gw is not None else None,
                be.wrap(gb.astype(x.dtype).reshape(ns), dev) if gb is not None else None)


def _fits(x, *others):
    if x.dtype not in _C or not x.flags.c_contiguous:
        return False
    return all(a is None or (a.dtype == x.dtype and a.flags.c_contiguous) for a in others)


def compile_norm(backend, name, dtype):
    """``Backend.compile_norm`` for the CPU: a runner for ``name`` at ``dtype``, or None."""
    ctype = _C.get(np.dtype(dtype.np)) if dtype.np is not None else None
    if ctype is None or compiler() is None:
        return None
    if name == "native_layer_norm":
        return LayerNormRunner(backend, ctype)
    if name == "native_layer_norm_backward":
        return LayerNormBackwardRunner(backend, ctype)
    return None
