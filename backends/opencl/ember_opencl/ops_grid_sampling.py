"""Grid sampling kernels (``ember.ops.grid_sampling``): grid_sampler and grid_sampler_backward.

A work-item owns one sample point of one batch element: it computes the point's taps (input
position, weight, derivative of the weight along each coordinate; PyTorch's formulas for
unnormalize, clip and reflection, Keys' bicubic with A = -0.75) once and loops over channels.

* ``gs_forward`` writes out[n, c, l] = sum over taps of weight * input;
* ``gs_backward`` writes the grid gradient of its point (sum over channels and taps, no
  collisions) and, per tap, the input position and weight; the input gradient is then a
  ``scatter_add_`` of ``grad * weight`` (the indexing kernels' deterministic accumulation, in
  the CPU's order).

Operands are made contiguous first (one copy when they are not).
"""
from __future__ import annotations

from ember.kit.binding import bind
from ember.runtime import dtypes as D
from ember.runtime import data_of, offset_of, shape_of

from . import kernelkit, transfer

SOURCE = r"""
#define A_CUBIC ((AT)-0.75)
inline AT unnorm(AT g, long size, int align, AT* m) {
  if (align) { *m = (AT)(size - 1) / 2; return (g + 1) / 2 * (AT)(size - 1); }
  *m = (AT)size / 2;
  return ((g + 1) * (AT)size - 1) / 2;
}
inline AT clipc(AT x, long size, AT* d) {
  const AT hi = (AT)(size - 1);
  *d = (x > 0 && x < hi) ? (AT)1 : (AT)0;
  return fmin(fmax(x, (AT)0), hi);
}
inline AT reflectc(AT x, AT tl, AT th, AT* d) {
  if (tl == th) { *d = 0; return 0; }
  const AT lo = tl / 2, span = (th - tl) / 2;
  x = x - lo;
  AT sign = 1;
  if (x < 0) { sign = -1; x = -x; }
  const AT extra = fmod(x, span), flips = floor(x / span);
  if (fmod(flips, (AT)2) == 0) { *d = sign; return extra + lo; }
  *d = -sign;
  return span - extra + lo;
}
inline AT coordc(AT x, long size, int pad, int align, AT* d) {
  if (pad == 1) return clipc(x, size, d);
  if (pad == 2) {
    AT d1, d2;
    x = align ? reflectc(x, 0, (AT)(2 * (size - 1)), &d1)
              : reflectc(x, -1, (AT)(2 * size - 1), &d1);
    x = clipc(x, size, &d2);
    *d = d1 * d2;
    return x;
  }
  *d = 1;
  return x;
}
inline AT cnear(AT x) { return ((A_CUBIC + 2) * x - (A_CUBIC + 3)) * x * x + 1; }
inline AT cfar(AT x) { return ((A_CUBIC * x - 5 * A_CUBIC) * x + 8 * A_CUBIC) * x - 4 * A_CUBIC; }
inline AT cnear_d(AT x) { return (3 * (A_CUBIC + 2) * x - 2 * (A_CUBIC + 3)) * x; }
inline AT cfar_d(AT x) { return (3 * A_CUBIC * x - 10 * A_CUBIC) * x + 8 * A_CUBIC; }
inline void cubic(AT t, AT* c, AT* d) {
  c[0] = cfar(t + 1); c[1] = cnear(t); c[2] = cnear(1 - t); c[3] = cfar(2 - t);
  d[0] = cfar_d(t + 1); d[1] = cnear_d(t); d[2] = -cnear_d(1 - t); d[3] = -cfar_d(2 - t);
}

/* the taps of point (n, l): count, linear input positions (-1 outside), weights, d weight /
   d coordinate k, and the coordinates' gradient multipliers */
inline int taps(__global const T* grid, long n, long l, long L, long s0, long s1, long s2,
                int pad, int align, long* pos, AT* w, AT* dw, AT* mult) {
  const int nd = NDIM;
  const long sizes[3] = {s0, s1, s2};
  AT x[3];
  for (int k = 0; k < nd; k++) {
    AT m, m2;
    x[k] = unnorm((AT)grid[(n * L + l) * nd + k], sizes[k], align, &m);
#if MODE != 2
    x[k] = coordc(x[k], sizes[k], pad, align, &m2);
    m *= m2;
#endif
    mult[k] = m;
  }
#if MODE == 1
  {
    long lin = 0, stride = 1;
    int ok = 1;
    for (int k = 0; k < nd; k++) {
      const AT r = rint(x[k]);
      const long p = (long)r;
      ok = ok && r >= 0 && r <= (AT)(sizes[k] - 1);
      lin += p * stride; stride *= sizes[k];
    }
    pos[0] = ok ? lin : -1; w[0] = 1;
    for (int k = 0; k < 3; k++) dw[k] = 0;
    return 1;
  }
#elif MODE == 0
  {
    AT base[3], frac[3];
    for (int k = 0; k < nd; k++) { base[k] = floor(x[k]); frac[k] = x[k] - base[k]; }
    const int nt = 1 << nd;
    for (int t = 0; t < nt; t++) {
      long lin = 0, stride = 1;
      int ok = 1;
      AT wt = 1;
      for (int k = 0; k < nd; k++) {
        const int o = (t >> k) & 1;
        const AT p = base[k] + o;
        ok = ok && p >= 0 && p <= (AT)(sizes[k] - 1);
        lin += (long)p * stride; stride *= sizes[k];
        wt *= o ? frac[k] : 1 - frac[k];
      }
      for (int k = 0; k < nd; k++) {
        AT d = ((t >> k) & 1) ? (AT)1 : (AT)-1;
        for (int j = 0; j < nd; j++)
          if (j != k) d *= ((t >> j) & 1) ? frac[j] : 1 - frac[j];
        dw[t * 3 + k] = d;
      }
      pos[t] = ok ? lin : -1; w[t] = wt;
    }
    return nt;
  }
#else
  AT bx = floor(x[0]), by = floor(x[1]);
  AT cx[4], dx[4], cy[4], dy[4];
  cubic(x[0] - bx, cx, dx);
  cubic(x[1] - by, cy, dy);
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 4; i++) {
      const int t = j * 4 + i;
      AT unused;
      const AT fx = coordc(bx + (AT)(i - 1), s0, pad, align, &unused);
      const AT fy = coordc(by + (AT)(j - 1), s1, pad, align, &unused);
      const int ok = fx >= 0 && fx <= (AT)(s0 - 1) && fy >= 0 && fy <= (AT)(s1 - 1);
      pos[t] = ok ? (long)fx + (long)fy * s0 : -1;
      w[t] = cx[i] * cy[j];
      dw[t * 3] = dx[i] * cy[j]; dw[t * 3 + 1] = cx[i] * dy[j]; dw[t * 3 + 2] = 0;
    }
  return 16;
#endif
}

__kernel void gs_forward(__global T* out, __global const T* x, __global const T* grid,
                         const long N, const long C, const long L, const long S,
                         const long s0, const long s1, const long s2, const int pad,
                         const int align) {
  const long i = get_global_id(0);
  if (i >= N * L) return;
  const long n = i / L, l = i % L;
  long pos[16]; AT w[16], dw[48], mult[3];
  const int nt = taps(grid, n, l, L, s0, s1, s2, pad, align, pos, w, dw, mult);
  for (long c = 0; c < C; c++) {
    __global const T* xc = x + (n * C + c) * S;
    AT acc = 0;
    for (int t = 0; t < nt; t++) if (pos[t] >= 0) acc += w[t] * (AT)xc[pos[t]];
    out[(n * C + c) * L + l] = (T)acc;
  }
}

__kernel void gs_backward(__global T* ggrid, __global long* tpos, __global T* tw,
                          __global const T* go, __global const T* x, __global const T* grid,
                          const long N, const long C, const long L, const long S,
                          const long s0, const long s1, const long s2, const int pad,
                          const int align, const long maxt) {
  const long i = get_global_id(0);
  if (i >= N * L) return;
  const long n = i / L, l = i % L;
  long pos[16]; AT w[16], dw[48], mult[3];
  const int nt = taps(grid, n, l, L, s0, s1, s2, pad, align, pos, w, dw, mult);
  const int nd = NDIM;
  AT gk[3] = {0, 0, 0};
  for (int t = 0; t < maxt; t++) {
    const long slot = (n * L + l) * maxt + t;
    tpos[slot] = (t < nt && pos[t] >= 0) ? pos[t] : 0;
    tw[slot] = (t < nt && pos[t] >= 0) ? (T)w[t] : (T)0;
  }
  if (MODE != 1) {
    for (long c = 0; c < C; c++) {
      const AT g = go[(n * C + c) * L + l];
      __global const T* xc = x + (n * C + c) * S;
      for (int t = 0; t < nt; t++) {
        if (pos[t] < 0) continue;
        const AT gv = g * (AT)xc[pos[t]];
        for (int k = 0; k < nd; k++) gk[k] += gv * dw[t * 3 + k];
      }
    }
  }
  for (int k = 0; k < nd; k++) ggrid[(n * L + l) * nd + k] = (T)(gk[k] * mult[k]);
}
"""

_KERNELS = {"gs_forward": "bbblllllllii", "gs_backward": "bbbbbblllllllii" + "l"}


def _kernels(st, dtype, mode, nd):
    # one program per (mode, rank): PoCL (LLVM 14) miscompiled the float32 taps when the mode
    # and the sizes were both runtime values, and constants let it unroll the tap loops
    source = f"#define MODE {mode}\n#define NDIM {nd}\n" + SOURCE
    return kernelkit.program(st, f"grid_sampling/{mode}/{nd}", dtype, source, _KERNELS)


def _dense(backend, st, q, t):
    if t.is_contiguous() and offset_of(t) == 0:
        return t
    out = backend.new_tensor(st, shape_of(t), t.dtype, t.device)
    return transfer.copy_into(backend, st, q, out, t)


def _geometry(input, grid):
    n, c = shape_of(input)[:2]
    spatial = tuple(shape_of(input)[2:])
    nd = len(spatial)
    sizes = list(spatial[::-1]) + [1] * (3 - nd)
    S = 1
    for s in spatial:
        S *= s
    L = 1
    for s in shape_of(grid)[1:-1]:
        L *= s
    return n, c, nd, sizes, S, L


def forward(backend, input, grid, mode, padding_mode, align_corners):
    st, q = backend.state_queue(input.device)
    x, g = _dense(backend, st, q, input), _dense(backend, st, q, grid)
    n, c, nd, sizes, S, L = _geometry(input, grid)
    out = backend.new_tensor(st, shape_of(input)[:2] + shape_of(grid)[1:-1], input.dtype,
                             input.device)
    k = _kernels(st, input.dtype, mode, nd)["gs_forward"]
    kernelkit.launch(st, q, k, n * L, data_of(out), data_of(x), data_of(g), n, c,
                     L, S, *sizes, padding_mode, int(align_corners))
    return out


def backward(backend, grad_output, input, grid, mode, padding_mode, align_corners):
    st, q = backend.state_queue(input.device)
    x, g = _dense(backend, st, q, input), _dense(backend, st, q, grid)
    go = _dense(backend, st, q, grad_output)
    n, c, nd, sizes, S, L = _geometry(input, grid)
    maxt = 1 if mode == 1 else 16 if mode == 2 else 1 << nd
    ggrid = backend.new_tensor(st, shape_of(grid), grid.dtype, grid.device)
    tpos = backend.new_tensor(st, (n, L * maxt), D.int64, input.device)
    tw = backend.new_tensor(st, (n, L, maxt), input.dtype, input.device)
    k = _kernels(st, input.dtype, mode, nd)["gs_backward"]
    kernelkit.launch(st, q, k, n * L, data_of(ggrid), data_of(tpos), data_of(tw),
                     data_of(go), data_of(x), data_of(g), n, c, L, S, *sizes,
                     padding_mode, int(align_corners), maxt)
    gin = backend.new_tensor(st, (n, c, S), input.dtype, input.device)
    gin.zero_()
    if gin.numel() and tpos.numel():
        contrib = (go.reshape(n, c, L, 1) * tw.reshape(n, 1, L, maxt)).reshape(n, c, L * maxt)
        gin.scatter_add_(2, tpos.reshape(n, 1, L * maxt).expand(n, c, L * maxt), contrib)
    return gin.reshape(shape_of(input)), ggrid


TABLE = {"grid_sampler": forward, "grid_sampler_backward": backward}


def register(backend):
    bind(backend, TABLE)
