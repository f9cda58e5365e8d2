"""Embedding-bag kernels (``ember.ops.embedding_bag``).

* ``bag_of``: a work-item per index finds its bag (binary search in the offsets) and checks the
  index is a row of the weight (an index out of range is recorded, ``deferred``, and skipped);
* ``bag_reduce``: a work-item per (bag, feature) walks the bag's indices in order: sum (times
  the per-sample weights), mean, or max with the first winning row; it also counts the bag;
* the backward adds each index's scaled gradient row into its weight row with the indexing
  kernels' deterministic ``index_add_`` (max: ``scatter_add_`` to the winning rows).
"""
from __future__ import annotations

from ember.kit.binding import bind
from ember.ops.embedding_bag import MAX, MEAN
from ember.runtime import dtypes as D
from ember.runtime import data_of, offset_of, shape_of, strides_of

from . import deferred, kernelkit, transfer

SOURCE = deferred.C_RECORD + r"""
__kernel void bag_of(__global long* o2b, __global const long* idx, __global const long* off,
                     const long M, const long B, const long V, const long io, const long is,
                     const long oo, const long os, const int code, __global long* rec) {
  const long i = get_global_id(0);
  if (i >= M) return;
  const long v = idx[io + i * is];
  if (v < 0 || v >= V) RECORD(rec, code, v, 0, V);
  long lo = 0, hi = B;  /* the last bag whose start is <= i */
  while (hi - lo > 1) {
    const long mid = (lo + hi) / 2;
    if (off[oo + mid * os] <= i) lo = mid; else hi = mid;
  }
  o2b[i] = lo;
}

__kernel void bag_reduce(__global T* out, __global long* maxi, __global long* bsize,
                         __global const T* w, __global const long* idx,
                         __global const long* off, __global const T* psw, const long M,
                         const long B, const long D, const long V, const int mode,
                         const int has_psw, const long pad, const int last,
                         const long wo, const long ws0, const long ws1, const long io,
                         const long is, const long oo, const long os, const long po,
                         const long ps) {
  const long g = get_global_id(0);
  if (g >= B * D) return;
  const long b = g / D, d = g % D;
  long start = off[oo + b * os];
  long end = (b + 1 < B || last) ? off[oo + (b + 1) * os] : M;
  start = clamp(start, (long)0, M); end = clamp(end, start, M);
  AT acc = 0;
  long count = 0, arg = -1;
  AT best = 0;
  for (long i = start; i < end; i++) {
    const long v = idx[io + i * is];
    if (v == pad || v < 0 || v >= V) continue;
    const AT x = (AT)w[wo + v * ws0 + d * ws1];
    if (mode == 2) {
      if (arg < 0 || x > best) { best = x; arg = v; }
    } else {
      acc += has_psw ? x * (AT)psw[po + i * ps] : x;
    }
    count++;
  }
  if (mode == 2) { out[g] = count ? (T)best : (T)0; maxi[g] = count ? arg : 0; }
  else if (mode == 1) out[g] = count ? (T)(acc / (AT)count) : (T)0;
  else out[g] = (T)acc;
  if (d == 0) bsize[b] = count;
}
"""
_KERNELS = {"bag_of": "bbbllllllli" + "b",
            "bag_reduce": "bbbbbbbllllii" + "li" + "lllllllll"}


def _long(backend, st, q, t):
    if t.dtype is D.int64:
        return t
    out = backend.new_tensor(st, shape_of(t), D.int64, t.device)
    return transfer.copy_into(backend, st, q, out, t)


def forward(backend, weight, indices, offsets, mode, psw, include_last_offset, padding_idx):
    st, q = backend.state_queue(weight.device)
    idx, off = _long(backend, st, q, indices), _long(backend, st, q, offsets)
    m, v, d = shape_of(idx)[0], shape_of(weight)[0], shape_of(weight)[1]
    b = max(shape_of(off)[0] - 1, 0) if include_last_offset else shape_of(off)[0]
    dev = weight.device
    out = backend.new_tensor(st, (b, d), weight.dtype, dev)
    o2b = backend.new_tensor(st, (m,), D.int64, dev)
    bsize = backend.new_tensor(st, (b,), D.int64, dev)
    maxi = backend.new_tensor(st, (b, d) if mode == MAX else (b,), D.int64, dev)
    ks = kernelkit.program(st, "embedding_bag", weight.dtype, SOURCE, _KERNELS)
    if m and b:
        kernelkit.launch(st, q, ks["bag_of"], m, data_of(o2b), data_of(idx),
                         data_of(off), m, b, v, offset_of(idx), strides_of(idx)[0], offset_of(off),
                         strides_of(off)[0], deferred.BOUNDS_RUNTIME,
                         deferred.slot(st, "embedding_bag", weight, indices, offsets))
    elif m:
        o2b.zero_()
    if mode != MAX:
        maxi.zero_()
    p = psw if psw is not None else weight
    pst = (offset_of(psw), strides_of(psw)[0]) if psw is not None else (0, 0)
    kernelkit.launch(st, q, ks["bag_reduce"], b * d, data_of(out), data_of(maxi),
                     data_of(bsize), data_of(weight), data_of(idx),
                     data_of(off), data_of(p), m, b, d, v, mode, int(psw is not None),
                     padding_idx, int(include_last_offset), offset_of(weight), *strides_of(weight),
                     offset_of(idx), strides_of(idx)[0], offset_of(off), strides_of(off)[0], *pst)
    if b and not d:
        bsize.zero_()
    return out, o2b, bsize, maxi


def backward(backend, grad, indices, offset2bag, bag_size, max_indices, num_weights, mode, psw,
             padding_idx):
    st, q = backend.state_queue(grad.device)
    d = shape_of(grad)[1]
    gw = backend.new_tensor(st, (num_weights, d), grad.dtype, grad.device)
    gw.zero_()
    if not gw.numel():
        return gw
    if mode == MAX:
        filled = bag_size.gt(0).unsqueeze(1)
        gw.scatter_add_(0, max_indices, grad * filled)
        return gw
    if not indices.numel():
        return gw
    rows = grad.index_select(0, offset2bag)
    if mode == MEAN:
        rows = rows / bag_size.clamp(min=1).index_select(0, offset2bag).unsqueeze(1)
    elif psw is not None:
        rows = rows * psw.unsqueeze(1)
    if padding_idx >= 0:
        rows = rows * indices.ne(padding_idx).unsqueeze(1)
    gw.index_add_(0, indices, rows.to(grad.dtype))
    return gw


TABLE = {"embedding_bag": forward, "embedding_bag_backward": backward}


def register(backend):
    bind(backend, TABLE)
