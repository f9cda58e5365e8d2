"""Resampling kernels (``ember.ops.resampling``): upsample and upsample_backward as one pass
per spatial dim over the op layer's tables.

A pass sees its operand as (outer, L_in, inner) (contiguous; the first pass copies a strided
input once) and writes (outer, L_out, inner): a work-item per output element sums ``K``
weighted input elements (``resample``, accumulating in float for half and in the operand's
type otherwise) or copies one (``take_dim``, nearest modes: any dtype). The backward passes use
the transposed tables, so they are gathers too: no atomics, the same sums on every run. Tables
are uploaded once per (mode, sizes, scale, dtype) and kept with the device state.
"""
from __future__ import annotations

import numpy as np

from ember.kit.binding import bind
from ember.ops import resampling as _rs
from ember.runtime import data_of, offset_of, shape_of
from . import kernelkit, progs, transfer

SOURCE = r"""
__kernel void resample(__global T* out, __global const T* x, __global const long* idx,
                       __global const AT* w, const long n, const long Lin, const long Lout,
                       const long inner, const long K) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const long q = i % inner, r = i / inner, o = r % Lout, p = r / Lout;
  __global const T* src = x + p * Lin * inner + q;
  AT acc = 0;
  for (long k = 0; k < K; k++) acc += w[o * K + k] * (AT)src[idx[o * K + k] * inner];
  out[i] = (T)acc;
}
__kernel void take_dim(__global T* out, __global const T* x, __global const long* idx,
                       const long n, const long Lin, const long Lout, const long inner) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const long q = i % inner, r = i / inner, o = r % Lout, p = r / Lout;
  out[i] = x[(p * Lin + idx[o]) * inner + q];
}
"""
_KERNELS = {"resample": "bbbblllll", "take_dim": "bbbllll"}


def _dense(backend, st, q, t):
    if t.is_contiguous() and offset_of(t) == 0:
        return t
    out = backend.new_tensor(st, shape_of(t), t.dtype, t.device)
    return transfer.copy_into(backend, st, q, out, t)


def _device_table(st, key, arr):
    cache = st.__dict__.setdefault("resample_tables", {})
    buf = cache.get(key)
    if buf is None:
        if len(cache) > 256:
            cache.clear()
        buf = cache[key] = progs.buffer_of(st, arr, arr.dtype)
    return buf


def _run(backend, x, tables, key, out_sizes):
    st, q = backend.state_queue(x.device)
    a = _dense(backend, st, q, x)
    nd = len(tables)
    at = _rs.compute_dtype(x.dtype)
    kernels = kernelkit.program(st, "resampling", x.dtype, SOURCE, _KERNELS)
    for d, ((idx, w), n_out) in enumerate(zip(tables, out_sizes)):
        dim = a.ndim - nd + d
        shape = shape_of(a)[:dim] + (n_out,) + shape_of(a)[dim + 1:]
        out = backend.new_tensor(st, shape, x.dtype, x.device)
        n = out.numel()
        if n:
            lin = shape_of(a)[dim]
            inner = int(np.prod(shape_of(a)[dim + 1:], dtype=np.int64))
            ibuf = _device_table(st, key + (d, "idx"), idx)
            if w is None:
                kernelkit.launch(st, q, kernels["take_dim"], n, data_of(out),
                                 data_of(a), ibuf, n, lin, n_out, inner)
            else:
                wbuf = _device_table(st, key + (d, "w"), w.astype(at.np, copy=False))
                kernelkit.launch(st, q, kernels["resample"], n, data_of(out),
                                 data_of(a), ibuf, wbuf, n, lin, n_out, inner,
                                 idx.shape[1])
        a = out
    return a


def upsample(backend, x, output_size, mode, align_corners, scales):
    tables = _rs.resample_tables(mode, shape_of(x)[2:], output_size, align_corners, scales,
                                 x.dtype)
    key = ("fw", mode, tuple(shape_of(x)[2:]), tuple(output_size), align_corners, tuple(scales),
           x.dtype)
    return _run(backend, x, tables, key, output_size)


def upsample_backward(backend, g, input_size, output_size, mode, align_corners, scales):
    tables = _rs.resample_tables(mode, input_size, output_size, align_corners, scales, g.dtype,
                                 backward=True)
    key = ("bw", mode, tuple(input_size), tuple(output_size), align_corners, tuple(scales),
           g.dtype)
    return _run(backend, g, tables, key, input_size)


TABLE = {"upsample": upsample, "upsample_backward": upsample_backward}


def register(backend):
    bind(backend, TABLE)
