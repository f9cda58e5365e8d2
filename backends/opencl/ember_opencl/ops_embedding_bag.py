"""Embedding-bag kernels (``ember.ops.embedding_bag``).

* ``bag_of``: a work-item per index finds its bag (binary search in the offsets) and checks the
  index is a row of the weight (an index out of range is recorded, ``deferred``, and skipped);
* ``bag_reduce``: a work-item per (bag, feature) walks the bag's indices in order: sum (times
  the per-sample weights), mean, or max with the first winning row; it also counts the bag;
* the backward adds each index's scaled gradient row into its weight row with the indexing
  kernels' deterministic ``index_add_`` (max: ``scatter_add_`` to the winning rows).
"""
from __future__ import annotations

from functools import partial

from ember.ops.embedding_bag import MAX, MEAN
from ember.runtime import dtypes as D

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
    return transfer.copy_into(backend, st, q, backend._new(st, t._shape, D.int64, t.device), t)


def forward(backend, weight, indices, offsets, mode, psw, include_last_offset, padding_idx):
    st, q = backend._sq(weight.device)
    idx, off = _long(backend, st, q, indices), _long(backend, st, q, offsets)
    m, v, d = idx._shape[0], weight._shape[0], weight._shape[1]
    b = max(off._shape[0] - 1, 0) if include_last_offset else off._shape[0]
    dev = weight.device
    out = backend._new(st, (b, d), weight.dtype, dev)
    o2b = backend._new(st, (m,), D.int64, dev)
    bsize = backend._new(st, (b,), D.int64, dev)
    maxi = backend._new(st, (b, d) if mode == MAX else (b,), D.int64, dev)
    ks = kernelkit.program(st, "embedding_bag", weight.dtype, SOURCE, _KERNELS)
    if m and b:
        kernelkit.launch(st, q, ks["bag_of"], m, o2b._storage.data, idx._storage.data,
                         off._storage.data, m, b, v, idx._offset, idx._stride[0], off._offset,
                         off._stride[0], deferred.BOUNDS_RUNTIME,
                         deferred.slot(st, "embedding_bag", weight, indices, offsets))
    elif m:
        o2b.zero_()
    if mode != MAX:
        maxi.zero_()
    p = psw if psw is not None else weight
    pst = (psw._offset, psw._stride[0]) if psw is not None else (0, 0)
    kernelkit.launch(st, q, ks["bag_reduce"], b * d, out._storage.data, maxi._storage.data,
                     bsize._storage.data, weight._storage.data, idx._storage.data,
                     off._storage.data, p._storage.data, m, b, d, v, mode, int(psw is not None),
                     padding_idx, int(include_last_offset), weight._offset, *weight._stride,
                     idx._offset, idx._stride[0], off._offset, off._stride[0], *pst)
    if b and not d:
        bsize.zero_()
    return out, o2b, bsize, maxi


def backward(backend, grad, indices, offset2bag, bag_size, max_indices, num_weights, mode, psw,
             padding_idx):
    st, q = backend._sq(grad.device)
    d = grad._shape[1]
    gw = backend._new(st, (num_weights, d), grad.dtype, grad.device)
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


def register(backend):
    backend.kernels.register("embedding_bag", partial(forward, backend))
    backend.kernels.register("embedding_bag_backward", partial(backward, backend))
