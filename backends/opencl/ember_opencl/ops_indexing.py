"""Indexing kernels (``ember.ops.indexing``): index, index_put_, gather, scatter, index_select,
index_add, masked_fill, masked_select, nonzero.

Every gather/scatter-like op is one of two kernels over an *iteration space* described by an
int64 metadata buffer, so a new shape or op reuses the compiled program of its dtype:

* ``take``: ``out[i] = x[a(i)]`` for a contiguous ``out`` (index, gather, index_select);
* ``put``: ``dst[a(L)] (=, +=, *=) src[b(L)]`` (index_put_, scatter, index_add).

Their ``*_rows`` twins give a work-item a whole row (the space's last dim), stepping along it,
where that saves each element decomposing its position: takes of many short rows, and puts
whose one serial dim is the row.

Each dim of the space has a size and a stride into ``x``/``dst``, into ``src`` and into the
index buffer; each of the K index tensors adds ``value * stride`` of the dim it indexes, after
the bounds check (and, for ``index``/``index_put_``, the wrap of negative values). So
``index_select`` is a space shaped like its result whose ``dim`` has x-stride 0 and index-stride
1; ``gather`` the index's shape; ``index`` the result shape, its broadcast index dims striding
the (stacked) index tensors only.

Accumulating writes are deterministic without atomics or a sort: the dims along which two
elements can hit the same destination (``dim`` for scatter/index_add, the index dims for
``index_put_(accumulate=True)``) are put last and walked *serially* by one work-item, the others
spread over work-items -- the CPU's ``np.add.at`` order, so results match it bit for bit.
Plain assignments run fully parallel (duplicate indices: some write wins, as in PyTorch).

Out-of-bounds indices are recorded on the device (``deferred``) and raise at the next
synchronization; the element is skipped. masked_select and nonzero count per chunk, read the
counts back (their output size depends on the data, as in PyTorch), then write in order.
"""
from __future__ import annotations

import math

import numpy as np

from ember.kit.binding import bind
from ember.runtime import dtypes as D
from ember.runtime import (broadcast_shapes, data_of, layout_of, offset_of, shape_of, storage_of,
                           strides_of)

from . import cltypes, codegen, deferred, progs, transfer
from .codegen import run
from .math_binary import WHERE
from .ops_shape import view

_HDR = 8   # meta: R, K, index offset, index k-stride, x offset, y offset, negative ok, unused
_CHUNK_MIN = 64
_MAX_CHUNKS = 1024

_C_LOCATE = r"""
/* x/dst, src and index addresses of position q over the space's first `dims` dims */
inline void position(__global const long* m, long q, const int dims, long* xa, long* ya,
                     long* ia) {
  const int R = (int)m[0];
  __global const long* s = m + 8;
  long x = m[4], y = m[5], i = m[2];
  for (int d = dims - 1; d >= 0; d--) {
    const long n = s[d], c = q % n;
    q /= n;
    x += c * s[R + d]; y += c * s[2 * R + d]; i += c * s[3 * R + d];
  }
  *xa = x; *ya = y; *ia = i;
}
/* the indexed dims' part of the x/dst address (reading the indices at ia); 0, recorded, on a
   bad index */
inline int add_indices(__global const long* m, __global const long* idx, const long ia,
                       long* xa, const int code, __global long* rec) {
  const int R = (int)m[0], K = (int)m[1];
  __global const long* kk = m + 8 + 4 * R;
  for (int k = 0; k < K; k++) {
    const long v = idx[ia + k * m[3]], size = kk[3 * k + 1];
    const long w = (v < 0 && m[6]) ? v + size : v;
    if (w < 0 || w >= size) { RECORD(rec, code, v, kk[3 * k + 2], size); return 0; }
    *xa += w * kk[3 * k];
  }
  return 1;
}
/* work-item p's row (the last dim, walked by one work-item): its x/dst, src and index
   addresses where it starts and their steps along that dim */
inline void row_start(__global const long* m, const long p, long* xb, long* yb, long* ib,
                      long* xs, long* ys, long* is) {
  const int R = (int)m[0];
  __global const long* s = m + 8;
  position(m, p, R - 1, xb, yb, ib);
  *xs = s[2 * R - 1]; *ys = s[3 * R - 1]; *is = s[4 * R - 1];
}
/* element L of the space: its x/dst and src addresses; 0 (recorded) on a bad index */
inline int locate(__global const long* m, __global const long* idx, long L, long* xa, long* ya,
                  const int code, __global long* rec) {
  long ia;
  position(m, L, (int)m[0], xa, ya, &ia);
  return add_indices(m, idx, ia, xa, code, rec);
}
"""


def _source(state, dt):
    c = cltypes.CTYPE[dt]
    if dt is D.bool_:  # numpy's add.at / multiply.at on bool: or / and
        ops = "#define ADD(a, b) ((a) | (b))\n#define MUL(a, b) ((a) & (b))\n" \
              "#define SCALE(v, s) (((v) && (s)) ? 1 : 0)"
    else:
        ops = "#define ADD(a, b) ((a) + (b))\n#define MUL(a, b) ((a) * (b))\n" \
              "#define SCALE(v, s) ((v) * (s))"
    return "\n".join([progs.header(state), f"typedef {c} T;", ops, deferred.C_RECORD,
                      progs.C_ADDR, _C_LOCATE, r"""
/* a put's write of v at out[xa]: mode 0 assigns, 1 adds alpha * v, 2 multiplies */
inline void store(__global T* out, const long xa, const T v, const int mode, const T alpha) {
  if (mode == 0) out[xa] = v;
  else if (mode == 1) out[xa] = ADD(out[xa], SCALE(v, alpha));
  else out[xa] = MUL(out[xa], v);
}
__kernel void take(__global T* out, __global const T* x, __global const long* idx,
                   __global const long* m, const long n, const int code, __global long* rec) {
  const long i = get_global_id(0);
  if (i >= n) return;
  long xa, ya;
  out[i] = locate(m, idx, i, &xa, &ya, code, rec) ? x[xa] : (T)0;
}
__kernel void put(__global T* out, __global const T* src, __global const long* idx,
                  __global const long* m, const long npar, const long nser, const int mode,
                  const T alpha, const int code, __global long* rec) {
  const long p = get_global_id(0);
  if (p >= npar) return;
  for (long s = 0; s < nser; s++) {
    long xa, ya;
    if (locate(m, idx, p * nser + s, &xa, &ya, code, rec)) store(out, xa, src[ya], mode, alpha);
  }
}
/* take/put with the last dim of the space walked by one work-item: its addresses step by
   that dim's strides, so only the other dims are decomposed (once per work-item, not once per
   element). Same elements, same order within a work-item as take/put. */
__kernel void take_rows(__global T* out, __global const T* x, __global const long* idx,
                        __global const long* m, const long rows, const long n, const int code,
                        __global long* rec) {
  const long p = get_global_id(0);
  if (p >= rows) return;
  long xb, yb, ib, xs, ys, is;
  row_start(m, p, &xb, &yb, &ib, &xs, &ys, &is);
  for (long j = 0; j < n; j++) {
    long xa = xb + j * xs;
    out[p * n + j] = add_indices(m, idx, ib + j * is, &xa, code, rec) ? x[xa] : (T)0;
  }
}
__kernel void put_rows(__global T* out, __global const T* src, __global const long* idx,
                       __global const long* m, const long npar, const long nser, const int mode,
                       const T alpha, const int code, __global long* rec) {
  const long p = get_global_id(0);
  if (p >= npar) return;
  long xb, yb, ib, xs, ys, is;
  row_start(m, p, &xb, &yb, &ib, &xs, &ys, &is);
  for (long j = 0; j < nser; j++) {
    long xa = xb + j * xs;
    if (add_indices(m, idx, ib + j * is, &xa, code, rec))
      store(out, xa, src[yb + j * ys], mode, alpha);
  }
}
/* operand 0 of the layout is tested (x for nonzero, the mask for masked_select) */
__kernel void count(__global const T* x, __global const long* m, const int R, const long n,
                    const long chunk, __global long* counts) {
  const long g = get_global_id(0), lo = g * chunk;
  if (lo >= n) return;
  const long hi = min(n, lo + chunk);
  long k = 0;
  for (long i = lo; i < hi; i++) k += x[ADDR(m, R, 0, i)] != 0;
  counts[g] = k;
}
__kernel void nz_write(__global const T* x, __global const long* m, const int R, const long n,
                       const long chunk, __global const long* offs, __global long* out,
                       __global const long* shape, const int nd) {
  const long g = get_global_id(0), lo = g * chunk;
  if (lo >= n) return;
  const long hi = min(n, lo + chunk);
  long o = offs[g];
  for (long i = lo; i < hi; i++) {
    if (x[ADDR(m, R, 0, i)] == 0) continue;
    long q = i;
    for (int d = nd - 1; d >= 0; d--) { out[o * nd + d] = q % shape[d]; q /= shape[d]; }
    o++;
  }
}
__kernel void ms_write(__global const uchar* mask, __global const T* x, __global const long* m,
                       const int R, const long n, const long chunk, __global const long* offs,
                       __global T* out) {
  const long g = get_global_id(0), lo = g * chunk;
  if (lo >= n) return;
  const long hi = min(n, lo + chunk);
  long o = offs[g];
  for (long i = lo; i < hi; i++)
    if (mask[ADDR(m, R, 0, i)]) out[o++] = x[ADDR(m, R, 1, i)];
}
"""])


def _kernels(state, dt):
    L, I = np.int64, np.int32
    return progs.program(state, ("indexing", dt), lambda: _source(state, dt), {
        "take": [None, None, None, None, L, I, None],
        "put": [None, None, None, None, L, L, I, cltypes.np_type(dt), I, None],
        "take_rows": [None, None, None, None, L, L, I, None],
        "put_rows": [None, None, None, None, L, L, I, cltypes.np_type(dt), I, None],
        "count": [None, None, I, L, L, None],
        "nz_write": [None, None, I, L, L, None, None, None, I],
        "ms_write": [None, None, None, I, L, L, None, None],
    })


class Space:
    """An iteration space under construction: dims (size, x stride, src stride, index stride,
    serial) and index entries (x stride, size, dim)."""

    def __init__(self, x_offset=0, y_offset=0, idx_offset=0, k_stride=0, negative=False):
        self.dims = []
        self.keys = []
        self.head = [x_offset, y_offset, idx_offset, k_stride, int(negative)]

    def dim(self, size, xs=0, ys=0, is_=0, serial=False):
        self.dims.append((size, xs, ys, is_, serial))

    def key(self, xs, size, dim):
        self.keys.append((xs, size, dim))

    def build(self, state):
        """(metadata buffer, parallel count, serial count, how many dims are serial, size of
        the last dim: what a work-item of the *_rows kernels walks; 0 when no dim is left)."""
        dims = [d for d in self.dims if d[0] != 1]
        dims = [d for d in dims if not d[4]] + [d for d in dims if d[4]]
        npar = math.prod(d[0] for d in dims if not d[4])
        nser = math.prod(d[0] for d in dims if d[4])
        last = dims[-1][0] if dims else 0
        n_serial = sum(1 for d in dims if d[4])
        R = len(dims)
        xo, yo, io, ks, neg = self.head
        meta = [R, len(self.keys), io, ks, xo, yo, neg, 0]
        for j in range(4):
            meta += [d[j] for d in dims]
        for k in self.keys:
            meta += list(k)
        key = ("ix", tuple(meta))
        buf = state.meta.get(key)
        if buf is None:
            buf = codegen.remember(state, key, progs.buffer_of(state, meta))
        return buf, npar, nser, n_serial, last


def _long_index(be, st, q, t):
    if t.dtype is D.int64:
        return t
    return transfer.copy_into(be, st, q, be.new_tensor(st, shape_of(t), D.int64, t.device), t)


def _clone(be, st, q, x):
    return transfer.copy_into(be, st, q, be.new_tensor(st, shape_of(x), x.dtype, x.device), x)


# a work-item per row of the space (its last dim walked in a loop) when rows are this short and
# at least this many: the per-element index arithmetic (a division per dim) is most of a take
ROW_MAX, ROWS_MIN = 256, 64


def _take(st, q, out, x, idx, space, code, op):
    n = out.numel()
    if n == 0:
        return out
    buf, _, _, _, last = space.build(st)
    knls = _kernels(st, x.dtype)
    if 1 < last <= ROW_MAX and n // last >= ROWS_MIN:
        progs.launch(st, q, knls["take_rows"], n // last, data_of(out), data_of(x),
                     data_of(idx), buf, n // last, last, code, deferred.slot(st, op, x, idx))
        return out
    progs.launch(st, q, knls["take"], n, data_of(out),
                 data_of(x), data_of(idx), buf, n, code,
                 deferred.slot(st, op, x, idx))
    return out


def _put(st, q, dst, src, idx, space, mode, code, op, alpha=1):
    buf, npar, nser, n_serial, _ = space.build(st)
    if npar * nser == 0:
        return dst
    # one serial dim (index_add, scatter, accumulating index_put_ with one index): it is the
    # last, and put_rows steps along it instead of decomposing every element's position
    name = "put_rows" if n_serial == 1 else "put"
    progs.launch(st, q, _kernels(st, dst.dtype)[name], npar, data_of(dst),
                 data_of(src), data_of(idx), buf, npar, nser, mode,
                 cltypes.pack_scalar(alpha, dst.dtype), code,
                 deferred.slot(st, op, dst, idx, src))
    return dst


def _no_room(x, dims, index, code, op):
    """Indices into a dim of size 0 are out of bounds whatever their values: raise now,
    on the host, rather than after a kernel has run."""
    if index is None or index.numel() == 0:
        return
    for d in dims:
        if (shape_of(x)[d] if x.ndim else 1) == 0:
            exc, text = deferred.MESSAGES[code]
            first = int(index.reshape(-1)[0].item())
            raise exc(f"{op}: " + text.format(v=first, d=d, s=0))


def _advanced(be, st, q, x, indices, y=None, serial=False):
    """(space, index buffer tensor, result shape) of ``x[indices]``; ``y`` (values of the
    result's shape) gives the src strides for index_put_; ``serial``: walk the index dims
    in one work-item (accumulation)."""
    dims = [d for d, t in enumerate(indices) if t is not None]
    tensors = [indices[d] for d in dims]
    B = broadcast_shapes(*[shape_of(t) for t in tensors])
    if len(tensors) == 1:
        idx = _long_index(be, st, q, tensors[0])
        bstride = (0,) * (len(B) - idx.ndim) + tuple(
            0 if n == 1 else s for n, s in zip(shape_of(idx), strides_of(idx)))
        io, kst = offset_of(idx), 0
    else:  # one (K, *B) buffer: the kernel reads every index at the same offsets
        idx = be.new_tensor(st, (len(tensors),) + B, D.int64, x.device)
        for k, t in enumerate(tensors):
            part = view(idx, B, strides_of(idx)[1:], k * strides_of(idx)[0])
            pad = len(B) - t.ndim
            t_shape, t_strides, t_offset = layout_of(t)
            bst = (0,) * pad + tuple(0 if n == 1 else s for n, s in zip(t_shape, t_strides))
            if part.numel():
                transfer.copy_into(be, st, q, part, view(t, B, bst, t_offset))
        bstride, io, kst = strides_of(idx)[1:], 0, strides_of(idx)[0] if idx.ndim else 0
    space = Space(offset_of(x), 0 if y is None else offset_of(y), io, kst, negative=True)
    adjacent = dims == list(range(dims[0], dims[-1] + 1))
    rest = [d for d in range(x.ndim) if indices[d] is None]
    before = [d for d in rest if d < dims[0]] if adjacent else []
    after = [d for d in rest if d not in before]
    order = [("x", d) for d in before] + [("b", j) for j in range(len(B))] + \
        [("x", d) for d in after]
    shape = []
    for pos, (kind, d) in enumerate(order):
        ys = 0 if y is None else strides_of(y)[pos]
        if kind == "x":
            shape.append(shape_of(x)[d])
            space.dim(shape_of(x)[d], strides_of(x)[d], ys)
        else:
            shape.append(B[d])
            space.dim(B[d], 0, ys, bstride[d], serial)
    for d in dims:
        space.key(strides_of(x)[d], shape_of(x)[d], d)
    return space, idx, tuple(shape)


def index(be, x, indices):
    for d, t in enumerate(indices):
        _no_room(x, (d,), t, deferred.BOUNDS_INDEX, "index")
    st, q = be.state_queue(x.device)
    space, idx, shape = _advanced(be, st, q, x, indices)
    out = be.new_tensor(st, shape, x.dtype, x.device)
    return _take(st, q, out, x, idx, space, deferred.BOUNDS_INDEX, "index")


def index_put_(be, x, indices, values, accumulate):
    for d, t in enumerate(indices):
        _no_room(x, (d,), t, deferred.BOUNDS_INDEX, "index_put_")
    st, q = be.state_queue(x.device)
    if storage_of(values) is storage_of(x):
        values = _clone(be, st, q, values)  # the right-hand side is read before any write
    space, idx, _ = _advanced(be, st, q, x, indices, values, serial=accumulate)
    return _put(st, q, x, values, idx, space, 1 if accumulate else 0, deferred.BOUNDS_INDEX,
               "index_put_")


def gather(be, x, dim, index):
    _no_room(x, (dim,), index, deferred.BOUNDS_RUNTIME, "gather")
    st, q = be.state_queue(x.device)
    index = _long_index(be, st, q, index)
    out = be.new_tensor(st, shape_of(index), x.dtype, x.device)
    if x.ndim == 0 or index.ndim == 0:  # x seen flat, as the CPU kernel does
        space = Space(offset_of(x), 0, offset_of(index))
        for n, s in zip(shape_of(index), strides_of(index)):
            space.dim(n, 0, 0, s)
        space.key(strides_of(x)[0] if x.ndim else 0, x.numel(), dim)
    else:
        space = Space(offset_of(x), 0, offset_of(index))
        for d, (n, s) in enumerate(zip(shape_of(index), strides_of(index))):
            space.dim(n, 0 if d == dim else strides_of(x)[d], 0, s)
        space.key(strides_of(x)[dim], shape_of(x)[dim], dim)
    return _take(st, q, out, x, index, space, deferred.BOUNDS_RUNTIME, "gather")


def index_select(be, x, dim, index):
    _no_room(x, (dim,), index, deferred.BOUNDS_SELECT, "index_select")
    st, q = be.state_queue(x.device)
    index = _long_index(be, st, q, index)
    if x.ndim == 0:
        space = Space(offset_of(x), 0, offset_of(index))
        space.key(0, 1, 0)
        return _take(st, q, be.new_tensor(st, (), x.dtype, x.device), x, index, space,
                    deferred.BOUNDS_SELECT, "index_select")
    n = shape_of(index)[0]
    shape = shape_of(x)[:dim] + (n,) + shape_of(x)[dim + 1:]
    space = Space(offset_of(x), 0, offset_of(index))
    for d, size in enumerate(shape):
        if d == dim:
            space.dim(size, 0, 0, strides_of(index)[0])
        else:
            space.dim(size, strides_of(x)[d])
    space.key(strides_of(x)[dim], shape_of(x)[dim], dim)
    return _take(st, q, be.new_tensor(st, shape, x.dtype, x.device), x, index, space,
                deferred.BOUNDS_SELECT, "index_select")


def scatter(be, x, dim, index, src, reduce):
    _no_room(x, (dim,), index, deferred.BOUNDS_RUNTIME,
            {None: "scatter", "add": "scatter_add"}.get(reduce, "scatter"))
    st, q = be.state_queue(x.device)
    index = _long_index(be, st, q, index)
    out = _clone(be, st, q, x)
    mode = {None: 0, "add": 1, "multiply": 2}[reduce]
    serial = mode != 0
    space = Space(0, offset_of(src), offset_of(index))
    if out.ndim == 0 or index.ndim == 0:  # flat view of out, the first elements of src
        if src.ndim > 1:
            src = _clone(be, st, q, src)
            space = Space(0, 0, offset_of(index))
        flat = 0 if src.ndim == 0 else strides_of(src)[0] if src.ndim == 1 else 1
        for n, s in zip(shape_of(index), strides_of(index)):
            space.dim(n, 0, flat, s, serial)
        space.key(strides_of(out)[0] if out.ndim else 0, out.numel(), dim)
    else:
        for d, (n, s) in enumerate(zip(shape_of(index), strides_of(index))):
            ys = strides_of(src)[d] if src.ndim else 0
            space.dim(n, 0 if d == dim else strides_of(out)[d], ys, s, serial and d == dim)
        space.key(strides_of(out)[dim], shape_of(out)[dim], dim)
    return _put(st, q, out, src, index, space, mode, deferred.BOUNDS_RUNTIME,
               {None: "scatter", "add": "scatter_add"}.get(reduce,
                                                           f"scatter(reduce={reduce!r})"))


def index_add(be, x, dim, index, source, alpha):
    _no_room(x, (dim,), index, deferred.BOUNDS_RUNTIME, "index_add")
    st, q = be.state_queue(x.device)
    index = _long_index(be, st, q, index)
    out = _clone(be, st, q, x)
    oshape, ostride = (shape_of(out), strides_of(out)) if out.ndim else ((1,), (0,))
    sstride = strides_of(source) if source.ndim else (0,)
    space = Space(0, offset_of(source), offset_of(index))
    for d in range(len(oshape)):
        if d == dim:
            space.dim(shape_of(index)[0], 0, sstride[d], strides_of(index)[0], serial=True)
        else:
            space.dim(oshape[d], ostride[d], sstride[d])
    space.key(ostride[dim], oshape[dim], dim)
    return _put(st, q, out, source, index, space, 1, deferred.BOUNDS_RUNTIME, "index_add",
               alpha)


def masked_fill(be, x, mask, value):
    st, q = be.state_queue(x.device)
    dt = x.dtype
    out = be.new_tensor(st, broadcast_shapes(shape_of(x), shape_of(mask)), dt, x.device)
    return run(st, q, WHERE, out, (mask, value, x), (D.bool_, dt, dt), dt, dt)


def _chunks(n):
    chunk = max(_CHUNK_MIN, -(-n // _MAX_CHUNKS))
    return chunk, -(-n // chunk)


def _counted(be, st, q, tested, layout_tensors, shape):
    """(chunk, groups, offsets buffer, total) of the nonzeros of ``tested`` over
    ``shape``; reads the per-chunk counts back (the output size depends on them)."""
    import pyopencl as cl
    n = math.prod(shape)
    chunk, G = _chunks(n)
    rank, mbuf = progs.layout(st, shape, layout_tensors)
    counts = be.new_tensor(st, (G,), D.int64, tested.device)
    progs.launch(st, q, _kernels(st, tested.dtype)["count"], G, data_of(tested), mbuf,
                 rank, n, chunk, data_of(counts))
    host = np.empty(G, np.int64)
    cl.enqueue_copy(q, host, data_of(counts), is_blocking=True)
    deferred.check(st, q)  # the host waited: report what earlier kernels found
    offs = np.concatenate([[0], np.cumsum(host)[:-1]]).astype(np.int64)
    return chunk, G, rank, mbuf, progs.buffer_of(st, offs), int(host.sum())


def nonzero(be, x):
    st, q = be.state_queue(x.device)
    n = x.numel()
    if n == 0:
        return be.new_tensor(st, (0, x.ndim), D.int64, x.device)
    chunk, G, rank, mbuf, offs, total = _counted(be, st, q, x, [x], shape_of(x))
    out = be.new_tensor(st, (total, x.ndim), D.int64, x.device)
    if total and x.ndim:
        shape = progs.buffer_of(st, shape_of(x))
        progs.launch(st, q, _kernels(st, x.dtype)["nz_write"], G, data_of(x), mbuf,
                     rank, n, chunk, offs, data_of(out), shape, x.ndim)
    return out


def masked_select(be, x, mask):
    st, q = be.state_queue(x.device)
    shape = broadcast_shapes(shape_of(x), shape_of(mask))
    n = math.prod(shape)
    if n == 0:
        return be.new_tensor(st, (0,), x.dtype, x.device)
    chunk, G, rank, mbuf, offs, total = _counted(be, st, q, mask, [mask, x], shape)
    out = be.new_tensor(st, (total,), x.dtype, x.device)
    if total:
        progs.launch(st, q, _kernels(st, x.dtype)["ms_write"], G, data_of(mask),
                     data_of(x), mbuf, rank, n, chunk, offs, data_of(out))
    return out


TABLE = {
    "index": index, "index_put_": index_put_, "gather": gather, "scatter": scatter,
    "index_select": index_select, "index_add": index_add, "masked_fill": masked_fill,
    "masked_fill_scalar": masked_fill, "masked_select": masked_select, "nonzero": nonzero,
}


def register(backend):
    bind(backend, TABLE)
