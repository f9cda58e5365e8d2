"""Fused scaled dot-product attention: flash-attention kernels (tiled, online softmax) for the
forward and the backward, so no L x S matrix is ever in device memory.

Calling convention: ``ember.ops.attention`` (query (B, Hq, L, E), key/value (B, Hkv, S, E|Ev)
with any strides, query head h reading key/value head h // (Hq / Hkv), an optional (B, Hq, L,
S) bool or float mask view, causal masks top-left aligned).

* forward (``attn_fwd``): a work-group per block of ``BQ`` query rows of one (batch, head), a
  work-item per row holding its (scaled) query, output accumulator, running max and sum in
  private memory. Key and value tiles of ``BK`` rows are staged in local memory; per tile the
  row's scores, their max, the rescaling of what it has so far, then ``p @ V``. Writes the
  output and the row's log-sum-exp (-inf and output 0 when no key takes part).
* backward, two kernels on the same queue (no atomics): ``attn_bwd_dq`` (work-item per query
  row) computes ``D = rowsum(dO * O)``, then walks key tiles recomputing ``p = exp(s - lse)``
  and accumulates ``dQ``; ``attn_bwd_dkv`` (work-item per key row of a key/value head) walks the
  group's query heads and query tiles and accumulates ``dK`` and ``dV``.

Head dims are compile-time constants (private arrays), so a program is built per (dtype, E, Ev,
mask kind, causal) and cached; head dims above ``MAX_HEAD_DIM`` take the math path (the
backend says so through ``sdpa_max_head_dim``). float16 inputs compute in float32.
"""
from __future__ import annotations

import numpy as np

from ember import _dtype as D

from . import cltypes
from .codegen import compile_program

MAX_HEAD_DIM = 256
BQ = 32   # query rows per work-group (forward, dQ) and per staged tile (dK/dV)
BK = 32   # key rows per staged tile (forward, dQ) and per work-group (dK/dV)

_STRIDES = ("o", "sb", "sh", "sl", "se")  # offset and strides of a (B, H, len, dim) operand

SOURCE = r"""
#define NEG_INF (-INFINITY)
#define MASK_ARGS ms_o, ms_sb, ms_sh, ms_sl, ms_se

/* element (b, h, r, c) of a strided 4-D operand: arguments p##o (offset), p##sb, p##sh, p##sl,
   p##se (strides), declared by ARGS4(p) */
#define AT4(p, b, h, r, c) (p##o + (b) * p##sb + (h) * p##sh + (r) * p##sl + (c) * p##se)

inline bool attn_keep(__global const MT* M, ARGS4(ms_), long b, long h, long i, long j,
                      long L, long S, AT* s) {
  if (i >= L || j >= S) return false;
#if CAUSAL
  if (j > i) return false;
#endif
#if MASK == 1
  if (M[AT4(ms_, b, h, i, j)] == 0) return false;
#elif MASK == 2
  *s += (AT)M[AT4(ms_, b, h, i, j)];
#endif
  return true;
}

__kernel void attn_fwd(__global T* out, __global AT* lse, __global const T* Q,
    __global const T* K, __global const T* V, __global const MT* M, const long L,
    const long S, const long Hq, const long G, const AT scale, ARGS4(qs_), ARGS4(ks_), ARGS4(vs_),
    ARGS4(ms_)) {
  __local AT Ks[BK][E];
  __local AT Vs[BK][EV];
  const int lid = get_local_id(0);
  const long i0 = get_group_id(0) * BQ, bh = get_group_id(1);
  const long b = bh / Hq, h = bh % Hq, hk = h / G, i = i0 + lid;
  const bool row = i < L;
  AT q[E], acc[EV];
  for (int e = 0; e < E; ++e) q[e] = row ? (AT)Q[AT4(qs_, b, h, i, e)] * scale : (AT)0;
  for (int d = 0; d < EV; ++d) acc[d] = 0;
  AT m = NEG_INF, l = 0;
#if CAUSAL
  const long jend = min(S, min(L, i0 + BQ));
#else
  const long jend = S;
#endif
  for (long j0 = 0; j0 < jend; j0 += BK) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = lid; t < BK * E; t += BQ) {
      const int jj = t / E, e = t % E;
      Ks[jj][e] = j0 + jj < S ? (AT)K[AT4(ks_, b, hk, j0 + jj, e)] : (AT)0;
    }
    for (int t = lid; t < BK * EV; t += BQ) {
      const int jj = t / EV, d = t % EV;
      Vs[jj][d] = j0 + jj < S ? (AT)V[AT4(vs_, b, hk, j0 + jj, d)] : (AT)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    AT s[BK];
    AT tmax = NEG_INF;
    for (int jj = 0; jj < BK; ++jj) {
      AT x = 0;
      for (int e = 0; e < E; ++e) x += q[e] * Ks[jj][e];
      s[jj] = attn_keep(M, MASK_ARGS, b, h, i, j0 + jj, L, S, &x) ? x : NEG_INF;
      tmax = fmax(tmax, s[jj]);
    }
    const AT mnew = fmax(m, tmax);
    const AT shift = mnew == NEG_INF ? (AT)0 : mnew;  /* nothing seen yet: exp gives 0 */
    const AT corr = exp(m - shift);
    l *= corr;
    for (int d = 0; d < EV; ++d) acc[d] *= corr;
    for (int jj = 0; jj < BK; ++jj) {
      const AT p = exp(s[jj] - shift);
      l += p;
      for (int d = 0; d < EV; ++d) acc[d] += p * Vs[jj][d];
    }
    m = mnew;
  }
  if (row) {
    const AT inv = l > 0 ? (AT)1 / l : (AT)0;
    for (int d = 0; d < EV; ++d) out[(bh * L + i) * EV + d] = (T)(acc[d] * inv);
    lse[bh * L + i] = l > 0 ? m + log(l) : NEG_INF;
  }
}

__kernel void attn_bwd_dq(__global T* dQ, __global AT* Dsum, __global const T* dO,
    __global const T* O, __global const AT* lse, __global const T* Q, __global const T* K,
    __global const T* V, __global const MT* M, const long L, const long S, const long Hq,
    const long G, const AT scale, ARGS4(gs_), ARGS4(os_), ARGS4(qs_), ARGS4(ks_), ARGS4(vs_), ARGS4(ms_)) {
  __local AT Ks[BK][E];
  __local AT Vs[BK][EV];
  const int lid = get_local_id(0);
  const long i0 = get_group_id(0) * BQ, bh = get_group_id(1);
  const long b = bh / Hq, h = bh % Hq, hk = h / G, i = i0 + lid;
  const bool row = i < L;
  AT q[E], go[EV], dq[E];
  AT dsum = 0;
  for (int d = 0; d < EV; ++d) {
    go[d] = row ? (AT)dO[AT4(gs_, b, h, i, d)] : (AT)0;
    dsum += row ? go[d] * (AT)O[AT4(os_, b, h, i, d)] : (AT)0;
  }
  for (int e = 0; e < E; ++e) { q[e] = row ? (AT)Q[AT4(qs_, b, h, i, e)] : (AT)0; dq[e] = 0; }
  /* a row no key took part in has lse = -inf: p = exp(s - inf) = 0 for all its keys */
  const AT li = row ? (lse[bh * L + i] == NEG_INF ? INFINITY : lse[bh * L + i]) : INFINITY;
  if (row) Dsum[bh * L + i] = dsum;
#if CAUSAL
  const long jend = min(S, min(L, i0 + BQ));
#else
  const long jend = S;
#endif
  for (long j0 = 0; j0 < jend; j0 += BK) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = lid; t < BK * E; t += BQ) {
      const int jj = t / E, e = t % E;
      Ks[jj][e] = j0 + jj < S ? (AT)K[AT4(ks_, b, hk, j0 + jj, e)] : (AT)0;
    }
    for (int t = lid; t < BK * EV; t += BQ) {
      const int jj = t / EV, d = t % EV;
      Vs[jj][d] = j0 + jj < S ? (AT)V[AT4(vs_, b, hk, j0 + jj, d)] : (AT)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int jj = 0; jj < BK; ++jj) {
      AT x = 0, dp = 0;
      for (int e = 0; e < E; ++e) x += q[e] * Ks[jj][e];
      x *= scale;
      const bool keep = attn_keep(M, MASK_ARGS, b, h, i, j0 + jj, L, S, &x);
      const AT p = keep ? exp(x - li) : (AT)0;
      for (int d = 0; d < EV; ++d) dp += go[d] * Vs[jj][d];
      const AT ds = p * (dp - dsum);
      for (int e = 0; e < E; ++e) dq[e] += ds * Ks[jj][e];
    }
  }
  if (row)
    for (int e = 0; e < E; ++e) dQ[(bh * L + i) * E + e] = (T)(dq[e] * scale);
}

__kernel void attn_bwd_dkv(__global T* dK, __global T* dV, __global const T* dO,
    __global const AT* lse, __global const AT* Dsum, __global const T* Q, __global const T* K,
    __global const T* V, __global const MT* M, const long L, const long S, const long Hq,
    const long G, const AT scale, ARGS4(gs_), ARGS4(qs_), ARGS4(ks_), ARGS4(vs_), ARGS4(ms_)) {
  __local AT Qs[BQ][E];
  __local AT Gs[BQ][EV];
  __local AT Ls[BQ];
  __local AT Ds[BQ];
  const int lid = get_local_id(0);
  const long j0 = get_group_id(0) * BK, bhk = get_group_id(1);
  const long Hkv = Hq / G, b = bhk / Hkv, hk = bhk % Hkv, j = j0 + lid;
  const bool col = j < S;
  AT kk[E], vv[EV], dk[E], dv[EV];
  for (int e = 0; e < E; ++e) { kk[e] = col ? (AT)K[AT4(ks_, b, hk, j, e)] : (AT)0; dk[e] = 0; }
  for (int d = 0; d < EV; ++d) { vv[d] = col ? (AT)V[AT4(vs_, b, hk, j, d)] : (AT)0; dv[d] = 0; }
#if CAUSAL
  const long istart = (j0 / BQ) * BQ;  /* query i sees key j only when j <= i */
#else
  const long istart = 0;
#endif
  for (long g = 0; g < G; ++g) {
    const long h = hk * G + g, bh = b * Hq + h;
    for (long i0 = istart; i0 < L; i0 += BQ) {
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int t = lid; t < BQ * E; t += BK) {
        const int ii = t / E, e = t % E;
        Qs[ii][e] = i0 + ii < L ? (AT)Q[AT4(qs_, b, h, i0 + ii, e)] : (AT)0;
      }
      for (int t = lid; t < BQ * EV; t += BK) {
        const int ii = t / EV, d = t % EV;
        Gs[ii][d] = i0 + ii < L ? (AT)dO[AT4(gs_, b, h, i0 + ii, d)] : (AT)0;
      }
      for (int ii = lid; ii < BQ; ii += BK) {
        const AT x = i0 + ii < L ? lse[bh * L + i0 + ii] : NEG_INF;
        Ls[ii] = x == NEG_INF ? INFINITY : x;
        Ds[ii] = i0 + ii < L ? Dsum[bh * L + i0 + ii] : (AT)0;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int ii = 0; ii < BQ; ++ii) {
        AT x = 0, dp = 0;
        for (int e = 0; e < E; ++e) x += Qs[ii][e] * kk[e];
        x *= scale;
        const bool keep = col &&
            attn_keep(M, MASK_ARGS, b, h, i0 + ii, j, L, S, &x);
        const AT p = keep ? exp(x - Ls[ii]) : (AT)0;
        for (int d = 0; d < EV; ++d) { dv[d] += p * Gs[ii][d]; dp += Gs[ii][d] * vv[d]; }
        const AT ds = p * (dp - Ds[ii]);
        for (int e = 0; e < E; ++e) dk[e] += ds * Qs[ii][e];
      }
    }
  }
  if (col) {
    const long r = bhk * S + j;
    for (int e = 0; e < E; ++e) dK[r * E + e] = (T)(dk[e] * scale);
    for (int d = 0; d < EV; ++d) dV[r * EV + d] = (T)dv[d];
  }
}
"""


def _mask_kind(attn_mask):
    return 0 if attn_mask is None else 1 if attn_mask.dtype is D.bool_ else 2


def _program(st, dt, E, Ev, mask_dtype, kind, causal):
    key = ("attention", dt, E, Ev, mask_dtype, kind, causal, BQ, BK)
    kernels = st.kernels.get(key)
    if kernels is None:
        at = D.float64 if dt is D.float64 else D.float32
        mt = mask_dtype if kind else dt
        header = [cltypes.extensions_pragmas(st.dtypes),
                  f"typedef {cltypes.CTYPE[dt]} T;", f"typedef {cltypes.CTYPE[at]} AT;",
                  f"typedef {cltypes.CTYPE[mt]} MT;",
                  f"#define E {E}", f"#define EV {Ev}", f"#define BQ {BQ}", f"#define BK {BK}",
                  f"#define MASK {kind}", f"#define CAUSAL {int(causal)}",
                  "#define ARGS4(p) const long p##o, const long p##sb, const long p##sh, "
                  "const long p##sl, const long p##se"]
        prg = compile_program(st, "\n".join(header) + SOURCE, f"the attention program {key!r}")
        a = np.float64 if at is D.float64 else np.float32
        i8 = np.int64
        kernels = {"attn_fwd": ([None] * 6 + [i8] * 4 + [a] + [i8] * 20),
                   "attn_bwd_dq": ([None] * 9 + [i8] * 4 + [a] + [i8] * 30),
                   "attn_bwd_dkv": ([None] * 9 + [i8] * 4 + [a] + [i8] * 25)}
        built = {}
        for name, types in kernels.items():
            k = getattr(prg, name)
            k.set_scalar_arg_dtypes(types)
            built[name] = k
        kernels = st.kernels[key] = built
    return kernels


def _layout(t):
    """offset and strides of a 4-D operand (a dummy for a missing mask)."""
    if t is None:
        return [0] * 5
    return [t._offset] + list(t._stride)


def _launch(st, q, knl, gsize, lsize, *args):
    with st.launch_lock:
        st.last[q] = knl(q, gsize, lsize, *args)


def _dims(query, key, value, attn_mask):
    """The operands' sizes, checked first: a kernel reading past a buffer would not fail."""
    from ember.ops.attention import check_fused_operands
    check_fused_operands(query, key, value, attn_mask)
    B, Hq, L, E = query._shape
    return B, Hq, key._shape[1], L, key._shape[2], E, value._shape[3]


def _reference(backend, op_name, *args):
    """The op's composite on this device, for shapes the kernels don't take (E == 0)."""
    from ember.dispatch.dispatcher import get_op
    return get_op(op_name).composite(*args)


def forward(backend, query, key, value, attn_mask, is_causal, scale):
    B, Hq, Hkv, L, S, E, Ev = _dims(query, key, value, attn_mask)
    if E == 0 or E > MAX_HEAD_DIM or Ev > MAX_HEAD_DIM:
        return _reference(backend, "_scaled_dot_product_fused_attention", query, key, value,
                          attn_mask, is_causal, scale)
    st, q = backend._sq(query.device)
    dt = query.dtype
    at = D.float64 if dt is D.float64 else D.float32
    out = backend._new(st, (B, Hq, L, Ev), dt, query.device)
    lse = backend._new(st, (B, Hq, L), at, query.device)
    if out.numel() == 0 and lse.numel() == 0:
        return out, lse
    kind = _mask_kind(attn_mask)
    knl = _program(st, dt, E, Ev, attn_mask.dtype if kind else None, kind, is_causal)["attn_fwd"]
    mbuf = attn_mask._storage.data if kind else query._storage.data
    _launch(st, q, knl, (-(-L // BQ) * BQ, B * Hq), (BQ, 1), out._storage.data,
            lse._storage.data, query._storage.data, key._storage.data, value._storage.data,
            mbuf, L, S, Hq, Hq // Hkv, scale, *_layout(query), *_layout(key), *_layout(value),
            *_layout(attn_mask))
    return out, lse


def backward(backend, grad_out, query, key, value, attn_mask, out, logsumexp, is_causal,
             scale):
    B, Hq, Hkv, L, S, E, Ev = _dims(query, key, value, attn_mask)
    if E == 0 or E > MAX_HEAD_DIM or Ev > MAX_HEAD_DIM:
        return _reference(backend, "_scaled_dot_product_fused_attention_backward", grad_out,
                          query, key, value, attn_mask, out, logsumexp, is_causal, scale)
    st, q = backend._sq(query.device)
    dt = query.dtype
    at = D.float64 if dt is D.float64 else D.float32
    dq = backend._new(st, (B, Hq, L, E), dt, query.device)
    dk = backend._new(st, (B, Hkv, S, E), dt, query.device)
    dv = backend._new(st, (B, Hkv, S, Ev), dt, query.device)
    if L == 0 or S == 0 or B * Hq == 0:  # nothing attends: the gradients that exist are 0
        for t in (dq, dk, dv):
            if t.numel():
                t.zero_()
        return dq, dk, dv
    dsum = backend._new(st, (B, Hq, L), at, query.device)
    kind = _mask_kind(attn_mask)
    kernels = _program(st, dt, E, Ev, attn_mask.dtype if kind else None, kind, is_causal)
    mbuf = attn_mask._storage.data if kind else query._storage.data
    G = Hq // Hkv
    common = (L, S, Hq, G, scale)
    _launch(st, q, kernels["attn_bwd_dq"], (-(-L // BQ) * BQ, B * Hq), (BQ, 1),
            dq._storage.data, dsum._storage.data, grad_out._storage.data, out._storage.data,
            logsumexp._storage.data, query._storage.data, key._storage.data,
            value._storage.data, mbuf, *common, *_layout(grad_out), *_layout(out),
            *_layout(query), *_layout(key), *_layout(value), *_layout(attn_mask))
    _launch(st, q, kernels["attn_bwd_dkv"], (-(-S // BK) * BK, B * Hkv), (BK, 1),
            dk._storage.data, dv._storage.data, grad_out._storage.data, logsumexp._storage.data,
            dsum._storage.data, query._storage.data, key._storage.data, value._storage.data,
            mbuf, *common, *_layout(grad_out), *_layout(query), *_layout(key), *_layout(value),
            *_layout(attn_mask))
    return dq, dk, dv


def register(backend):
    backend.sdpa_max_head_dim = MAX_HEAD_DIM
    K = backend.kernels.register
    K("_scaled_dot_product_fused_attention",
      lambda *args: forward(backend, *args))
    K("_scaled_dot_product_fused_attention_backward",
      lambda *args: backward(backend, *args))
