"""Random kernels (``ember.ops.random``) on the device, from Philox4x32-10 (the GPU backends'
shared C, ``ember.kit.gpu_common``).

Elementwise distributions are bodies of the elementwise template: element ``i`` of the output
(C order, whatever the output's strides) uses counter ``offset + i``, so the result depends on
the seed and the tensor's shape only. Each call reserves its counters from the generator
(``PhiloxGenerator.take``; ``OpenCLBackend.create_generator`` makes one per device), which is
what makes consecutive calls differ and ``manual_seed`` / ``get_state`` / ``set_state``
reproduce them.

* uniform: the top 24 bits of a word (fewer for float16, so rounding cannot reach 1), or 53
  bits of two words for float64, then ``u * (to - from) + from`` in the working dtype;
* normal: Box-Muller from two uniforms of the same counter, ``z * std + mean``;
* integers (randint, random_): a 64-bit word modulo the range (PyTorch's construction);
* exponential: ``-log1p(-u) / lambd``; bernoulli: ``u < p``;
* randperm: Fisher-Yates in one work-item (counter ``offset + i`` draws the swap at step i);
* multinomial with replacement: one work-item per row builds the normalized CDF (and checks the
  row), one per sample binary-searches it; without replacement: the exponential race (keep the
  ``num_samples`` smallest ``Exp(1) / p``, ties and zero-probability categories in index order,
  as the CPU kernel's stable argsort), one work-item per row.

Value checks (a tensor ``std`` < 0, ``p`` outside [0, 1], bad probabilities) run on the device
and surface at the next synchronization (``deferred``), as the op must not wait.
"""
from __future__ import annotations

from ember.kit import gpu_common
from ember.kit.binding import bind
from ember.runtime import dtypes as D
from ember import Tensor
from ember.runtime import data_of, offset_of, shape_of

from . import deferred, progs, transfer
from .cltypes import CTYPE
from .codegen import Body, group, run

_DIGITS = {D.float16: 11, D.bfloat16: 8, D.float32: 24}


def _prelude(ctx):
    return gpu_common.source("opencl", ctx.wide is D.float64)


def _u(ctx, a, b):
    """A uniform [0, 1) of the body's compute dtype from words ``a``, ``b`` (p2 = bits)."""
    if ctx.ct is D.float64:
        return f"u01d({a}, {b})"
    return f"(CT)u01f({a}, (int)p2)"


def _normal(ctx):
    # u1 in (0, 1] keeps log finite
    return (f"const CT u1 = (CT)1 - {_u(ctx, 'w.x', 'w.y')}, u2 = {_u(ctx, 'w.z', 'w.w')}; "
            f"const CT z = sqrt((CT)-2 * log(u1)) * cospi((CT)2 * u2);")


_W = "const uint4 w = philox_rnd(p0, p1 + i); "

# the no-input float bodies share one parameter list (seed, offset, bits, a, b), so they
# compile as one program per output signature
UNIFORM = Body("rng_uniform", lambda c: _W + f"r = {_u(c, 'w.x', 'w.y')} * p3 + p4;",
               _prelude, kinds="f")
NORMAL = Body("rng_normal", lambda c: _W + _normal(c) + " r = z * p3 + p4;", _prelude, kinds="f")
EXPONENTIAL = Body("rng_exponential", lambda c: _W + f"r = -log1p(-{_u(c, 'w.x', 'w.y')}) * p3;",
                   _prelude, kinds="f")
BERNOULLI = Body("rng_bernoulli", lambda c: _W + f"r = ({_u(c, 'w.x', 'w.y')} < p3) ? 1 : 0;",
                 _prelude, kinds="f")
group(UNIFORM, NORMAL, EXPONENTIAL, BERNOULLI)
# tensor operands: x0 = mean, x1 = std / x0 = p
NORMAL_T = Body("rng_normal_t", lambda c: _W + _normal(c) + " r = z * x1 + x0;", _prelude,
                kinds="f")
BERNOULLI_T = Body("rng_bernoulli_t", lambda c: _W + f"r = ({_u(c, 'w.x', 'w.y')} < x0) ? 1 : 0;",
                   _prelude, kinds="f")
# p2 = the range (0 means 2**64), p3 = low; int64 compute, converted to any output dtype
INTEGERS = Body("rng_integers", _W + "const ulong x = ((ulong)w.x << 32) | w.y, m = (ulong)p2; "
                "r = p3 + (long)(m ? x % m : x);", _prelude, kinds="i", any_output=True)


def _checks_source(state, ct):
    c = {D.float64: "double", D.float32: "float"}[ct]
    return "\n".join([progs.header(state), deferred.C_RECORD, progs.C_ADDR, f"""
/* mode 0: record values < lo (NaN passes: normal's std); mode 1: values outside [lo, hi]
   (NaN fails: bernoulli's p) */
__kernel void check_values(__global const {c}* x, __global const long* m, const int R,
                           const long n, const {c} lo, const {c} hi, const int mode,
                           const int code, __global long* rec) {{
  const long i = get_global_id(0);
  if (i >= n) return;
  const {c} v = x[ADDR(m, R, 0, i)];
  const int bad = mode == 0 ? (v < lo) : !(v >= lo && v <= hi);
  if (bad) RECORD(rec, code, 0, 0, 0);
}}"""])


def _sampling_source(state, pt):
    """multinomial (probabilities of dtype ``pt``, contiguous rows) and randperm programs."""
    c = CTYPE[pt]
    wide = "double" if state.fp64 else "float"
    u = "u01d(w.x, w.y)" if state.fp64 else "u01f(w.x, 24)"
    return "\n".join([progs.header(state), gpu_common.source("opencl", state.fp64),
                      deferred.C_RECORD, f"""
typedef {wide} W;
/* the sum of a row of k probabilities, or -1 once the reason it cannot be sampled is recorded
   (a negative, infinite or NaN entry; a sum that is not positive); running (unless 0) gets the
   partial sums */
inline W checked_row_sum(__global const {c}* pr, const long k, __global W* running,
                         __global long* rec) {{
  W acc = 0;
  for (long j = 0; j < k; j++) {{
    const W v = (W)pr[j];
    if (!(v >= 0) || isinf(v)) {{ RECORD(rec, {deferred.MULTINOMIAL_VALUES}, 0, 0, 0); return -1; }}
    acc += v;
    if (running) running[j] = acc;
  }}
  if (!(acc > 0)) {{ RECORD(rec, {deferred.MULTINOMIAL_SUM}, 0, 0, 0); return -1; }}
  return acc;
}}
__kernel void mn_cdf(__global const {c}* p, __global W* cdf, const long rows, const long k,
                     __global long* rec) {{
  const long row = get_global_id(0);
  if (row >= rows) return;
  __global W* cr = cdf + row * k;
  const W acc = checked_row_sum(p + row * k, k, cr, rec);
  if (acc < 0) return;
  for (long j = 0; j < k; j++) cr[j] /= acc;
  cr[k - 1] = 1;  /* every u < 1 lands, as the CPU kernel's normalized cdf */
}}
__kernel void mn_draw(__global const W* cdf, __global long* out, const long rows,
                      const long k, const long ns, const long seed, const long off) {{
  const long i = get_global_id(0);
  if (i >= rows * ns) return;
  __global const W* cr = cdf + (i / ns) * k;
  const uint4 w = philox_rnd(seed, off + i);
  const W u = {u};
  long lo = 0, hi = k;            /* first j with cdf[j] > u (searchsorted side=right) */
  while (lo < hi) {{ const long mid = (lo + hi) / 2; if (cr[mid] <= u) lo = mid + 1; else hi = mid; }}
  out[i] = lo < k ? lo : k - 1;
}}
__kernel void mn_race(__global const {c}* p, __global W* keys, __global long* out,
                      const long rows, const long k, const long ns, const long seed,
                      const long off, __global long* rec) {{
  const long row = get_global_id(0);
  if (row >= rows) return;
  __global const {c}* pr = p + row * k;
  __global W* kr = keys + row * ns;
  __global long* orow = out + row * ns;
  if (checked_row_sum(pr, k, 0, rec) < 0) return;
  long cnt = 0;
  for (long j = 0; j < k; j++) {{
    const W v = (W)pr[j];
    W key = INFINITY;
    if (v > 0) {{ const uint4 w = philox_rnd(seed, off + row * k + j); key = -log1p(-{u}) / v; }}
    if (cnt == ns && !(key < kr[ns - 1])) continue;
    long pos = cnt < ns ? cnt : ns - 1;   /* insert after equal keys: index order on ties */
    while (pos > 0 && key < kr[pos - 1]) {{ kr[pos] = kr[pos - 1]; orow[pos] = orow[pos - 1]; pos--; }}
    kr[pos] = key; orow[pos] = j;
    if (cnt < ns) cnt++;
  }}
}}"""])


def _randperm_source(state, dt):
    c = CTYPE[dt]
    return "\n".join([progs.header(state), gpu_common.source("opencl", False), f"""
__kernel void randperm(__global {c}* out, const long n, const long seed, const long off) {{
  if (get_global_id(0) != 0) return;
  for (long i = 0; i < n; i++) out[i] = ({c})i;
  for (long i = n - 1; i > 0; i--) {{
    const uint4 w = philox_rnd(seed, off + i);
    const ulong x = ((ulong)w.x << 32) | w.y;
    const long j = (long)(x % (ulong)(i + 1));
    const {c} t = out[i]; out[i] = out[j]; out[j] = t;
  }}
}}"""])


def _work(dtype):
    """(compute dtype, uniform bits) of a float output dtype."""
    if dtype is D.float64:
        return D.float64, 53
    return D.float32, _DIGITS.get(dtype, 24)


def _fill(st, q, out, body, gen, a, b):
    n = out.numel()
    if n == 0:
        return out
    ct, bits = _work(out.dtype if out.dtype.category == D.FLOATING else st.wide)
    seed, off = gen.take(n)
    return run(st, q, body, out, (), (), ct, ct,
               params=((seed, D.int64), (off, D.int64), (bits, D.int64), (a, ct), (b, ct)))


def _integers(st, q, out, low, high, gen):
    n = out.numel()
    if n == 0:
        return out
    seed, off = gen.take(n)
    return run(st, q, INTEGERS, out, (), (), D.int64, D.int64,
               params=((seed, D.int64), (off, D.int64), (high - low, D.int64),
                       (low, D.int64)))


def _check_values(be, st, q, x, lo, hi, mode, code, op):
    n = x.numel()
    if n == 0:
        return
    ct = D.float64 if x.dtype is D.float64 else D.float32
    if x.dtype is not ct:
        x = transfer.copy_into(be, st, q, be.new_tensor(st, shape_of(x), ct, x.device), x)
    kern = progs.program(st, ("rng_checks", ct), lambda: _checks_source(st, ct), {
        "check_values": [None, None, D.int32.np.type, D.int64.np.type, ct.np.type,
                         ct.np.type, D.int32.np.type, D.int32.np.type, None]})
    rank, mbuf = progs.layout(st, shape_of(x), [x])
    progs.launch(st, q, kern["check_values"], n, data_of(x), mbuf, rank, n, lo, hi,
                 mode, code, deferred.slot(st, op, x))


def rand(be, size, gen, dtype, device):
    st, q = be.state_queue(device)
    return _fill(st, q, be.new_tensor(st, size, dtype, device), UNIFORM, gen, 1.0, 0.0)


def randn(be, size, gen, dtype, device):
    st, q = be.state_queue(device)
    return _fill(st, q, be.new_tensor(st, size, dtype, device), NORMAL, gen, 1.0, 0.0)


def randint(be, low, high, size, gen, dtype, device):
    st, q = be.state_queue(device)
    return _integers(st, q, be.new_tensor(st, size, dtype, device), low, high, gen)


def normal(be, mean, std, size, gen, dtype, device):
    st, q = be.state_queue(device)
    out = be.new_tensor(st, size, dtype, device)
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        return _fill(st, q, out, NORMAL, gen, std, mean)
    if isinstance(std, Tensor):
        _check_values(be, st, q, std, 0.0, 0.0, 0, deferred.NORMAL_STD, "normal")
    n = out.numel()
    if n == 0:
        return out
    ct, bits = _work(dtype)
    seed, off = gen.take(n)
    return run(st, q, NORMAL_T, out, (mean, std), (ct, ct), ct, ct,
               params=((seed, D.int64), (off, D.int64), (bits, D.int64)))


def randperm(be, n, gen, dtype, device):
    st, q = be.state_queue(device)
    out = be.new_tensor(st, (n,), dtype, device)
    if n == 0:
        return out
    seed, off = gen.take(n)
    kern = progs.program(st, ("randperm", dtype), lambda: _randperm_source(st, dtype),
                         {"randperm": [None] + [D.int64.np.type] * 3})
    progs.launch(st, q, kern["randperm"], 1, data_of(out), n, seed, off)
    return out


def multinomial(be, probs, num_samples, replacement, gen):
    st, q = be.state_queue(probs.device)
    shape = shape_of(probs)
    k = shape[-1]
    rows = 1 if probs.ndim == 1 else shape[0]
    out = be.new_tensor(st, shape[:-1] + (num_samples,), D.int64, probs.device)
    if rows == 0:
        return out
    p = probs
    if not p.is_contiguous() or offset_of(p):
        p = transfer.copy_into(be, st, q, be.new_tensor(st, shape, p.dtype, p.device), p)
    wide = D.float64 if st.fp64 else D.float32
    L = D.int64.np.type
    kern = progs.program(st, ("multinomial", p.dtype), lambda: _sampling_source(st, p.dtype), {
        "mn_cdf": [None, None, L, L, None],
        "mn_draw": [None, None, L, L, L, L, L],
        "mn_race": [None, None, None, L, L, L, L, L, None]})
    if k == 0:  # no category: every row sums to 0, known without reading a value
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rec = deferred.slot(st, "multinomial", p)
    if replacement:
        cdf = be.new_tensor(st, (rows, k), wide, p.device)
        progs.launch(st, q, kern["mn_cdf"], rows, data_of(p), data_of(cdf), rows,
                     k, rec)
        seed, off = gen.take(rows * num_samples)
        progs.launch(st, q, kern["mn_draw"], rows * num_samples, data_of(cdf),
                     data_of(out), rows, k, num_samples, seed, off)
    else:
        keys = be.new_tensor(st, (rows, num_samples), wide, p.device)
        seed, off = gen.take(rows * k)
        progs.launch(st, q, kern["mn_race"], rows, data_of(p), data_of(keys),
                     data_of(out), rows, k, num_samples, seed, off, rec)
    return out


def uniform_(be, self, low, high, gen):
    st, q = be.state_queue(self.device)
    return _fill(st, q, self, UNIFORM, gen, high - low, low)


def normal_(be, self, mean, std, gen):
    st, q = be.state_queue(self.device)
    return _fill(st, q, self, NORMAL, gen, std, mean)


def random_(be, self, low, high, gen):
    st, q = be.state_queue(self.device)
    return _integers(st, q, self, low, high, gen)


def exponential_(be, self, lambd, gen):
    st, q = be.state_queue(self.device)
    return _fill(st, q, self, EXPONENTIAL, gen, 1.0 / lambd, 0.0)


def bernoulli_(be, self, p, gen):
    st, q = be.state_queue(self.device)
    if not isinstance(p, Tensor):
        return _fill(st, q, self, BERNOULLI, gen, p, 0.0)
    _check_values(be, st, q, p, 0.0, 1.0, 1, deferred.BERNOULLI_P, "bernoulli")
    n = self.numel()
    if n == 0:
        return self
    ct, bits = _work(st.wide)
    seed, off = gen.take(n)
    return run(st, q, BERNOULLI_T, self, (p,), (ct,), ct, ct,
               params=((seed, D.int64), (off, D.int64), (bits, D.int64)))


TABLE = {
    "rand": rand, "randn": randn, "randint": randint, "randperm": randperm, "normal": normal,
    "multinomial": multinomial, "uniform_": uniform_, "normal_": normal_, "random_": random_,
    "exponential_": exponential_, "bernoulli_": bernoulli_,
}


def register(backend):
    bind(backend, TABLE)
