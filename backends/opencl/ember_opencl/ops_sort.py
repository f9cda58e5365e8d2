"""sort, mode and unique: a bitonic sorting network over (key, index) pairs.

Each line along ``dim`` is copied into a scratch row of ``P`` (the next power of two) keys and
their positions and the rows are sorted by the network; a last kernel writes values and
indices in the output's layout. Stages whose compare distance fits a chunk of ``C = 2 LS``
elements run in local memory, a work-group per chunk, many stages per launch (``sort_local``);
only the longer distances of rows longer than ``C`` take a launch per stage over global memory
(``sort_step``, a work-item per compare-exchange over all rows at once). Comparing the
position on equal keys makes the network stable, and the padding (positions >= N) sorts after
everything. Order is PyTorch's:
NaN above every number (last ascending, first descending); -0.0 == 0.0 keeps input order.

``mode`` scans each sorted row for its longest run (the smallest value among equally long runs,
reported at its last position in the input, like the CPU kernel; NaN != NaN). ``unique``
sorts the flattened tensor (or the slices along ``dim``, compared lexicographically by a
variant of the network), flags the first of each run, numbers the runs with ``ops_scan``'s
cumsum and scatters values, inverse and counts; reading back the number of runs is the one
wait, as in PyTorch (the output size depends on the data).
"""
from __future__ import annotations

import math

import numpy as np

from ember.kit.binding import bind
from ember.runtime import dtypes as D
from ember.runtime import contiguous_strides, data_of, layout_of, offset_of, shape_of

from . import lines as LN
from . import progs
from .ops_scan import scan


def _less(dt):
    """C expression: key a orders before key b (NaN largest)."""
    if dt.category == D.FLOATING:
        return "(!isnan(a) && (isnan(b) || a < b))"
    return "(a < b)"


def source(state, key):
    dt, kr, ls = key[1:]
    i64 = np.int64
    L = [LN.header(state, T=dt),
         f"inline int less(const T a, const T b) {{ return {_less(dt)}; }}",
         # x before y in the sorted row; descending flips the keys, never the tie order
         """inline int before(const T kx, const long ix, const T ky, const long iy,
                     const long N, const int desc) {
  if (ix >= N || iy >= N) return ix < iy;
  const int lt = desc ? less(ky, kx) : less(kx, ky);
  const int gt = desc ? less(kx, ky) : less(ky, kx);
  return lt || (!gt && ix < iy);
}""",
         f"""__kernel void sort_init(__global T* keys, __global long* idx, __global const T* in,
    __global const long* meta, const long M, const long N, const long P) {{
  const long g = get_global_id(0);
  if (g >= M * P) return;
  const long m = g / P, j = g % P;
  {LN.c_bases(kr, 3)}
  if (j < N) keys[g] = in[b2 + j * l2];
  idx[g] = j;
}}""",
         """__kernel void sort_step(__global T* keys, __global long* idx, const long M,
    const long N, const long P, const long k, const long jj, const int desc) {
  const long g = get_global_id(0), H = P / 2;
  if (g >= M * H) return;
  const long m = g / H, t = g % H, low = t & (jj - 1);
  const long i = m * P + (t - low) * 2 + low, o = i + jj;
  const T ka = keys[i], kb = keys[o];
  const long ia = idx[i], ib = idx[o];
  const int up = ((i - m * P) & k) == 0;
  if (up ? before(kb, ib, ka, ia, N, desc) : before(ka, ia, kb, ib, N, desc)) {
    keys[i] = kb; keys[o] = ka; idx[i] = ib; idx[o] = ia;
  }
}""",
         f"""#define LS {ls}
__kernel void sort_local(__global T* keys, __global long* idx, const long M, const long N,
    const long P, const long CP, const long k0, const long k1, const long j0, const int desc) {{
  __local T lk[2 * LS];
  __local long li[2 * LS];
  const int lid = get_local_id(0);
  const long chunks = P / CP, m = get_group_id(0) / chunks, c = get_group_id(0) % chunks;
  const long base = m * P + c * CP;
  for (long e = lid; e < CP; e += LS) {{ lk[e] = keys[base + e]; li[e] = idx[base + e]; }}
  barrier(CLK_LOCAL_MEM_FENCE);
  for (long k = k0; k <= k1; k <<= 1) {{
    for (long jj = min(j0, k / 2); jj >= 1; jj >>= 1) {{
      if (lid < CP / 2) {{
        const long low = lid & (jj - 1), i = (lid - low) * 2 + low, o = i + jj;
        const T ka = lk[i], kb = lk[o];
        const long ia = li[i], ib = li[o];
        const int up = ((c * CP + i) & k) == 0;
        if (up ? before(kb, ib, ka, ia, N, desc) : before(ka, ia, kb, ib, N, desc)) {{
          lk[i] = kb; lk[o] = ka; li[i] = ib; li[o] = ia;
        }}
      }}
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
  }}
  for (long e = lid; e < CP; e += LS) {{ keys[base + e] = lk[e]; idx[base + e] = li[e]; }}
}}
__kernel void sort_store(__global T* vout, __global long* iout, __global const T* keys,
    __global const long* idx, __global const long* meta, const long M, const long N,
    const long P) {{
  const long g = get_global_id(0);
  if (g >= M * N) return;
  const long m = g / N, j = g % N;
  {LN.c_bases(kr, 2)}
  vout[b0 + j * l0] = keys[m * P + j];
  iout[b1 + j * l1] = idx[m * P + j];
}}""",
         f"""__kernel void mode_runs(__global T* vout, __global long* iout, __global const T* keys,
    __global const long* idx, __global const long* meta, const long M, const long N,
    const long P) {{
  const long m = get_global_id(0);
  if (m >= M) return;
  {LN.c_bases(kr, 2)}
  __global const T* s = keys + m * P;
  long best = 0, best_len = 0, start = 0;
  for (long j = 0; j < N; ++j) {{
    if (j + 1 == N || s[j + 1] != s[j]) {{
      if (j - start + 1 > best_len) {{ best_len = j - start + 1; best = j; }}
      start = j + 1;
    }}
  }}
  vout[b0] = s[best];
  iout[b1] = idx[m * P + best];
}}""",
         # unique: run starts and their numbering (a 1-based inclusive cumsum of the flags)
         """__kernel void uniq_flags(__global long* flags, __global const T* keys, const long N) {
  const long j = get_global_id(0);
  if (j < N) flags[j] = (j == 0 || keys[j] != keys[j - 1]) ? 1 : 0;
}""",
         """__kernel void uniq_scatter(__global T* values, __global long* inverse,
    __global long* starts, __global const T* keys, __global const long* idx,
    __global const long* flags, __global const long* group, const long N, const long W) {
  const long j = get_global_id(0);
  if (j >= N) return;
  const long u = group[j] - 1;
  inverse[idx[j]] = u;
  if (flags[j]) {
    starts[u] = j;
    if (W == 0) values[u] = keys[j];
  }
  if (j == N - 1) starts[u + 1] = N;
}""",
         """__kernel void uniq_counts(__global long* counts, __global const long* starts,
    const long U) {
  const long u = get_global_id(0);
  if (u < U) counts[u] = starts[u + 1] - starts[u];
}""",
         # unique(dim): rows of a contiguous (N, W) matrix, compared lexicographically
         """inline int row_cmp(__global const T* X, const long W, const long a, const long b) {
  for (long c = 0; c < W; ++c) {
    const T x = X[a * W + c], y = X[b * W + c];
    if (less(x, y)) return -1;
    if (less(y, x)) return 1;
  }
  return 0;
}
__kernel void rows_step(__global long* idx, __global const T* X, const long W, const long N,
    const long P, const long k, const long jj) {
  const long t = get_global_id(0);
  if (t >= P / 2) return;
  const long low = t & (jj - 1), i = (t - low) * 2 + low, o = i + jj;
  const long ia = idx[i], ib = idx[o];
  int swap;
  if (ia >= N || ib >= N) swap = ia > ib;
  else { const int c = row_cmp(X, W, ia, ib); swap = c > 0 || (c == 0 && ia > ib); }
  if ((i & k) != 0) swap = !swap && ia != ib;
  if (swap) { idx[i] = ib; idx[o] = ia; }
}
__kernel void rows_flags(__global long* flags, __global const long* idx,
    __global const T* X, const long W, const long N) {
  const long j = get_global_id(0);
  if (j >= N) return;
  int differ = j == 0;
  for (long c = 0; !differ && c < W; ++c)
    differ = X[idx[j] * W + c] != X[idx[j - 1] * W + c];
  flags[j] = differ;
}
__kernel void rows_take(__global T* values, __global const T* X, __global const long* idx,
    __global const long* starts, const long U, const long W) {
  const long g = get_global_id(0);
  if (g >= U * W) return;
  const long u = g / W, c = g % W;
  values[g] = X[idx[starts[u]] * W + c];
}
__kernel void rows_iota(__global long* idx, const long P) {
  const long j = get_global_id(0);
  if (j < P) idx[j] = j;
}"""]
    types = {
        "sort_init": [None, None, None, None, i64, i64, i64],
        "sort_step": [None, None, i64, i64, i64, i64, i64, np.int32],
        "sort_local": [None, None] + [i64] * 7 + [np.int32],
        "sort_store": [None] * 5 + [i64] * 3, "mode_runs": [None] * 5 + [i64] * 3,
        "uniq_flags": [None, None, i64], "uniq_scatter": [None] * 7 + [i64, i64],
        "uniq_counts": [None, None, i64], "rows_step": [None, None] + [i64] * 5,
        "rows_flags": [None, None, None, i64, i64], "rows_iota": [None, i64],
        "rows_take": [None] * 4 + [i64, i64]}
    return "\n".join(L), types


def _kernels(st, dt, kr):
    key = ("sort", dt, kr, LN.local_size(st))
    knls = st.kernels.get(key)
    if knls is None:
        src, types = source(st, key)
        knls = progs.program(st, key, lambda: src, types)
    return knls


def _go(st, q, knl, n, *args):
    LN.launch(st, q, knl, (LN.round_up(n, st.local_size),), st.local_sizes, *args)


def _pow2(n):
    return 1 << max(0, (n - 1).bit_length())


def _network(st, q, knls, keys, idx, M, N, P, desc):
    ls = LN.local_size(st)
    cp = min(P, 2 * ls)

    def local(k0, k1, j0):
        LN.launch(st, q, knls["sort_local"], (M * (P // cp) * ls,), (ls,), keys, idx, M, N, P,
                  cp, k0, k1, j0, desc)
    local(2, cp, cp)  # every chunk sorted (alternating directions, as the network wants)
    k = 2 * cp
    while k <= P:
        jj = k // 2
        while jj >= cp:
            _go(st, q, knls["sort_step"], M * P // 2, keys, idx, M, N, P, k, jj, desc)
            jj //= 2
        local(k, k, cp // 2)
        k *= 2


def _sorted_rows(backend, st, q, x, dim, desc, layouts):
    """Sorted (keys, idx) scratch buffers of x's lines and (knls, kr, M, N, P, meta);
    ``layouts`` are the two outputs' (``layout_of``)."""
    kr, M, N, mbuf = LN.meta(st, dim, layouts + (layout_of(x),))
    P = _pow2(N)
    knls = _kernels(st, x.dtype, kr)
    keys = backend.new_tensor(st, (M * P,), x.dtype, x.device)
    idx = backend.new_tensor(st, (M * P,), D.int64, x.device)
    if M * N:
        _go(st, q, knls["sort_init"], M * P, data_of(keys), data_of(idx),
            data_of(x), mbuf, M, N, P)
        _network(st, q, knls, data_of(keys), data_of(idx), M, N, P, int(desc))
    return keys, idx, (knls, kr, M, N, P)


def _contiguous(shape):
    """The layout of a contiguous tensor of ``shape`` (an output seen with ``dim`` kept)."""
    return shape, contiguous_strides(shape), 0


def sort(backend, x, dim, descending, stable):
    st, q = backend.state_queue(x.device)
    values = backend.new_tensor(st, shape_of(x), x.dtype, x.device)
    indices = backend.new_tensor(st, shape_of(x), D.int64, x.device)
    if x.numel() == 0:
        return values, indices
    layouts = (layout_of(values), layout_of(indices))
    keys, idx, (knls, kr, M, N, P) = _sorted_rows(backend, st, q, x, dim, descending, layouts)
    mbuf = LN.meta(st, dim, layouts + (layout_of(x),))[3]
    _go(st, q, knls["sort_store"], M * N, data_of(values), data_of(indices),
        data_of(keys), data_of(idx), mbuf, M, N, P)
    return values, indices


def mode(backend, x, dim):
    st, q = backend.state_queue(x.device)
    shape = tuple(s for d, s in enumerate(shape_of(x)) if d != dim)
    values = backend.new_tensor(st, shape, x.dtype, x.device)
    indices = backend.new_tensor(st, shape, D.int64, x.device)
    if values.numel() == 0 or x.numel() == 0:
        return values, indices
    kept = _contiguous(tuple(1 if d == dim else s for d, s in enumerate(shape_of(x))))
    keys, idx, (knls, kr, M, N, P) = _sorted_rows(backend, st, q, x, dim, False, (kept, kept))
    mbuf = LN.meta(st, dim, (kept, kept, layout_of(x)))[3]
    _go(st, q, knls["mode_runs"], M, data_of(values), data_of(indices),
        data_of(keys), data_of(idx), mbuf, M, N, P)
    return values, indices


def _read_long(q, t, pos):
    import pyopencl as cl
    h = np.zeros(1, np.int64)
    cl.enqueue_copy(q, h, data_of(t), src_offset=pos * 8, is_blocking=True)
    return int(h[0])


def unique(backend, x, dim):
    st, q = backend.state_queue(x.device)
    if dim is None:
        flat = x if x.ndim == 1 else x.reshape(-1)
        N = flat.numel()
        values_shape, inv_shape, W = lambda U: (U,), shape_of(x), 0
    else:
        moved = x.movedim(dim, 0)
        rest = shape_of(moved)[1:]
        N, W = shape_of(moved)[0], math.prod(rest)
        flat = moved.reshape(N, W)
        flat = flat.contiguous()
        if offset_of(flat):  # the row kernels read from element 0 (a contiguous clone does)
            flat = flat.clone()
        values_shape, inv_shape = (lambda U: (U,) + rest), (N,)
    inverse = backend.new_tensor(st, inv_shape, D.int64, x.device)
    if N == 0:
        empty = backend.new_tensor(st, values_shape(0), x.dtype, x.device)
        return _back(empty, dim), inverse, backend.new_tensor(st, (0,), D.int64, x.device)
    if dim is None:
        flat_layout = layout_of(flat)
        keys, idx, (knls, *_) = _sorted_rows(backend, st, q, flat, 0, False,
                                             (flat_layout, flat_layout))
        flags = backend.new_tensor(st, (N,), D.int64, x.device)
        _go(st, q, knls["uniq_flags"], N, data_of(flags), data_of(keys), N)
    else:
        knls = _kernels(st, x.dtype, 0)
        P = _pow2(N)
        idx = backend.new_tensor(st, (P,), D.int64, x.device)
        keys = flat
        _go(st, q, knls["rows_iota"], P, data_of(idx), P)
        k = 2
        while k <= P:
            jj = k // 2
            while jj >= 1:
                _go(st, q, knls["rows_step"], P // 2, data_of(idx), data_of(flat),
                    W, N, P, k, jj)
                jj //= 2
            k *= 2
        flags = backend.new_tensor(st, (N,), D.int64, x.device)
        _go(st, q, knls["rows_flags"], N, data_of(flags), data_of(idx),
            data_of(flat), W, N)
    group = scan(backend, "cumsum", flags, 0, D.int64)
    U = _read_long(q, group, N - 1)
    values = backend.new_tensor(st, values_shape(U), x.dtype, x.device)
    starts = backend.new_tensor(st, (U + 1,), D.int64, x.device)
    counts = backend.new_tensor(st, (U,), D.int64, x.device)
    _go(st, q, knls["uniq_scatter"], N, data_of(values), data_of(inverse),
        data_of(starts), data_of(keys), data_of(idx), data_of(flags),
        data_of(group), N, W)
    _go(st, q, knls["uniq_counts"], U, data_of(counts), data_of(starts), U)
    if dim is not None and U:
        _go(st, q, knls["rows_take"], U * W, data_of(values), data_of(flat),
            data_of(idx), data_of(starts), U, W)
    return _back(values, dim), inverse, counts


def _back(values, dim):
    if dim is None:
        return values
    return values.movedim(0, dim).contiguous()


TABLE = {"sort": sort, "mode": mode, "unique": unique}


def register(backend):
    bind(backend, TABLE)
