"""Fused scaled dot-product attention: flash-attention kernels (tiled, online softmax) for the
forward and the backward, so no L x S matrix is ever in device memory.

Calling convention: ``ember.ops.attention`` (query (B, Hq, L, E), key/value (B, Hkv, S, E|Ev)
with any strides, query head h reading key/value head h // (Hq / Hkv), an optional (B, Hq, L,
S) bool or float mask view, causal masks top-left aligned).

The kernels are written like the GEMM's fast path (``ops_linalg``): a work-item keeps a
register tile and works in vectors of ``N`` elements (one 512-bit register: 16 floats or 8
doubles), with no local memory or barriers, which is what PoCL's CPU device turns into plain
SIMD code. Operands are first packed (an O(n d) copy beside the O(L S d) work) into the
layouts the vector loads need: keys-major transposes (``Kt``: (E, S) per head) for scores
computed N keys at a time, and rows padded to whole vectors for the products with P.

* ``attn_fwd``: a work-item owns ``RM`` query rows: per block of N keys their scores
  (q . Kt, vectors over keys), masked, the running max and sum rescaled (online softmax), then
  ``acc += p_j * V_j`` (vectors over the value dim). Writes the output and each row's
  log-sum-exp (-inf and output 0 when no key takes part).
* ``attn_bwd_dq``: a work-item owns RM query rows: ``D = rowsum(dO * O)`` (kept for the next
  kernel), then per block of N keys ``p = exp(s - lse)``, ``dp = dO . Vt``, ``ds = p (dp - D)``
  and ``dQ += ds_j K_j``.
* ``attn_bwd_dkv``: a work-item owns ``RN`` key rows of a key/value head and walks the
  group's query heads, N queries at a time (transposed Q and dO): ``dV += p_i dO_i`` and
  ``dK += ds_i Q_i``. Two kernels on one in-order queue: no atomics.

Head dims are compile-time constants, so a program is built per (dtype, E, Ev, mask kind,
causal) and cached. Head dims above ``MAX_HEAD_DIM`` and float16 run the op's composite (the
math path) on the device; the backend's ``sdpa_max_head_dim`` tells the op layer the former.
"""
from __future__ import annotations

import numpy as np

from ember.kit.binding import bind
from ember.ops.attention import check_fused_operands
from ember.runtime import dtypes as D
from ember.runtime import (data_of, get_op, offset_of, shape_of, storage_of, strides_of,
                          tensor_constructor)

from . import cltypes, progs

MAX_HEAD_DIM = 256
LOCAL = 8  # work-items per work-group (independent: no barriers)
_LANES = {D.float32: 16, D.float64: 8}

SOURCE = r"""
#define NEG_INF (-INFINITY)
#define AT4(p, b, h, r, c) (p##o + (b) * p##sb + (h) * p##sh + (r) * p##sl + (c) * p##se)

inline AT hmax(VT v) {
#if N == 16
  const float8 a = fmax(v.lo, v.hi);
#else
  const VT a = v;
#endif
  const AT4V b = fmax(a.lo, a.hi);
  const AT2V c = fmax(b.lo, b.hi);
  return fmax(c.lo, c.hi);
}

inline AT hsum(VT v) {
#if N == 16
  const float8 a = v.lo + v.hi;
#else
  const VT a = v;
#endif
  const AT4V b = a.lo + a.hi;
  const AT2V c = b.lo + b.hi;
  return c.lo + c.hi;
}

/* the mask's additive vector for query i and keys j0 .. j0+N-1: 0 or -inf (bool), the value
   (float); 0 past the last key (those lanes are excluded by select) */
inline VT mask_add(__global const MT* M, ARGS4(ms_), long b, long h, long i, long j0, long S,
                   long L) {
  AT v[N];
  for (int t = 0; t < N; ++t) {
    const long j = j0 + t;
#if MASK == 1
    v[t] = (i < L && j < S && M[AT4(ms_, b, h, i, j)] == 0) ? NEG_INF : (AT)0;
#else
    v[t] = (i < L && j < S) ? (AT)M[AT4(ms_, b, h, i, j)] : (AT)0;
#endif
  }
  return VLOAD(0, v);
}

/* the same for key j and queries i0 .. i0+N-1 (the dK/dV kernel's orientation) */
inline VT mask_add_t(__global const MT* M, ARGS4(ms_), long b, long h, long i0, long j,
                     long S, long L) {
  AT v[N];
  for (int t = 0; t < N; ++t) {
    const long i = i0 + t;
#if MASK == 1
    v[t] = (i < L && j < S && M[AT4(ms_, b, h, i, j)] == 0) ? NEG_INF : (AT)0;
#else
    v[t] = (i < L && j < S) ? (AT)M[AT4(ms_, b, h, i, j)] : (AT)0;
#endif
  }
  return VLOAD(0, v);
}

__kernel void attn_fwd(__global T* out, __global AT* lse, __global const T* Q,
    __global const AT* Kt, __global const AT* Vp, __global const MT* M, const long L,
    const long S, const long Sp, const long Hq, const long G, const AT scale, ARGS4(qs_),
    ARGS4(ms_)) {
  const long r0 = get_global_id(0) * RM, bh = get_global_id(1);
  if (r0 >= L) return;
  const long b = bh / Hq, h = bh % Hq, hkv = (Hq / G) * b + h / G;
  __global const AT* kt = Kt + hkv * E * Sp;
  __global const AT* vp = Vp + hkv * S * EVP;
  AT q[RM][E];
  VT acc[RM][NV];
  AT m[RM], l[RM];
  for (int r = 0; r < RM; ++r) {
    for (int e = 0; e < E; ++e)
      q[r][e] = r0 + r < L ? (AT)Q[AT4(qs_, b, h, r0 + r, e)] * scale : (AT)0;
    for (int c = 0; c < NV; ++c) acc[r][c] = (VT)0;
    m[r] = NEG_INF;
    l[r] = 0;
  }
#if CAUSAL
  const long jend = min(S, r0 + RM);
#else
  const long jend = S;
#endif
  for (long j0 = 0; j0 < jend; j0 += N) {
    VT s[RM];
    for (int r = 0; r < RM; ++r) s[r] = (VT)0;
    for (int e = 0; e < E; ++e) {
      const VT kv = VLOAD(0, kt + e * Sp + j0);
      for (int r = 0; r < RM; ++r) s[r] = fma((VT)q[r][e], kv, s[r]);
    }
    const IT lane = (IT)(j0) + LANES;
    AT p[RM][N];
    for (int r = 0; r < RM; ++r) {
      IT outside = lane >= (IT)(S);
#if CAUSAL
      outside |= lane > (IT)(r0 + r);
#endif
#if MASK
      s[r] += mask_add(M, MASK_ARGS, b, h, r0 + r, j0, S, L);
#endif
      s[r] = select(s[r], (VT)NEG_INF, outside);
      const AT mnew = fmax(m[r], hmax(s[r]));
      const AT shift = mnew == NEG_INF ? (AT)0 : mnew;  /* nothing seen yet: exp gives 0 */
      const AT corr = exp(m[r] - shift);
      const VT e = exp(s[r] - (VT)shift);
      l[r] = l[r] * corr + hsum(e);
      for (int c = 0; c < NV; ++c) acc[r][c] *= corr;
      m[r] = mnew;
      VSTORE(e, 0, p[r]);
    }
    const int nj = (int)min((long)N, S - j0);
    for (int t = 0; t < nj; ++t) {
      __global const AT* vrow = vp + (j0 + t) * EVP;
      for (int c = 0; c < NV; ++c) {
        const VT vv = VLOAD(c, vrow);
        for (int r = 0; r < RM; ++r) acc[r][c] = fma((VT)p[r][t], vv, acc[r][c]);
      }
    }
  }
  for (int r = 0; r < RM && r0 + r < L; ++r) {
    const long row = bh * L + r0 + r;
    const AT inv = l[r] > 0 ? (AT)1 / l[r] : (AT)0;
    AT o[EVP];
    for (int c = 0; c < NV; ++c) VSTORE(acc[r][c] * inv, c, o);
    for (int d = 0; d < EV; ++d) out[row * EV + d] = (T)o[d];
    lse[row] = l[r] > 0 ? m[r] + log(l[r]) : NEG_INF;
  }
}

__kernel void attn_bwd_dq(__global T* dQ, __global AT* Dsum, __global const T* dO,
    __global const T* O, __global const AT* lse, __global const T* Q, __global const AT* Kt,
    __global const AT* Vt, __global const AT* Kp, __global const MT* M, const long L,
    const long Lp, const long S, const long Sp, const long Hq, const long G, const AT scale,
    ARGS4(gs_), ARGS4(os_), ARGS4(qs_), ARGS4(ms_)) {
  const long r0 = get_global_id(0) * RM, bh = get_global_id(1);
  if (r0 >= L) return;
  const long b = bh / Hq, h = bh % Hq, hkv = (Hq / G) * b + h / G;
  __global const AT* kt = Kt + hkv * E * Sp;
  __global const AT* vt = Vt + hkv * EV * Sp;
  __global const AT* kp = Kp + hkv * S * EP;
  AT q[RM][E], go[RM][EV], dsum[RM], li[RM];
  VT dq[RM][NE];
  for (int r = 0; r < RM; ++r) {
    const bool row = r0 + r < L;
    AT acc = 0;
    for (int d = 0; d < EV; ++d) {
      go[r][d] = row ? (AT)dO[AT4(gs_, b, h, r0 + r, d)] : (AT)0;
      acc += row ? go[r][d] * (AT)O[AT4(os_, b, h, r0 + r, d)] : (AT)0;
    }
    dsum[r] = acc;
    for (int e = 0; e < E; ++e) q[r][e] = row ? (AT)Q[AT4(qs_, b, h, r0 + r, e)] * scale
                                              : (AT)0;
    /* a row no key took part in has lse = -inf: p = exp(s - inf) = 0 for all its keys */
    const AT x = row ? lse[bh * Lp + r0 + r] : NEG_INF;
    li[r] = x == NEG_INF ? INFINITY : x;
    for (int c = 0; c < NE; ++c) dq[r][c] = (VT)0;
    if (row) Dsum[bh * Lp + r0 + r] = acc;
  }
#if CAUSAL
  const long jend = min(S, r0 + RM);
#else
  const long jend = S;
#endif
  for (long j0 = 0; j0 < jend; j0 += N) {
    VT s[RM], dp[RM];
    for (int r = 0; r < RM; ++r) { s[r] = (VT)0; dp[r] = (VT)0; }
    for (int e = 0; e < E; ++e) {
      const VT kv = VLOAD(0, kt + e * Sp + j0);
      for (int r = 0; r < RM; ++r) s[r] = fma((VT)q[r][e], kv, s[r]);
    }
    for (int d = 0; d < EV; ++d) {
      const VT vv = VLOAD(0, vt + d * Sp + j0);
      for (int r = 0; r < RM; ++r) dp[r] = fma((VT)go[r][d], vv, dp[r]);
    }
    const IT lane = (IT)(j0) + LANES;
    AT ds[RM][N];
    for (int r = 0; r < RM; ++r) {
      IT outside = lane >= (IT)(S);
#if CAUSAL
      outside |= lane > (IT)(r0 + r);
#endif
#if MASK
      s[r] += mask_add(M, MASK_ARGS, b, h, r0 + r, j0, S, L);
#endif
      const VT p = select(exp(s[r] - (VT)li[r]), (VT)0, outside);
      VSTORE(select(p * (dp[r] - (VT)dsum[r]), (VT)0, outside), 0, ds[r]);
    }
    const int nj = (int)min((long)N, S - j0);
    for (int t = 0; t < nj; ++t) {
      __global const AT* krow = kp + (j0 + t) * EP;
      for (int c = 0; c < NE; ++c) {
        const VT kv = VLOAD(c, krow);
        for (int r = 0; r < RM; ++r) dq[r][c] = fma((VT)ds[r][t], kv, dq[r][c]);
      }
    }
  }
  for (int r = 0; r < RM && r0 + r < L; ++r) {
    AT g[EP];
    for (int c = 0; c < NE; ++c) VSTORE(dq[r][c] * scale, c, g);
    for (int e = 0; e < E; ++e) dQ[(bh * L + r0 + r) * E + e] = (T)g[e];
  }
}

__kernel void attn_bwd_dkv(__global T* dK, __global T* dV, __global const AT* Qt,
    __global const AT* Gt, __global const AT* Qp, __global const AT* Gp,
    __global const AT* Lsep, __global const AT* Dsum, __global const T* K,
    __global const T* V, __global const MT* M, const long L, const long Lp, const long S,
    const long Hq, const long G, const AT scale, ARGS4(ks_), ARGS4(vs_), ARGS4(ms_)) {
  const long c0 = get_global_id(0) * RN, bhk = get_global_id(1);
  if (c0 >= S) return;
  const long Hkv = Hq / G, b = bhk / Hkv, hk = bhk % Hkv;
  AT kk[RN][E], vv[RN][EV];
  VT dk[RN][NE], dv[RN][NVV];
  for (int c = 0; c < RN; ++c) {
    const bool col = c0 + c < S;
    for (int e = 0; e < E; ++e) kk[c][e] = col ? (AT)K[AT4(ks_, b, hk, c0 + c, e)] * scale
                                               : (AT)0;
    for (int d = 0; d < EV; ++d) vv[c][d] = col ? (AT)V[AT4(vs_, b, hk, c0 + c, d)] : (AT)0;
    for (int x = 0; x < NE; ++x) dk[c][x] = (VT)0;
    for (int x = 0; x < NVV; ++x) dv[c][x] = (VT)0;
  }
#if CAUSAL
  const long istart = (c0 / N) * N;  /* query i sees key j only when j <= i */
#else
  const long istart = 0;
#endif
  for (long g = 0; g < G; ++g) {
    const long h = hk * G + g, bh = b * Hq + h;
    __global const AT* qt = Qt + bh * E * Lp;
    __global const AT* gt = Gt + bh * EV * Lp;
    __global const AT* qp = Qp + bh * L * EP;
    __global const AT* gp = Gp + bh * L * EVP;
    for (long i0 = istart; i0 < L; i0 += N) {
      VT s[RN], dp[RN];
      for (int c = 0; c < RN; ++c) { s[c] = (VT)0; dp[c] = (VT)0; }
      for (int e = 0; e < E; ++e) {
        const VT qv = VLOAD(0, qt + e * Lp + i0);
        for (int c = 0; c < RN; ++c) s[c] = fma((VT)kk[c][e], qv, s[c]);
      }
      for (int d = 0; d < EV; ++d) {
        const VT gv = VLOAD(0, gt + d * Lp + i0);
        for (int c = 0; c < RN; ++c) dp[c] = fma((VT)vv[c][d], gv, dp[c]);
      }
      const IT lane = (IT)(i0) + LANES;
      const VT lv = VLOAD(0, Lsep + bh * Lp + i0);
      const VT lsev = select(lv, (VT)INFINITY, lv == (VT)NEG_INF);
      const VT dv_ = VLOAD(0, Dsum + bh * Lp + i0);
      AT pa[RN][N], dsa[RN][N];
      for (int c = 0; c < RN; ++c) {
        IT outside = (lane >= (IT)(L)) | (IT)(c0 + c >= S ? -1 : 0);  /* -1: select's true */
#if CAUSAL
        outside |= lane < (IT)(c0 + c);
#endif
#if MASK
        s[c] += mask_add_t(M, MASK_ARGS, b, h, i0, c0 + c, S, L);
#endif
        const VT p = select(exp(s[c] - lsev), (VT)0, outside);
        VSTORE(p, 0, pa[c]);
        VSTORE(select(p * (dp[c] - dv_), (VT)0, outside), 0, dsa[c]);
      }
      const int ni = (int)min((long)N, L - i0);
      for (int t = 0; t < ni; ++t) {
        __global const AT* grow = gp + (i0 + t) * EVP;
        __global const AT* qrow = qp + (i0 + t) * EP;
        for (int x = 0; x < NVV; ++x) {
          const VT gv = VLOAD(x, grow);
          for (int c = 0; c < RN; ++c) dv[c][x] = fma((VT)pa[c][t], gv, dv[c][x]);
        }
        for (int x = 0; x < NE; ++x) {
          const VT qv = VLOAD(x, qrow);
          for (int c = 0; c < RN; ++c) dk[c][x] = fma((VT)dsa[c][t], qv, dk[c][x]);
        }
      }
    }
  }
  for (int c = 0; c < RN && c0 + c < S; ++c) {
    const long row = bhk * S + c0 + c;
    AT a[EP], w[EVP];
    for (int x = 0; x < NE; ++x) VSTORE(dk[c][x] * scale, x, a);
    for (int x = 0; x < NVV; ++x) VSTORE(dv[c][x], x, w);
    for (int e = 0; e < E; ++e) dK[row * E + e] = (T)a[e];
    for (int d = 0; d < EV; ++d) dV[row * EV + d] = (T)w[d];
  }
}
"""


def _round(n, k):
    return -(-n // k) * k


# accumulator vectors per work-item (measured on PoCL's AVX-512 CPU device: bigger tiles read
# each staged vector for more rows; past these, spills cost more than they save)
ACC_VECTORS = {"attn_fwd": 32, "attn_bwd_dq": 32, "attn_bwd_dkv": 64}


def _rows_per_item(vectors, kernel):
    """Rows a work-item owns: about ACC_VECTORS[kernel] accumulator vectors in registers."""
    return max(1, min(8, ACC_VECTORS[kernel] // max(1, vectors)))


def _program(st, dt, E, Ev, mask_dtype, kind, causal):
    key = ("attention", dt, E, Ev, mask_dtype, kind, causal, tuple(ACC_VECTORS.values()))
    built = st.kernels.get(key)
    if built is None:
        n = _LANES[dt]
        ep, evp = _round(E, n), _round(Ev, n)
        ne, nv = ep // n, evp // n
        c = cltypes.CTYPE[dt]
        it = "int" if dt is D.float32 else "long"
        mt = mask_dtype if kind else dt
        rm, rm_dq = _rows_per_item(nv, "attn_fwd"), _rows_per_item(ne, "attn_bwd_dq")
        rn = _rows_per_item(ne + nv, "attn_bwd_dkv")
        header = [cltypes.extensions_pragmas(st.dtypes), "#pragma OPENCL FP_CONTRACT OFF",
                  f"typedef {c} T;", f"typedef {c} AT;", f"typedef {cltypes.CTYPE[mt]} MT;",
                  f"typedef {c}{n} VT;", f"typedef {it}{n} IT;", f"typedef {c}4 AT4V;",
                  f"typedef {c}2 AT2V;", f"#define N {n}", f"#define VLOAD vload{n}",
                  f"#define VSTORE vstore{n}",
                  "#define LANES ((IT)(" + ", ".join(str(i) for i in range(n)) + "))",
                  f"#define E {E}", f"#define EV {Ev}", f"#define EP {ep}",
                  f"#define EVP {evp}", f"#define NE {ne}", f"#define NV {nv}",
                  f"#define NVV {nv}", f"#define MASK {kind}", f"#define CAUSAL {int(causal)}",
                  "#define MASK_ARGS ms_o, ms_sb, ms_sh, ms_sl, ms_se",
                  "#define ARGS4(p) const long p##o, const long p##sb, const long p##sh, "
                  "const long p##sl, const long p##se"]
        # each kernel gets its own rows-per-item constant
        parts = SOURCE.split("__kernel void ")
        src = parts[0] + "".join(
            f"#undef RM\n#undef RN\n#define RM {r}\n#define RN {rn}\n__kernel void " + p
            for p, r in zip(parts[1:], (rm, rm_dq, rn)))
        a = np.float64 if dt is D.float64 else np.float32
        i8 = np.int64
        types = {"attn_fwd": [None] * 6 + [i8] * 5 + [a] + [i8] * 10,
                 "attn_bwd_dq": [None] * 10 + [i8] * 6 + [a] + [i8] * 20,
                 "attn_bwd_dkv": [None] * 11 + [i8] * 5 + [a] + [i8] * 15}
        built = progs.program(st, key, lambda: "\n".join(header) + src, types,
                              f"the attention program {key!r}")
        built["rows"] = {"attn_fwd": rm, "attn_bwd_dq": rm_dq, "attn_bwd_dkv": rn}
    return built


def _layout(t):
    """offset and strides of a 4-D operand (zeros for a missing mask)."""
    return [0] * 5 if t is None else [offset_of(t)] + list(strides_of(t))


def _packed(backend, st, t, transpose, rows_p, cols_p):
    """``t`` (B, H, n, d) copied to a fresh (B, H, rows_p, cols_p) buffer, as (d, n) when
    ``transpose``; the padding is left as it is (kernels never use it)."""
    B, H = shape_of(t)[:2]
    src = t.transpose(-1, -2) if transpose else t
    rows, cols = shape_of(src)[2:]
    buf = backend.new_tensor(st, (B, H, rows_p, cols_p), t.dtype, t.device)
    view = tensor_constructor()(storage_of(buf), (B, H, rows, cols), strides_of(buf), 0, t.dtype,
                                t.device)
    if view.numel():
        backend.copy_(view, src)
    return buf


def _launch(st, q, knl, rows, work, *args):
    g0 = _round(-(-rows[0] // rows[1]), LOCAL)
    with st.launch_lock:
        st.last[q] = knl(q, (g0, work), (LOCAL, 1), *args)


def _check(query, key, value, attn_mask):
    """The operands' shapes, checked first: a kernel reading past a buffer would not fail."""
    check_fused_operands(query, key, value, attn_mask)


def _composite(name, *args):
    """The op's composite (the math path) on this device, for what the kernels don't take."""
    return get_op(name).composite(*args)


def _kernels_take(query, E, Ev):
    return query.dtype in _LANES and 0 < E <= MAX_HEAD_DIM and Ev <= MAX_HEAD_DIM


def forward(backend, query, key, value, attn_mask, is_causal, scale):
    _check(query, key, value, attn_mask)
    B, Hq, L, E = shape_of(query)
    Hkv, S, Ev = shape_of(key)[1], shape_of(key)[2], shape_of(value)[3]
    if not _kernels_take(query, E, Ev):
        return _composite("_scaled_dot_product_fused_attention", query, key, value, attn_mask,
                          is_causal, scale)
    st, q = backend.state_queue(query.device)
    dt = query.dtype
    out = backend.new_tensor(st, (B, Hq, L, Ev), dt, query.device)
    lse = backend.new_tensor(st, (B, Hq, L), dt, query.device)
    if not out.numel() and not lse.numel():
        return out, lse
    if S == 0 or Ev == 0:
        out.zero_()
        lse.fill_(float("-inf"))
        return out, lse
    n = _LANES[dt]
    sp, evp = _round(S, n), _round(Ev, n)
    kt = _packed(backend, st, key, True, E, sp)
    vp = _packed(backend, st, value, False, S, evp)
    kind = 0 if attn_mask is None else 1 if attn_mask.dtype is D.bool_ else 2
    kernels = _program(st, dt, E, Ev, attn_mask.dtype if kind else None, kind, is_causal)
    mbuf = data_of(attn_mask) if kind else data_of(query)
    _launch(st, q, kernels["attn_fwd"], (L, kernels["rows"]["attn_fwd"]), B * Hq,
            data_of(out), data_of(lse), data_of(query), data_of(kt),
            data_of(vp), mbuf, L, S, sp, Hq, Hq // Hkv, scale, *_layout(query),
            *_layout(attn_mask))
    return out, lse


def backward(backend, grad_out, query, key, value, attn_mask, out, logsumexp, is_causal,
             scale):
    _check(query, key, value, attn_mask)
    B, Hq, L, E = shape_of(query)
    Hkv, S, Ev = shape_of(key)[1], shape_of(key)[2], shape_of(value)[3]
    if not _kernels_take(query, E, Ev):
        return _composite("_scaled_dot_product_fused_attention_backward", grad_out, query, key,
                          value, attn_mask, out, logsumexp, is_causal, scale)
    st, q = backend.state_queue(query.device)
    dt = query.dtype
    dq = backend.new_tensor(st, (B, Hq, L, E), dt, query.device)
    dk = backend.new_tensor(st, (B, Hkv, S, E), dt, query.device)
    dv = backend.new_tensor(st, (B, Hkv, S, Ev), dt, query.device)
    if L == 0 or S == 0 or Ev == 0 or B * Hq == 0:
        for t in (dq, dk, dv):  # nothing attends, or nothing to attend with: zero gradients
            if t.numel():
                t.zero_()
        return dq, dk, dv
    n = _LANES[dt]
    lp, sp, ep, evp = _round(L, n), _round(S, n), _round(E, n), _round(Ev, n)
    kind = 0 if attn_mask is None else 1 if attn_mask.dtype is D.bool_ else 2
    kernels = _program(st, dt, E, Ev, attn_mask.dtype if kind else None, kind, is_causal)
    mbuf = data_of(attn_mask) if kind else data_of(query)
    G = Hq // Hkv
    dsum = backend.new_tensor(st, (B, Hq, lp), dt, query.device)
    lsep = _packed(backend, st, logsumexp.unsqueeze(-2), False, 1, lp)
    kt, vt = _packed(backend, st, key, True, E, sp), _packed(backend, st, value, True, Ev, sp)
    kp = _packed(backend, st, key, False, S, ep)
    _launch(st, q, kernels["attn_bwd_dq"], (L, kernels["rows"]["attn_bwd_dq"]), B * Hq,
            data_of(dq), data_of(dsum), data_of(grad_out), data_of(out),
            data_of(lsep), data_of(query), data_of(kt), data_of(vt),
            data_of(kp), mbuf, L, lp, S, sp, Hq, G, scale, *_layout(grad_out),
            *_layout(out), *_layout(query), *_layout(attn_mask))
    del kt, vt, kp
    qt, gt = _packed(backend, st, query, True, E, lp), _packed(backend, st, grad_out, True, Ev,
                                                                lp)
    qp, gp = _packed(backend, st, query, False, L, ep), _packed(backend, st, grad_out, False, L,
                                                                evp)
    _launch(st, q, kernels["attn_bwd_dkv"], (S, kernels["rows"]["attn_bwd_dkv"]), B * Hkv,
            data_of(dk), data_of(dv), data_of(qt), data_of(gt),
            data_of(qp), data_of(gp), data_of(lsep), data_of(dsum),
            data_of(key), data_of(value), mbuf, L, lp, S, Hq, G, scale,
            *_layout(key), *_layout(value), *_layout(attn_mask))
    return dq, dk, dv


TABLE = {"_scaled_dot_product_fused_attention": forward,
         "_scaled_dot_product_fused_attention_backward": backward}


def register(backend):
    backend.sdpa_max_head_dim = MAX_HEAD_DIM
    bind(backend, TABLE)
