"""The distribution samplers (``ember.ops.sampling``) on the device: gamma, Poisson and
binomial variates as bodies of the elementwise template, drawing from Philox like
``ops_random``. Rejection samplers need a varying number of uniforms per element: draw ``t``
of element ``i`` uses counter ``offset + i`` under key ``seed + t * golden`` (a distinct Philox
stream per draw), so each call still reserves only ``n`` counters and the numbers depend on
the seed, the offset and the element only.

Algorithms are PyTorch's: Marsaglia-Tsang gamma (boosted below alpha = 1), Hormann's
transformed rejection (PTRS) for Poisson rates >= 10 and multiplication below, BTRS for
binomials with n p >= 10 and geometric inversion below; ``_standard_gamma_grad`` is the same
approximation as the CPU kernel. All evaluated in the widest float.
"""
from __future__ import annotations

import numpy as np

from ember.kit import gpu_common
from ember.kit.binding import bind
from ember.runtime import dtypes as D
from ember.runtime import shape_of

from .codegen import Body, run
from .math_unary import digamma_prelude


def _prelude(ctx):
    fp64 = ctx.w == "double"
    u = "u01d(w.x, w.y)" if fp64 else "u01f(w.x, 24)"
    u2 = "u01d(w.z, w.w)" if fp64 else "u01f(w.y, 24)"
    return gpu_common.source("opencl", fp64) + f"""
/* uniform draws t, t+1 of element ctr: [0, 1) */
inline void sp_u2(long seed, long ctr, int t, W* a, W* b) {{
  const uint4 w = philox_rnd(seed + (long)t * (long)0x9E3779B97F4A7C15L, ctr);
  *a = {u}; *b = {u2};
}}
W sp_gamma(W alpha, long seed, long ctr) {{
  int t = 0;
  W scale = 1, u, v;
  if (!(alpha > 0)) return 0;
  if (alpha < 1) {{
    sp_u2(seed, ctr, t++, &u, &v);
    scale = pow(1 - u, 1 / alpha);
    alpha += 1;
  }}
  const W d = alpha - (W)1 / 3, c = 1 / sqrt(9 * d);
  for (;;) {{
    W x, y;
    do {{
      sp_u2(seed, ctr, t++, &u, &v);
      x = sqrt(-2 * log(1 - u)) * cospi(2 * v);
      y = 1 + c * x;
    }} while (y <= 0);
    const W vv = y * y * y;
    sp_u2(seed, ctr, t++, &u, &v);
    const W uu = 1 - u, xx = x * x;
    if (uu < 1 - (W)0.0331 * xx * xx) return scale * d * vv;
    if (log(uu) < (W)0.5 * xx + d * (1 - vv + log(vv))) return scale * d * vv;
  }}
}}
W sp_poisson(W lam, long seed, long ctr) {{
  int t = 0;
  W U, V;
  if (lam >= 10) {{
    const W slam = sqrt(lam), loglam = log(lam);
    const W b = (W)0.931 + (W)2.53 * slam, a = (W)-0.059 + (W)0.02483 * b;
    const W invalpha = (W)1.1239 + (W)1.1328 / (b - (W)3.4), vr = (W)0.9277 - (W)3.6224 / (b - 2);
    for (;;) {{
      sp_u2(seed, ctr, t++, &U, &V);
      U -= (W)0.5;
      const W us = (W)0.5 - fabs(U);
      const W k = floor((2 * a / us + b) * U + lam + (W)0.43);
      if (us >= (W)0.07 && V <= vr) return k;
      if (k < 0 || (us < (W)0.013 && V > us)) continue;
      if (log(V) + log(invalpha) - log(a / (us * us) + b) <= -lam + k * loglam - lgamma(k + 1))
        return k;
    }}
  }}
  if (lam == 0) return 0;
  const W enlam = exp(-lam);
  W X = 0, prod = 1;
  for (;;) {{
    sp_u2(seed, ctr, t++, &U, &V);
    prod *= U;
    if (prod > enlam) X += 1; else return X;
    prod *= V;
    if (prod > enlam) X += 1; else return X;
  }}
}}
W sp_stirling_tail(W k) {{
  const W tail[10] = {{0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
    0.02079067210376509, 0.0166446911898211, 0.0138761288230707, 0.0118967099458917,
    0.0104112652619720, 0.00925546218271273, 0.00833056343336287}};
  if (k < 10) return tail[(int)k];
  const W kp1sq = (k + 1) * (k + 1);
  return ((W)1 / 12 - ((W)1 / 360 - (W)1 / 1260 / kp1sq) / kp1sq) / (k + 1);
}}
W sp_binomial_inversion(W count, W prob, long seed, long ctr) {{
  int t = 0;
  W U, V, geom_sum = 0, num = 0;
  const W logprob = log1p(-prob);
  for (;;) {{
    sp_u2(seed, ctr, t++, &U, &V);
    geom_sum += ceil(log(U) / logprob);
    if (geom_sum > count) return num;
    num += 1;
    geom_sum += ceil(log(V) / logprob);
    if (geom_sum > count) return num;
    num += 1;
  }}
}}
W sp_btrs(W count, W prob, long seed, long ctr) {{
  int t = 0;
  W U, V;
  const W stddev = sqrt(count * prob * (1 - prob));
  const W b = (W)1.15 + (W)2.53 * stddev, a = (W)-0.0873 + (W)0.0248 * b + (W)0.01 * prob;
  const W c = count * prob + (W)0.5, v_r = (W)0.92 - (W)4.2 / b, r = prob / (1 - prob);
  const W alpha = ((W)2.83 + (W)5.1 / b) * stddev, m = floor((count + 1) * prob);
  for (;;) {{
    sp_u2(seed, ctr, t++, &U, &V);
    U -= (W)0.5;
    const W us = (W)0.5 - fabs(U);
    const W k = floor((2 * a / us + b) * U + c);
    if (k < 0 || k > count) continue;
    if (us >= (W)0.07 && V <= v_r) return k;
    V = log(V * alpha / (a / (us * us) + b));
    const W ub = (m + (W)0.5) * log((m + 1) / (r * (count - m + 1)))
        + (count + 1) * log((count - m + 1) / (count - k + 1))
        + (k + (W)0.5) * log(r * (count - k + 1) / (k + 1))
        + sp_stirling_tail(m) + sp_stirling_tail(count - m) - sp_stirling_tail(k)
        - sp_stirling_tail(count - k);
    if (V <= ub) return k;
  }}
}}
W sp_binomial(W count, W prob, long seed, long ctr) {{
  if (isnan(prob)) return NAN;
  count = floor(count);
  if (count <= 0 || prob <= 0) return 0;
  if (prob >= 1) return count;
  if (prob <= (W)0.5) {{
    if (count * prob >= 10) return sp_btrs(count, prob, seed, ctr);
    return sp_binomial_inversion(count, prob, seed, ctr);
  }}
  const W q = 1 - prob;
  if (count * q >= 10) return count - sp_btrs(count, q, seed, ctr);
  return count - sp_binomial_inversion(count, q, seed, ctr);
}}
"""


def _grad_prelude(ctx):
    return digamma_prelude(ctx) + """
W sp_gamma_grad(W alpha, W x) {
  if (x < (W)0.8) {
    W numer = 1, denom = alpha, s1 = 1 / alpha, s2 = 1 / (alpha * alpha);
    for (int i = 1; i <= 5; i++) {
      numer *= -x / i; denom += 1;
      s1 += numer / denom; s2 += numer / (denom * denom);
    }
    const W pxa = pow(x, alpha), pdf = pow(x, alpha - 1) * exp(-x);
    const W cdf = pxa * s1, cdf_a = (log(x) - ew_digamma(alpha)) * cdf - pxa * s2;
    const W r = -cdf_a / pdf;
    return isnan(r) ? (W)0 : r;
  }
  if (alpha > 8) {
    if ((W)0.9 * alpha <= x && x <= (W)1.1 * alpha) {
      const W n1 = 1 + 24 * alpha * (1 + 12 * alpha);
      const W n2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
          + alpha * (107 + 3600 * x);
      return n1 * n2 / (1244160 * (alpha * alpha) * (alpha * alpha));
    }
    const W den = sqrt(8 * alpha), t2 = den / (alpha - x);
    const W t3 = pow(x - alpha - alpha * log(x / alpha), (W)-1.5);
    const W t23 = x < alpha ? t2 - t3 : t2 + t3;
    const W t1 = log(x / alpha) * t23 - sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x));
    const W st = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha));
    return -st * x * t1 / den;
  }
  const W u = log(x / alpha), v = log(alpha);
  const W c0[8] = {0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115,
                   0.10406089, 0.0014179084};
  const W c1[8] = {0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113,
                   -0.0035938915, -0.00058392623};
  const W c2[8] = {0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642,
                   -0.0021309326, 0.00085092367, -1.5247877e-07};
  W c[8];
  for (int i = 0; i < 8; i++) c[i] = c0[i] + u * (c1[i] + u * c2[i]);
  const W p = c[0] + v * (c[1] + v * (c[2] + v * c[3]));
  const W q = c[4] + v * (c[5] + v * (c[6] + v * c[7]));
  return exp(p / q);
}
"""


# p0 = seed, p1 = offset, p2 = the smallest normal number of the output dtype
GAMMA = Body("sp_gamma", "r = (CT)fmax(sp_gamma((W)x0, p0, p1 + i), (W)p2);", _prelude, kinds="f")
POISSON = Body("sp_poisson", "r = (CT)sp_poisson((W)x0, p0, p1 + i);", _prelude, kinds="f")
BINOMIAL = Body("sp_binomial", "r = (CT)sp_binomial((W)x0, (W)x1, p0, p1 + i);", _prelude,
                kinds="f")
GAMMA_GRAD = Body("sp_gamma_grad", "r = (CT)sp_gamma_grad((W)x0, (W)x1);", _grad_prelude,
                  kinds="f")
# a negative Poisson rate: the deferred error, as the other samplers check their parameters
CHECK_RATE = Body("sp_check_rate", lambda ctx: "r = 0; if (x0 < 0) *ERR = 3;", store=False)


def _sample(be, body, inputs, gen, extra=()):
    """Draw ``body`` for each element of the first input (its shape and dtype); ``extra`` are
    parameters after the (seed, offset) pair."""
    x = inputs[0]
    st, q = be.state_queue(x.device)
    out = be.new_tensor(st, shape_of(x), x.dtype, x.device)
    n = out.numel()
    if n == 0:
        return out
    seed, off = gen.take(n)
    return run(st, q, body, out, inputs, tuple(t.dtype for t in inputs), x.dtype, x.dtype,
               params=((seed, D.int64), (off, D.int64)) + tuple(extra))


def gamma(be, alpha, gen):
    tiny = float(np.finfo(alpha.dtype.np).tiny)
    return _sample(be, GAMMA, (alpha,), gen, ((tiny, be.state_queue(alpha.device)[0].wide),))


def gamma_grad(be, alpha, x):
    st, q = be.state_queue(alpha.device)
    out = be.new_tensor(st, shape_of(alpha), alpha.dtype, alpha.device)
    return run(st, q, GAMMA_GRAD, out, (alpha, x), (alpha.dtype, x.dtype), alpha.dtype,
               alpha.dtype)


def poisson(be, lam, gen):
    if lam.numel():
        st, q = be.state_queue(lam.device)
        try:
            run(st, q, CHECK_RATE, lam, (lam,), (lam.dtype,), lam.dtype, lam.dtype, check=True)
        except RuntimeError:
            raise RuntimeError("invalid Poisson rate, expected rate to be non-negative") \
                from None
    return _sample(be, POISSON, (lam,), gen)


def binomial(be, count, prob, gen):
    return _sample(be, BINOMIAL, (count, prob), gen)


TABLE = {"_standard_gamma": gamma, "_standard_gamma_grad": gamma_grad, "poisson": poisson,
         "binomial": binomial}


def register(backend):
    bind(backend, TABLE)
