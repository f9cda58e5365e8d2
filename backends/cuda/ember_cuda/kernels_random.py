"""Random kernels (``ember.ops.random``) on the device, from Philox4x32-10 (the GPU backends'
shared C, ``ember.kit.gpu_common``, at the top of every program: ``prelude.py``).

A port of the OpenCL backend's random bodies, number for number: element ``i`` of the output in
C order uses counter ``offset + i`` whatever the output's strides (kernels fill a contiguous
buffer that is then stored into the target), uniforms keep as many random bits as the output's
mantissa (24, 11 for float16, 53 from two words for float64; outputs that are not floating point
draw in float64), normals are Box-Muller from one counter's four words, integers are a 64-bit word
modulo the range, exponential is ``-log1p(-u) / lambd``, bernoulli ``u < p``, randperm a sort
of 64-bit random keys (counter ``offset + i`` keys position i; parallel, where the OpenCL
backend's Fisher-Yates runs on one work-item, so the two devices' permutations differ), and
multinomial a per-row CDF with a binary search per sample, or the exponential race without
replacement. Complex outputs (which OpenCL lacks) are drawn as their (real, imag) pairs, as the
CPU kernels do.

Value checks that need the data (``std`` < 0, ``p`` outside [0, 1], bad probabilities) are device
asserts (``ember.kit.value_checks``): recorded on the device and raised at the next
synchronization, so drawing never waits for the GPU.
"""
from __future__ import annotations

import math

import numpy as np

from ember import Tensor
from ember.kit.value_checks import all_true
from ember.runtime import dtypes as D, shape_of

from . import prelude
from .launch import launch

_DIGITS = {D.float16: 11, D.float32: 24, D.complex64: 24}

# per compute type: C type, kernel suffix, and the math each body uses
_CT = {"f32": ("float", "u01f(A, bits)", "sqrtf", "logf", "cospif", "log1pf"),
       "f64": ("double", "u01d(A, B)", "sqrt", "log", "cospi", "log1p")}


def _fill_kernels(suf: str) -> str:
    c, u, sqrt, log, cospi, log1p = _CT[suf]
    u1 = u.replace("A", "w.x").replace("B", "w.y")
    u2 = u.replace("A", "w.z").replace("B", "w.w")
    head = (f"(%s* out, long long n, unsigned long long seed, unsigned long long off, "
            f"int bits, %s)") % (c, "%s")
    normal = (f"const {c} v1 = ({c})1 - {u1}, v2 = {u2}; "
              f"const {c} z = {sqrt}(({c})-2 * {log}(v1)) * {cospi}(({c})2 * v2);")
    bodies = {
        "uniform": (f"{c} a, {c} b", f"out[i] = {u1} * a + b;"),
        "normal": (f"{c} a, {c} b", f"{normal} out[i] = z * a + b;"),
        "exponential": (f"{c} a, {c} b", f"out[i] = -{log1p}(-{u1}) * a;"),
        "bernoulli": (f"{c} a, {c} b", f"out[i] = ({u1} < a) ? ({c})1 : ({c})0;"),
        "normal_t": (f"const {c}* mean, const {c}* std", f"{normal} out[i] = z * std[i] + mean[i];"),
        "bernoulli_t": (f"const {c}* p", f"out[i] = ({u1} < p[i]) ? ({c})1 : ({c})0;"),
    }
    out = []
    for name, (params, body) in bodies.items():
        out.append(f'extern "C" __global__ void rng_{name}_{suf}{head % params} {{\n'
                   f"  EMBER_LOOP(i, n) {{ const ember_u4 w = philox_rnd(seed, off + i); "
                   f"{body} }}\n}}")
    return "\n".join(out)


C_SAMPLING = r"""
extern "C" __global__ void rng_integers(long long* out, long long n, unsigned long long seed,
                                        unsigned long long off, unsigned long long m,
                                        long long low) {
  EMBER_LOOP(i, n) {
    const ember_u4 w = philox_rnd(seed, off + i);
    const unsigned long long x = ((unsigned long long)w.x << 32) | w.y;
    out[i] = (long long)((unsigned long long)low + (m ? x % m : x));
  }
}
/* randperm's sort keys: 64 random bits per position (counter offset + i) */
extern "C" __global__ void rng_perm_keys(unsigned long long* keys, long long n,
                                         unsigned long long seed, unsigned long long off) {
  EMBER_LOOP(i, n) {
    const ember_u4 w = philox_rnd(seed, off + i);
    keys[i] = ((unsigned long long)w.x << 32) | w.y;
  }
}
/* rows of k probabilities (checked finite, >= 0, positive sum) -> normalized CDF rows */
extern "C" __global__ void rng_mn_cdf(const double* p, double* cdf, long long rows, long long k) {
  EMBER_LOOP(row, rows) {
    const double* pr = p + row * k;
    double* cr = cdf + row * k;
    double acc = 0;
    for (long long j = 0; j < k; j++) { acc += pr[j]; cr[j] = acc; }
    for (long long j = 0; j < k; j++) cr[j] /= acc;
    cr[k - 1] = 1;  /* every u < 1 lands, as the CPU kernel's normalized cdf */
  }
}
extern "C" __global__ void rng_mn_draw(const double* cdf, long long* out, long long rows,
                                       long long k, long long ns, unsigned long long seed,
                                       unsigned long long off) {
  EMBER_LOOP(i, rows * ns) {
    const double* cr = cdf + (i / ns) * k;
    const ember_u4 w = philox_rnd(seed, off + i);
    const double u = u01d(w.x, w.y);
    long long lo = 0, hi = k;   /* first j with cdf[j] > u (searchsorted side=right) */
    while (lo < hi) { const long long mid = (lo + hi) / 2; if (cr[mid] <= u) lo = mid + 1; else hi = mid; }
    out[i] = lo < k ? lo : k - 1;
  }
}
/* without replacement: keep the ns smallest Exp(1)/p keys per row; ties and zero-probability
   categories in index order, as the CPU kernel's stable argsort */
extern "C" __global__ void rng_mn_race(const double* p, double* keys, long long* out,
                                       long long rows, long long k, long long ns,
                                       unsigned long long seed, unsigned long long off) {
  EMBER_LOOP(row, rows) {
    const double* pr = p + row * k;
    double* kr = keys + row * ns;
    long long* orow = out + row * ns;
    long long cnt = 0;
    for (long long j = 0; j < k; j++) {
      const double v = pr[j];
      double key = ember_inf();
      if (v > 0) {
        const ember_u4 w = philox_rnd(seed, off + row * k + j);
        key = -log1p(-u01d(w.x, w.y)) / v;
      }
      if (cnt == ns && !(key < kr[ns - 1])) continue;
      long long pos = cnt < ns ? cnt : ns - 1;
      while (pos > 0 && key < kr[pos - 1]) { kr[pos] = kr[pos - 1]; orow[pos] = orow[pos - 1]; pos--; }
      kr[pos] = key; orow[pos] = j;
      if (cnt < ns) cnt++;
    }
  }
}
"""


def source() -> str:
    """The whole random program (one NVRTC build serves every random op)."""
    return "\n".join([prelude.C_PRELUDE, _fill_kernels("f32"), _fill_kernels("f64"), C_SAMPLING])


# -- helpers --------------------------------------------------------------------------------------
def _program(be):
    return be.program("random", source)


def _work(dtype):
    """(kernel suffix, numpy compute dtype, uniform bits) of an output dtype."""
    if dtype in (D.float64, D.complex128):
        return "f64", np.float64, 53
    if dtype.category == D.FLOATING or dtype.is_complex:
        return "f32", np.float32, _DIGITS.get(dtype, 24)
    return "f64", np.float64, 53  # bool/int outputs (bernoulli_) draw in float64, as OpenCL


def _real_count(shape, dtype) -> int:
    n = math.prod(shape)
    return 2 * n if dtype.is_complex else n


def _as_output(xp, buf, shape, dtype):
    """The kernel's contiguous buffer as an array of ``dtype`` shaped ``shape``."""
    if dtype.is_complex:
        buf = buf.view(dtype.np)
    buf = buf.reshape(shape)
    return buf if buf.dtype == dtype.np else buf.astype(dtype.np)


def _store(be, t, buf):
    """Write the kernel's buffer into tensor ``t`` (any strides) in C order."""
    be.xp.copyto(be.native(t), _as_output(be.xp, buf, shape_of(t), t.dtype), casting="unsafe")
    return t


def _fill(be, shape, dtype, body, gen, a, b):
    """A contiguous buffer of ``body``'s values for an output of ``shape`` and ``dtype``."""
    suf, ct, bits = _work(dtype)
    n = _real_count(shape, dtype)
    buf = be.xp.empty(n, dtype=ct)
    if n:
        seed, off = gen.take(n)
        launch(be, _program(be), f"rng_{body}_{suf}", n,
               (buf, np.int64(n), np.uint64(seed), np.uint64(off), np.int32(bits), ct(a), ct(b)))
    return buf


def _integers(be, shape, low, high, gen):
    n = math.prod(shape)
    buf = be.xp.empty(n, dtype=np.int64)
    if n:
        seed, off = gen.take(n)
        launch(be, _program(be), "rng_integers", n,
               (buf, np.int64(n), np.uint64(seed), np.uint64(off),
                np.uint64((high - low) % 2 ** 64), np.int64((low + 2 ** 63) % 2 ** 64 - 2 ** 63)))
    return buf


def _operand(be, x, shape, ct):
    """A tensor operand broadcast to ``shape`` as a contiguous ``ct`` array."""
    xp = be.xp
    return xp.ascontiguousarray(xp.broadcast_to(be.native(x).astype(ct), shape))


def _require(be, op, ok_array, message):
    """``message`` (a RuntimeError) unless every element of ``ok_array`` is true: a device
    assert, raised at the next synchronization (the kernel draws on regardless)."""
    all_true(be, op, ok_array, RuntimeError, message)


_COMPLEX_SCALE = math.sqrt(0.5)  # unit variance for a complex normal as a whole


# -- new tensors ----------------------------------------------------------------------------------
def rand(be, size, gen, dtype, device):
    return be.wrap(_as_output(be.xp, _fill(be, size, dtype, "uniform", gen, 1.0, 0.0), size,
                              dtype), device)


def randn(be, size, gen, dtype, device):
    std = _COMPLEX_SCALE if dtype.is_complex else 1.0
    return be.wrap(_as_output(be.xp, _fill(be, size, dtype, "normal", gen, std, 0.0), size,
                              dtype), device)


def randint(be, low, high, size, gen, dtype, device):
    return be.wrap(_as_output(be.xp, _integers(be, size, low, high, gen), size, dtype), device)


def randperm(be, n, gen, dtype, device):
    """A random permutation in parallel: 64 random bits per position, then a stable sort of
    them (cupy's radix sort); equal keys (probability ~n^2 / 2^65) keep index order."""
    xp = be.xp
    if not n:
        return be.wrap(xp.empty(0, dtype=dtype.np), device)
    keys = xp.empty(n, dtype=np.uint64)
    seed, off = gen.take(n)
    launch(be, _program(be), "rng_perm_keys", n,
           (keys, np.int64(n), np.uint64(seed), np.uint64(off)))
    perm = xp.argsort(keys, kind="stable").astype(np.int64, copy=False)
    return be.wrap(_as_output(xp, perm, (n,), dtype), device)


def normal(be, mean, std, size, gen, dtype, device):
    xp = be.xp
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        scale = _COMPLEX_SCALE if dtype.is_complex else 1.0
        buf = _fill(be, size, dtype, "normal", gen, std * scale, mean)
        return be.wrap(_as_output(xp, buf, size, dtype), device)
    if isinstance(std, Tensor):
        _require(be, "normal", be.native(std) >= 0, "normal expects all elements of std >= 0.0")
    suf, ct, bits = _work(dtype)
    n = math.prod(size)
    m = _operand(be, mean, size, ct) if isinstance(mean, Tensor) else xp.full(size, mean, ct)
    s = _operand(be, std, size, ct) if isinstance(std, Tensor) else xp.full(size, std, ct)
    buf = xp.empty(n, dtype=ct)
    if n:
        seed, off = gen.take(n)
        launch(be, _program(be), f"rng_normal_t_{suf}", n,
               (buf, np.int64(n), np.uint64(seed), np.uint64(off), np.int32(bits), m, s))
    return be.wrap(_as_output(xp, buf, size, dtype), device)


def multinomial(be, probs, num_samples, replacement, gen):
    xp = be.xp
    shape = shape_of(probs)
    k = shape[-1]
    p = xp.ascontiguousarray(be.native(probs).astype(np.float64)).reshape(-1, k) if k else None
    rows = 1 if probs.ndim == 1 else shape[0]
    out = xp.empty((rows, num_samples), dtype=np.int64)
    if rows == 0:
        return be.wrap(out.reshape(shape[:-1] + (num_samples,)), probs.device)
    if k == 0:  # no category: every row sums to 0, known without reading a value
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    _require(be, "multinomial", xp.isfinite(p) & (p >= 0), "probability tensor contains either "
             "`inf`, `nan` or element < 0")
    _require(be, "multinomial", p.sum(axis=1) > 0, "invalid multinomial distribution (sum of "
             "probabilities <= 0)")
    prog = _program(be)
    if replacement:
        cdf = xp.empty((rows, k), dtype=np.float64)
        launch(be, prog, "rng_mn_cdf", rows, (p, cdf, np.int64(rows), np.int64(k)))
        seed, off = gen.take(rows * num_samples)
        launch(be, prog, "rng_mn_draw", rows * num_samples,
               (cdf, out, np.int64(rows), np.int64(k), np.int64(num_samples), np.uint64(seed),
                np.uint64(off)))
    else:
        keys = xp.empty((rows, num_samples), dtype=np.float64)
        seed, off = gen.take(rows * k)
        launch(be, prog, "rng_mn_race", rows,
               (p, keys, out, np.int64(rows), np.int64(k), np.int64(num_samples),
                np.uint64(seed), np.uint64(off)))
    return be.wrap(out.reshape(shape[:-1] + (num_samples,)), probs.device)


# -- in place -------------------------------------------------------------------------------------
def uniform_(be, self, low, high, gen):
    return _store(be, self, _fill(be, shape_of(self), self.dtype, "uniform", gen, high - low, low))


def normal_(be, self, mean, std, gen):
    if self.dtype.is_complex:
        std = std * _COMPLEX_SCALE
    return _store(be, self, _fill(be, shape_of(self), self.dtype, "normal", gen, std, mean))


def random_(be, self, low, high, gen):
    return _store(be, self, _integers(be, shape_of(self), low, high, gen))


def exponential_(be, self, lambd, gen):
    return _store(be, self, _fill(be, shape_of(self), self.dtype, "exponential", gen, 1.0 / lambd,
                                  0.0))


def bernoulli_(be, self, p, gen):
    if not isinstance(p, Tensor):
        return _store(be, self, _fill(be, shape_of(self), self.dtype, "bernoulli", gen, p, 0.0))
    pa = be.native(p)
    _require(be, "bernoulli", (pa >= 0) & (pa <= 1),
             "Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
    # a tensor p draws in float64 whatever the output, as the OpenCL kernel does
    n = math.prod(shape_of(self))
    buf = be.xp.empty(n, dtype=np.float64)
    if n:
        seed, off = gen.take(n)
        launch(be, _program(be), "rng_bernoulli_t_f64", n,
               (buf, np.int64(n), np.uint64(seed), np.uint64(off), np.int32(53),
                _operand(be, p, shape_of(self), np.float64)))
    return _store(be, self, buf)


TABLE = {"rand": rand, "randn": randn, "randint": randint, "randperm": randperm,
         "normal": normal, "multinomial": multinomial, "uniform_": uniform_,
         "normal_": normal_, "random_": random_, "exponential_": exponential_,
         "bernoulli_": bernoulli_}
