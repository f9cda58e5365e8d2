"""Pooling kernels and col2im: one work-item per output element (forward) or per input element
(backward), for 1-3 spatial dims (fewer dims are padded to three of size 1).

Backward kernels *gather*: each input element walks the windows that contain it and sums
their gradients, so no two work-items write one element (deterministic, no atomics) and a
backward is one launch. Window geometry (sizes, kernel, stride, padding, dilation) travels in
a small int64 buffer cached per geometry. Max pooling keeps the first maximum of each window
and lets NaN win, as the CPU does; integer average pooling truncates its division.
"""
from __future__ import annotations

import numpy as np

from ember.kit.binding import bind
from ember.runtime import dtypes as D
from ember.runtime import data_of, offset_of, shape_of

from . import cltypes
from . import progs
from .codegen import remember

# G: geometry buffer: Z Y X (input), OZ OY OX (output), kz ky kx, sz sy sx, pz py px, dz dy dx,
# then the divisor override (0 if none) and count_include_pad
GEOM = r"""
#define Z G[0]
#define Y G[1]
#define X G[2]
#define OZ G[3]
#define OY G[4]
#define OX G[5]
#define KZ G[6]
#define KY G[7]
#define KX G[8]
#define SZ G[9]
#define SY G[10]
#define SX G[11]
#define PZ G[12]
#define PY G[13]
#define PX G[14]
#define DZ G[15]
#define DY G[16]
#define DX G[17]
#define ISNAN(v) ((v) != (v))
/* the work-item as an output element: its (n, c) plane nc, (oz, oy, ox), and xp, the input
   plane it pools */
#define OUTPUT_ELEMENT \
  const long i = get_global_id(0); \
  if (i >= total) return; \
  long t = i; \
  const long ox = t % OX; t /= OX; const long oy = t % OY; t /= OY; \
  const long oz = t % OZ; const long nc = t / OZ; \
  __global const T* xp = x + nc * Z * Y * X;
/* the work-item as an input element: its (n, c) plane nc, flat index idx in it and (z, y, xx) */
#define INPUT_ELEMENT \
  const long i = get_global_id(0); \
  if (i >= total) return; \
  const long idx = i % (Z * Y * X), nc = i / (Z * Y * X); \
  const long xx = idx % X, y = (idx / X) % Y, z = idx / (X * Y);
/* opens the loops over the kernel taps (a, b, c) whose output window (oz, oy, ox) covers input
   element (z, y, xx); the body ends with "} } }" */
#define FOR_TAPS_COVERING_INPUT \
  for (long a = 0; a < KZ; ++a) { const long qz = z + PZ - a * DZ; \
    if (qz < 0 || qz % SZ) continue; const long oz = qz / SZ; if (oz >= OZ) continue; \
    for (long b = 0; b < KY; ++b) { const long qy = y + PY - b * DY; \
      if (qy < 0 || qy % SY) continue; const long oy = qy / SY; if (oy >= OY) continue; \
      for (long c = 0; c < KX; ++c) { const long qx = xx + PX - c * DX; \
        if (qx < 0 || qx % SX) continue; const long ox = qx / SX; if (ox >= OX) continue;
/* max pooling keeps the first maximum (best, at bi) and the last NaN, as PyTorch's kernels */
#define KEEP_MAX(v, idx) \
  if (bi < 0 || (v) > best || ISNAN(v)) { best = (v); bi = (idx); }
inline long adaptive_start(long o, long L, long O) { return (o * L) / O; }
inline long adaptive_end(long o, long L, long O) { return ((o + 1) * L + O - 1) / O; }
"""

SRC = r"""
__kernel void max_pool(__global T* out, __global long* ind, __global const T* x,
                       __global const long* G, const long total) {
  OUTPUT_ELEMENT
  const long z0 = oz * SZ - PZ, y0 = oy * SY - PY, x0 = ox * SX - PX;
  T best = 0; long bi = -1;
  for (long a = 0; a < KZ; ++a) { const long z = z0 + a * DZ; if (z < 0 || z >= Z) continue;
    for (long b = 0; b < KY; ++b) { const long y = y0 + b * DY; if (y < 0 || y >= Y) continue;
      for (long c = 0; c < KX; ++c) { const long xx = x0 + c * DX; if (xx < 0 || xx >= X) continue;
        const long idx = (z * Y + y) * X + xx;
        KEEP_MAX(xp[idx], idx)
      } } }
  out[i] = best; ind[i] = bi;
}

/* gradient of max pooling: each input element sums the windows whose index names it */
__kernel void max_pool_backward(__global T* gi, __global const T* go, __global const long* ind,
                                __global const long* G, const long total) {
  INPUT_ELEMENT
  const long base = nc * OZ * OY * OX;
  AT acc = 0;
  FOR_TAPS_COVERING_INPUT
    const long o = base + (oz * OY + oy) * OX + ox;
    if (ind[o] == idx) acc += (AT)go[o];
  } } }
  gi[i] = (T)acc;
}

inline long avg_divisor(__global const long* G, long oz, long oy, long ox) {
  if (G[18]) return G[18];
  const long z0 = oz * SZ - PZ, y0 = oy * SY - PY, x0 = ox * SX - PX;
  const long z1 = min(z0 + KZ, Z + PZ), y1 = min(y0 + KY, Y + PY), x1 = min(x0 + KX, X + PX);
  if (G[19]) return (z1 - z0) * (y1 - y0) * (x1 - x0);
  return (min(z1, Z) - max(z0, 0L)) * (min(y1, Y) - max(y0, 0L)) * (min(x1, X) - max(x0, 0L));
}

__kernel void avg_pool(__global T* out, __global const T* x, __global const long* G,
                       const long total) {
  OUTPUT_ELEMENT
  const long z0 = oz * SZ - PZ, y0 = oy * SY - PY, x0 = ox * SX - PX;
  AT acc = 0;
  for (long z = max(z0, 0L); z < min(z0 + KZ, Z); ++z)
    for (long y = max(y0, 0L); y < min(y0 + KY, Y); ++y)
      for (long xx = max(x0, 0L); xx < min(x0 + KX, X); ++xx)
        acc += (AT)xp[(z * Y + y) * X + xx];
  out[i] = (T)(acc / (AT)avg_divisor(G, oz, oy, ox));
}

__kernel void avg_pool_backward(__global T* gi, __global const T* go, __global const long* G,
                                const long total) {
  INPUT_ELEMENT
  const long base = nc * OZ * OY * OX;
  AT acc = 0;
  for (long oz = 0; oz < OZ; ++oz) { const long z0 = oz * SZ - PZ;
    if (z < z0 || z >= z0 + KZ) continue;
    for (long oy = 0; oy < OY; ++oy) { const long y0 = oy * SY - PY;
      if (y < y0 || y >= y0 + KY) continue;
      for (long ox = 0; ox < OX; ++ox) { const long x0 = ox * SX - PX;
        if (xx < x0 || xx >= x0 + KX) continue;
        acc += (AT)go[base + (oz * OY + oy) * OX + ox] / (AT)avg_divisor(G, oz, oy, ox);
      } } }
  gi[i] = (T)acc;
}

__kernel void adaptive_avg(__global T* out, __global const T* x, __global const long* G,
                           const long total) {
  OUTPUT_ELEMENT
  const long z0 = adaptive_start(oz, Z, OZ), z1 = adaptive_end(oz, Z, OZ);
  const long y0 = adaptive_start(oy, Y, OY), y1 = adaptive_end(oy, Y, OY);
  const long x0 = adaptive_start(ox, X, OX), x1 = adaptive_end(ox, X, OX);
  AT acc = 0;
  for (long z = z0; z < z1; ++z) for (long y = y0; y < y1; ++y) for (long xx = x0; xx < x1; ++xx)
    acc += (AT)xp[(z * Y + y) * X + xx];
  out[i] = (T)(acc / (AT)((z1 - z0) * (y1 - y0) * (x1 - x0)));
}

__kernel void adaptive_avg_backward(__global T* gi, __global const T* go,
                                    __global const long* G, const long total) {
  INPUT_ELEMENT
  const long base = nc * OZ * OY * OX;
  AT acc = 0;
  for (long oz = (z * OZ) / Z; oz < OZ && adaptive_start(oz, Z, OZ) <= z; ++oz) {
    const long z0 = adaptive_start(oz, Z, OZ), z1 = adaptive_end(oz, Z, OZ);
    if (z >= z1) continue;
    for (long oy = (y * OY) / Y; oy < OY && adaptive_start(oy, Y, OY) <= y; ++oy) {
      const long y0 = adaptive_start(oy, Y, OY), y1 = adaptive_end(oy, Y, OY);
      if (y >= y1) continue;
      for (long ox = (xx * OX) / X; ox < OX && adaptive_start(ox, X, OX) <= xx; ++ox) {
        const long x0 = adaptive_start(ox, X, OX), x1 = adaptive_end(ox, X, OX);
        if (xx >= x1) continue;
        acc += (AT)go[base + (oz * OY + oy) * OX + ox] / (AT)((z1 - z0) * (y1 - y0) * (x1 - x0));
      } } }
  gi[i] = (T)acc;
}

__kernel void adaptive_max(__global T* out, __global long* ind, __global const T* x,
                           __global const long* G, const long total) {
  OUTPUT_ELEMENT
  T best = 0; long bi = -1;
  for (long z = adaptive_start(oz, Z, OZ); z < adaptive_end(oz, Z, OZ); ++z)
    for (long y = adaptive_start(oy, Y, OY); y < adaptive_end(oy, Y, OY); ++y)
      for (long xx = adaptive_start(ox, X, OX); xx < adaptive_end(ox, X, OX); ++xx) {
        const long idx = (z * Y + y) * X + xx;
        KEEP_MAX(xp[idx], idx)
      }
  out[i] = best; ind[i] = bi;
}

__kernel void adaptive_max_backward(__global T* gi, __global const T* go,
                                    __global const long* ind, __global const long* G,
                                    const long total) {
  INPUT_ELEMENT
  const long base = nc * OZ * OY * OX;
  AT acc = 0;
  for (long oz = (z * OZ) / Z; oz < OZ && adaptive_start(oz, Z, OZ) <= z; ++oz)
    for (long oy = (y * OY) / Y; oy < OY && adaptive_start(oy, Y, OY) <= y; ++oy)
      for (long ox = (xx * OX) / X; ox < OX && adaptive_start(ox, X, OX) <= xx; ++ox) {
        const long o = base + (oz * OY + oy) * OX + ox;
        if (ind[o] == idx) acc += (AT)go[o];
      }
  gi[i] = (T)acc;
}

/* col2im: columns (N*C, KZ*KY*KX, OZ*OY*OX) of a convolution summed back into its input
   (N*C, Z*Y*X): the input gradient of a convolution, the output of a transposed one */
__kernel void col2im(__global T* im, __global const T* cols, __global const long* G,
                     const long total) {
  INPUT_ELEMENT
  const long ol = OZ * OY * OX;
  __global const T* cp = cols + nc * KZ * KY * KX * ol;
  AT acc = 0;
  FOR_TAPS_COVERING_INPUT
    acc += (AT)cp[((a * KY + b) * KX + c) * ol + (oz * OY + oy) * OX + ox];
  } } }
  im[i] = (T)acc;
}
"""

_ARGS = {
    "max_pool": [None, None, None, None, np.int64],
    "max_pool_backward": [None, None, None, None, np.int64],
    "avg_pool": [None, None, None, np.int64],
    "avg_pool_backward": [None, None, None, np.int64],
    "adaptive_avg": [None, None, None, np.int64],
    "adaptive_avg_backward": [None, None, None, np.int64],
    "adaptive_max": [None, None, None, None, np.int64],
    "adaptive_max_backward": [None, None, None, None, np.int64],
    "col2im": [None, None, None, np.int64],
}


def kernels(st, dt):
    at = D.float32 if dt is D.float16 else D.int64 if dt.category < D.FLOATING else dt
    key = ("pool", dt)
    return progs.program(st, key, lambda: "\n".join([
        progs.header(st), f"typedef {cltypes.CTYPE[dt]} T;", f"typedef {cltypes.CTYPE[at]} AT;",
        GEOM, SRC]), _ARGS)


def _three(v, fill):
    v = tuple(v)
    return (fill,) * (3 - len(v)) + v


def geometry(st, sp, out, k=(), s=(), p=(), d=(), divisor=None, include_pad=True):
    """The int64 geometry buffer (cached per geometry)."""
    vals = (_three(sp, 1) + _three(out, 1) + _three(k, 1) + _three(s, 1) + _three(p, 0) +
            _three(d, 1) + (int(divisor or 0), int(bool(include_pad))))
    key = ("pool-geometry",) + vals
    buf = st.meta.get(key)
    if buf is None:
        buf = remember(st, key, progs.buffer_of(st, vals))
    return buf


def contiguous(backend, t):
    if t.is_contiguous():
        return t
    st, _ = backend.state_queue(t.device)
    c = backend.new_tensor(st, shape_of(t), t.dtype, t.device)
    backend.copy_(c, t)
    return c


def _run(backend, name, outs, ins, geom, total):
    st, q = backend.state_queue(outs[0].device)
    if total == 0:
        return
    knl = kernels(st, ins[0].dtype if name != "col2im" else outs[0].dtype)[name]
    progs.launch(st, q, knl, total, *[data_of(t) for t in outs],
                 *[data_of(t) for t in ins], geom, total)


def _offsets_ok(*ts):
    return all(offset_of(t) == 0 for t in ts)


def _new(backend, shape, dtype, like):
    st, _ = backend.state_queue(like.device)
    return backend.new_tensor(st, shape, dtype, like.device)


def plain(backend, t):
    """A contiguous tensor starting at its storage's first element (what kernels index)."""
    t = contiguous(backend, t)
    if offset_of(t):
        c = _new(backend, shape_of(t), t.dtype, t)
        backend.copy_(c, t)
        return c
    return t


def _window_out(sp, k, s, p, d, ceil_mode):
    out = []
    for L, kk, ss, pp, dd in zip(sp, k, s, p, d):
        num = L + 2 * pp - dd * (kk - 1) - 1 + (ss - 1 if ceil_mode else 0)
        o = num // ss + 1
        if ceil_mode and (o - 1) * ss >= L + pp:
            o -= 1
        out.append(o)
    return tuple(out)


def _pooled(backend, name, x, out_sp, *window, with_indices=False):
    """Kernel ``name`` over the plain input ``x``, one work-item per output element: the
    (N, C, *out_sp) result, with the int64 indices of the chosen elements when
    ``with_indices``. ``window``: ``geometry``'s kernel, stride, padding, dilation, ..."""
    st, _ = backend.state_queue(x.device)
    shape = shape_of(x)[:2] + tuple(out_sp)
    values = _new(backend, shape, x.dtype, x)
    outs = (values, _new(backend, shape, D.int64, x)) if with_indices else (values,)
    _run(backend, name, outs, (x,), geometry(st, shape_of(x)[2:], out_sp, *window),
         values.numel())
    return outs if with_indices else values


def _input_grad(backend, name, grad_output, self, *window, indices=None):
    """The gradient of pooling ``self`` from ``grad_output`` (and the forward's ``indices``)
    by the gathering kernel ``name``, one work-item per input element."""
    g = plain(backend, grad_output)
    ins = (g,) if indices is None else (g, plain(backend, indices))
    st, _ = backend.state_queue(g.device)
    gi = _new(backend, shape_of(self), g.dtype, g)
    _run(backend, name, (gi,), ins,
         geometry(st, shape_of(self)[2:], shape_of(g)[2:], *window), gi.numel())
    return gi


def max_pool(backend, self, kernel_size, stride, padding, dilation, ceil_mode):
    x = plain(backend, self)
    out_sp = _window_out(shape_of(x)[2:], kernel_size, stride, padding, dilation, ceil_mode)
    return _pooled(backend, "max_pool", x, out_sp, kernel_size, stride, padding, dilation,
                   with_indices=True)


def max_pool_backward(backend, grad_output, self, kernel_size, stride, padding, dilation,
                      ceil_mode, indices):
    return _input_grad(backend, "max_pool_backward", grad_output, self, kernel_size, stride,
                       padding, dilation, indices=indices)


def avg_pool(backend, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
             divisor_override):
    x = plain(backend, self)
    ones = (1,) * (x.ndim - 2)
    out_sp = _window_out(shape_of(x)[2:], kernel_size, stride, padding, ones, ceil_mode)
    return _pooled(backend, "avg_pool", x, out_sp, kernel_size, stride, padding, ones,
                   divisor_override, count_include_pad)


def avg_pool_backward(backend, grad_output, self, kernel_size, stride, padding, ceil_mode,
                      count_include_pad, divisor_override):
    return _input_grad(backend, "avg_pool_backward", grad_output, self, kernel_size, stride,
                       padding, (1,) * (grad_output.ndim - 2), divisor_override,
                       count_include_pad)


def adaptive_avg(backend, self, output_size):
    return _pooled(backend, "adaptive_avg", plain(backend, self), output_size)


def adaptive_avg_backward(backend, grad_output, self):
    return _input_grad(backend, "adaptive_avg_backward", grad_output, self)


def adaptive_max(backend, self, output_size):
    return _pooled(backend, "adaptive_max", plain(backend, self), output_size,
                   with_indices=True)


def adaptive_max_backward(backend, grad_output, self, indices):
    return _input_grad(backend, "adaptive_max_backward", grad_output, self, indices=indices)


def col2im(backend, cols, shape, kernel, stride, padding, dilation, out_sp):
    """(N, C, *in_sp) from contiguous columns (N, C, *kernel, *out_sp)."""
    cols = plain(backend, cols)
    st, _ = backend.state_queue(cols.device)
    im = _new(backend, tuple(shape), cols.dtype, cols)
    _run(backend, "col2im", (im,), (cols,),
         geometry(st, shape[2:], out_sp, kernel, stride, padding, dilation), im.numel())
    return im


# one kernel serves the 2-d and 3-d op of each kind (the geometry carries the dims)
TABLE = {
    f"{kind}{n}d{suffix}": fn for n in (2, 3) for kind, suffix, fn in (
        ("max_pool", "_with_indices", max_pool),
        ("max_pool", "_with_indices_backward", max_pool_backward),
        ("avg_pool", "", avg_pool), ("avg_pool", "_backward", avg_pool_backward),
        ("_adaptive_avg_pool", "", adaptive_avg),
        ("_adaptive_avg_pool", "_backward", adaptive_avg_backward),
        ("adaptive_max_pool", "", adaptive_max),
        ("adaptive_max_pool", "_backward", adaptive_max_backward))}


def register(backend):
    bind(backend, TABLE)
