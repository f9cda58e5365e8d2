"""Spatial kernels (``ember.ops.spatial``): im2col, col2im, pixel_shuffle, pixel_unshuffle.

* ``im2col``: a work-item per element of the (N, C, kh, kw, oh, ow) output, reading the input
  through its strides (zero outside the image);
* ``col2im``: a work-item per output pixel, summing the block elements that land on it (walked
  in kernel-offset order): a gather, so no atomics and the same order on every run;
* the pixel shuffles are strided copies (``transfer.copy_into``) from a view that reads the
  input in the output's order.
"""
from __future__ import annotations

from ember.kit.binding import bind
from ember.runtime import data_of, offset_of, shape_of, strides_of

from . import kernelkit, transfer
from .ops_shape import view

SOURCE = r"""
__kernel void im2col(__global T* out, __global const T* x, const long n, const long C,
                     const long H, const long W, const long kh, const long kw, const long dh,
                     const long dw, const long ph, const long pw, const long sh, const long sw,
                     const long oh, const long ow, const long xo, const long xs0,
                     const long xs1, const long xs2, const long xs3) {
  const long i = get_global_id(0);
  if (i >= n) return;
  long q = i;
  const long b = q % ow; q /= ow;
  const long a = q % oh; q /= oh;
  const long j = q % kw; q /= kw;
  const long k = q % kh; q /= kh;
  const long c = q % C, m = q / C;
  const long y = a * sh - ph + k * dh, z = b * sw - pw + j * dw;
  out[i] = (y >= 0 && y < H && z >= 0 && z < W) ? x[xo + m * xs0 + c * xs1 + y * xs2 + z * xs3]
                                                : (T)0;
}

__kernel void col2im(__global T* out, __global const T* cols, const long n, const long C,
                     const long H, const long W, const long kh, const long kw, const long dh,
                     const long dw, const long ph, const long pw, const long sh, const long sw,
                     const long oh, const long ow, const long co, const long cs0,
                     const long cs1, const long cs2) {
  const long i = get_global_id(0);
  if (i >= n) return;
  long q = i;
  const long z = q % W; q /= W;
  const long y = q % H; q /= H;
  const long c = q % C, m = q / C;
  AT acc = 0;
  for (long k = 0; k < kh; k++) {
    const long ty = y + ph - k * dh;
    if (ty < 0 || ty % sh) continue;
    const long a = ty / sh;
    if (a >= oh) continue;
    for (long j = 0; j < kw; j++) {
      const long tz = z + pw - j * dw;
      if (tz < 0 || tz % sw) continue;
      const long b = tz / sw;
      if (b >= ow) continue;
      acc += cols[co + m * cs0 + ((c * kh + k) * kw + j) * cs1 + (a * ow + b) * cs2];
    }
  }
  out[i] = (T)acc;
}
"""

_KERNELS = {"im2col": "bbl" + "l" * 13 + "lllll", "col2im": "bbl" + "l" * 13 + "llll"}


def _blocks(h, w, kernel_size, dilation, padding, stride):
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = kernel_size, dilation, padding, stride
    return ((h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1)


def _batched(t, ndim):
    """``t`` with a leading batch dim of 1 when it is unbatched (a launch-time view)."""
    return t if t.ndim == ndim else view(t, (1,) + shape_of(t), (0,) + strides_of(t), offset_of(t))


def im2col(backend, x, kernel_size, dilation, padding, stride):
    st, q = backend.state_queue(x.device)
    unbatched = x.ndim == 3
    x = _batched(x, 4)
    n, c, h, w = shape_of(x)
    oh, ow = _blocks(h, w, kernel_size, dilation, padding, stride)
    kh, kw = kernel_size
    out = backend.new_tensor(st, (n, c * kh * kw, oh * ow), x.dtype, x.device)
    k = kernelkit.program(st, "spatial", x.dtype, SOURCE, _KERNELS)["im2col"]
    kernelkit.launch(st, q, k, out.numel(), data_of(out), data_of(x), out.numel(), c,
                     h, w, kh, kw, *dilation, *padding, *stride, oh, ow,
                     *kernelkit.strides(x))
    return view(out, shape_of(out)[1:], strides_of(out)[1:], 0) if unbatched else out


def col2im(backend, cols, output_size, kernel_size, dilation, padding, stride):
    st, q = backend.state_queue(cols.device)
    unbatched = cols.ndim == 2
    cols = _batched(cols, 3)
    n, ck, _ = shape_of(cols)
    h, w = output_size
    kh, kw = kernel_size
    c = ck // (kh * kw)
    oh, ow = _blocks(h, w, kernel_size, dilation, padding, stride)
    out = backend.new_tensor(st, (n, c, h, w), cols.dtype, cols.device)
    k = kernelkit.program(st, "spatial", cols.dtype, SOURCE, _KERNELS)["col2im"]
    kernelkit.launch(st, q, k, out.numel(), data_of(out), data_of(cols), out.numel(),
                     c, h, w, kh, kw, *dilation, *padding, *stride, oh, ow,
                     *kernelkit.strides(cols))
    return view(out, shape_of(out)[1:], strides_of(out)[1:], 0) if unbatched else out


def _contiguous_strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(out))


def pixel_shuffle(backend, x, r):
    st, q = backend.state_queue(x.device)
    *b, c, h, w = shape_of(x)
    oc = c // (r * r)
    out = backend.new_tensor(st, (*b, oc, h * r, w * r), x.dtype, x.device)
    if out.numel():
        *bs, sc, sh, sw = strides_of(x)
        split = (*b, oc, h, r, w, r)
        src = view(x, split, (*bs, sc * r * r, sh, sc * r, sw, sc), offset_of(x))
        transfer.copy_into(backend, st, q, view(out, split, _contiguous_strides(split), 0), src)
    return out


def pixel_unshuffle(backend, x, r):
    st, q = backend.state_queue(x.device)
    *b, c, h, w = shape_of(x)
    oh, ow = h // r, w // r
    out = backend.new_tensor(st, (*b, c * r * r, oh, ow), x.dtype, x.device)
    if out.numel():
        *bs, sc, sh, sw = strides_of(x)
        split = (*b, c, r, r, oh, ow)
        src = view(x, split, (*bs, sc, sh, sw, sh * r, sw * r), offset_of(x))
        transfer.copy_into(backend, st, q, view(out, split, _contiguous_strides(split), 0), src)
    return out


TABLE = {"im2col": im2col, "col2im": col2im, "pixel_shuffle": pixel_shuffle,
         "pixel_unshuffle": pixel_unshuffle}


def register(backend):
    bind(backend, TABLE)
