"""CTC loss kernels (``ember.ops.ctc``): a work-group per batch element runs the alpha (and, for
the backward, the beta) recursion over time, its work-items sharing the extended-target
positions and meeting at a barrier after each time step; the gradient is a kernel over
(time, batch, class) that log-sums ``alpha + beta`` over the positions carrying the class.
Operands are read through their offsets and strides; the recursions are kept (N, T, 2S+1),
contiguous (a view of one, as ember.func.vmap's per-example loop passes, keeps its offset)."""
from __future__ import annotations

from ember.kit.binding import bind
from ember.runtime import dtypes as D
from ember.runtime import data_of, offset_of, shape_of, strides_of

from . import kernelkit

GROUP = 64

SOURCE = r"""
#define NEG (-INFINITY)
inline AT lse3(AT a, AT b, AT c) {
  const AT m = fmax(fmax(a, b), c);
  if (m == NEG) return NEG;
  return m + log(exp(a - m) + exp(b - m) + exp(c - m));
}
inline long label(__global const long* tg, long to, long ts0, long ts1, long b, long s,
                  long blank) {
  return (s & 1) ? tg[to + b * ts0 + ((s - 1) / 2) * ts1] : blank;
}
#define LP(t, c) ((AT)lp[lo + (t) * ls0 + b * ls1 + (c) * ls2])

__kernel void ctc_alpha(__global AT* alpha, __global T* nll, __global const T* lp,
                        __global const long* tg, __global const long* in_len,
                        __global const long* tg_len, const long TT, const long S,
                        const long blank, const long lo, const long ls0, const long ls1,
                        const long ls2, const long to, const long ts0, const long ts1) {
  const long b = get_group_id(0), lid = get_local_id(0), lsz = get_local_size(0);
  const long W = 2 * S + 1, Tb = in_len[b], Sb = tg_len[b], Wb = 2 * Sb + 1;
  __global AT* base = alpha + b * TT * W;
  for (long s = lid; s < W; s += lsz) {
    AT v = NEG;
    if (Tb > 0 && s < Wb && (s == 0 || s == 1)) v = LP(0, label(tg, to, ts0, ts1, b, s, blank));
    if (TT > 0) base[s] = v;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (long t = 1; t < TT; t++) {
    for (long s = lid; s < W; s += lsz) {
      AT v = NEG;
      if (t < Tb && s < Wb) {
        const long l = label(tg, to, ts0, ts1, b, s, blank);
        const AT a0 = base[(t - 1) * W + s];
        const AT a1 = s > 0 ? base[(t - 1) * W + s - 1] : NEG;
        const AT a2 = (s > 1 && (s & 1) && l != label(tg, to, ts0, ts1, b, s - 2, blank))
                      ? base[(t - 1) * W + s - 2] : NEG;
        v = lse3(a0, a1, a2) + LP(t, l);
      }
      base[t * W + s] = v;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (lid == 0) {
    AT ll;
    if (Tb == 0) ll = Sb == 0 ? (AT)0 : NEG;
    else {
      const AT e = base[(Tb - 1) * W + 2 * Sb];
      const AT p = Sb > 0 ? base[(Tb - 1) * W + 2 * Sb - 1] : NEG;
      ll = lse3(e, p, NEG);
    }
    nll[b] = (T)(-ll);
  }
}

__kernel void ctc_beta(__global AT* beta, __global const T* lp, __global const long* tg,
                       __global const long* in_len, __global const long* tg_len, const long TT,
                       const long S, const long blank, const long lo, const long ls0,
                       const long ls1, const long ls2, const long to, const long ts0,
                       const long ts1) {
  const long b = get_group_id(0), lid = get_local_id(0), lsz = get_local_size(0);
  const long W = 2 * S + 1, Tb = in_len[b], Sb = tg_len[b], Wb = 2 * Sb + 1;
  __global AT* base = beta + b * TT * W;
  for (long t = TT - 1; t >= 0; t--) {
    for (long s = lid; s < W; s += lsz) {
      AT v = NEG;
      if (t < Tb && s < Wb) {
        const long l = label(tg, to, ts0, ts1, b, s, blank);
        if (t == Tb - 1) {
          if (s == Wb - 1 || (s == Wb - 2 && Sb > 0)) v = LP(t, l);
        } else {
          const AT b0 = base[(t + 1) * W + s];
          const AT b1 = s + 1 < Wb ? base[(t + 1) * W + s + 1] : NEG;
          const AT b2 = (s + 2 < Wb && ((s + 2) & 1) &&
                         label(tg, to, ts0, ts1, b, s + 2, blank) != l)
                        ? base[(t + 1) * W + s + 2] : NEG;
          v = lse3(b0, b1, b2) + LP(t, l);
        }
      }
      base[t * W + s] = v;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

__kernel void ctc_grad(__global T* out, __global const T* g, __global const T* lp,
                       __global const long* tg, __global const AT* alpha,
                       __global const AT* beta, __global const T* nll,
                       __global const long* in_len, __global const long* tg_len, const long TT,
                       const long N, const long C, const long S, const long blank,
                       const int zero_inf, const long lo, const long ls0, const long ls1,
                       const long ls2, const long to, const long ts0, const long ts1,
                       const long go, const long gs0, const long no, const long ns0,
                       const long ao) {
  const long i = get_global_id(0);
  if (i >= TT * N * C) return;
  const long c = i % C, b = (i / C) % N, t = i / (C * N);
  const long W = 2 * S + 1, Wb = 2 * tg_len[b] + 1;
  const AT loss = (AT)nll[no + b * ns0];
  if (t >= in_len[b] || (zero_inf && isinf(loss))) { out[i] = 0; return; }
  AT m = NEG;
  for (long s = 0; s < Wb; s++)
    if (label(tg, to, ts0, ts1, b, s, blank) == c)
      m = fmax(m, alpha[ao + (b * TT + t) * W + s] + beta[(b * TT + t) * W + s]);
  AT acc = 0;
  if (m != NEG)
    for (long s = 0; s < Wb; s++)
      if (label(tg, to, ts0, ts1, b, s, blank) == c)
        acc += exp(alpha[ao + (b * TT + t) * W + s] + beta[(b * TT + t) * W + s] - m);
  const AT lcab = m == NEG ? NEG : m + log(acc);
  const AT l = LP(t, c);
  out[i] = (T)((exp(l) - exp(lcab + loss - l)) * (AT)g[go + b * gs0]);
}
"""
_KERNELS = {"ctc_alpha": "bbbbbb" + "lll" + "l" * 7,
            "ctc_beta": "bbbbb" + "lll" + "l" * 7,
            "ctc_grad": "bbbbbbbbb" + "lllll" + "i" + "l" * 12}


def _group_launch(st, q, kernel, groups, *args):
    if groups:
        with st.launch_lock:
            st.last[q] = kernel(q, (groups * GROUP,), (GROUP,), *args)


def _host_longs(backend, st, q, values, device):
    t = backend.new_tensor(st, (len(values),), D.int64, device)
    if values:
        import numpy as np
        from . import transfer
        transfer.upload(st, q, t, np.asarray(values, dtype=np.int64))
    return t


def _common(backend, log_probs, targets, input_lengths, target_lengths):
    st, q = backend.state_queue(log_probs.device)
    ks = kernelkit.program(st, "ctc", log_probs.dtype, SOURCE, _KERNELS)
    il = _host_longs(backend, st, q, list(input_lengths), log_probs.device)
    tl = _host_longs(backend, st, q, list(target_lengths), log_probs.device)
    lps = [offset_of(log_probs)] + list(strides_of(log_probs))
    tgs = [offset_of(targets)] + list(strides_of(targets)) if targets.ndim == 2 else [0, 0, 0]
    return st, q, ks, il, tl, lps, tgs


def forward(backend, log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    t_max, n, _ = shape_of(log_probs)
    s = shape_of(targets)[1] if targets.ndim == 2 else 0
    st, q, ks, il, tl, lps, tgs = _common(backend, log_probs, targets, input_lengths,
                                          target_lengths)
    alpha = backend.new_tensor(st, (n, t_max, 2 * s + 1), log_probs.dtype, log_probs.device)
    nll = backend.new_tensor(st, (n,), log_probs.dtype, log_probs.device)
    tgt = targets if targets.numel() else il
    _group_launch(st, q, ks["ctc_alpha"], n, data_of(alpha), data_of(nll),
                  data_of(log_probs), data_of(tgt), data_of(il),
                  data_of(tl), t_max, s, blank, *lps, *tgs)
    return nll, alpha


def backward(backend, grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha,
             blank, zero_infinity):
    t_max, n, c = shape_of(log_probs)
    s = shape_of(targets)[1] if targets.ndim == 2 else 0
    st, q, ks, il, tl, lps, tgs = _common(backend, log_probs, targets, input_lengths,
                                          target_lengths)
    beta = backend.new_tensor(st, (n, t_max, 2 * s + 1), log_probs.dtype, log_probs.device)
    tgt = targets if targets.numel() else il
    _group_launch(st, q, ks["ctc_beta"], n, data_of(beta), data_of(log_probs),
                  data_of(tgt), data_of(il), data_of(tl), t_max, s, blank, *lps,
                  *tgs)
    alpha = log_alpha if log_alpha.is_contiguous() else log_alpha.contiguous()
    out = backend.new_tensor(st, shape_of(log_probs), log_probs.dtype, log_probs.device)
    kernelkit.launch(st, q, ks["ctc_grad"], out.numel(), data_of(out), data_of(grad),
                     data_of(log_probs), data_of(tgt), data_of(alpha),
                     data_of(beta), data_of(nll), data_of(il), data_of(tl),
                     t_max, n, c, s, blank, int(zero_infinity), *lps, *tgs, offset_of(grad),
                     strides_of(grad)[0], offset_of(nll), strides_of(nll)[0], offset_of(alpha))
    return out


TABLE = {"_ctc_loss": forward, "_ctc_loss_backward": backward}


def register(backend):
    bind(backend, TABLE)
