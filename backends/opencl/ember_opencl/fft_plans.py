"""FFT plans for the OpenCL backend: factorization, twiddle tables, Bluestein chirps, the radix
kernels' source, and the per-device plan cache (``ember.backends.opencl.fft_plan_cache``).

A 1-D transform of length ``n`` runs over a contiguous complex tensor seen as
``(outer, n, inner)``: work-item ``(o, j, i)`` (``i`` fastest) reads element ``j`` of line
``(o, i)`` at ``o * n * inner + j * inner + i``, so a transform along any dim needs no
transposition (``inner`` = 1 for the last dim, where the kernels are built with unit stride).

* Smooth lengths (``n = 2^a 3^b 5^c 7^d``): Stockham autosort, one launch per radix pass
  (radices 8, 4, 2, 3, 5, 7), ping-ponging between two buffers; pass ``p`` with radix ``R``
  after sub-transforms of size ``Ns`` reads ``x[j + r n/R]``, multiplies by the twiddles
  ``exp(±2πi r k / (Ns R))`` (``k = j mod Ns``, from a table computed on the host in float64),
  does an ``R``-point DFT and writes ``y[(j / Ns) Ns R + k + r Ns]``.
* Any other length: Bluestein's chirp-z: ``X_k = w_k Σ_n (x_n w_n) conj(w_{k-n})`` with
  ``w_j = exp(±iπ j² / n)``, the convolution done by two power-of-two Stockham transforms of
  length ``M >= 2n - 1`` and a pointwise product with the chirp's spectrum (host-computed,
  with 1/M folded in).

A plan is cached per (length, dtype, direction, layout: unit stride or strided) and holds its
device buffers; the compiled programs are cached per (precision, direction, layout).
"""
from __future__ import annotations

import math
import threading
from collections import OrderedDict

import numpy as np

from ember.kit import gpu_common
from ember.runtime import dtypes as D

from . import cltypes, codegen

RADICES = (8, 4, 2, 3, 5, 7)
DEFAULT_MAX_PLANS = 4096  # as PyTorch's cuFFT plan cache on recent CUDA
# lines up to this length run every pass in one launch, a work-group per line in local memory
LOCAL_MAX = 2048  # longer lines were faster in global passes here (PoCL)
LOCAL_SIZE = 64


# -- factorization ------------------------------------------------------------------------------
def factorize(n: int):
    """Radices (8s first, then 4/2 for the rest of the power of two, then 3, 5, 7) whose
    product is ``n``, or None when ``n`` has another prime factor."""
    out = []
    a = 0
    while n % 2 == 0:
        n //= 2
        a += 1
    out += [8] * (a // 3)
    out += {0: [], 1: [2], 2: [4]}[a % 3]
    for p in (3, 5, 7):
        while n % p == 0:
            n //= p
            out.append(p)
    return out if n == 1 else None


# -- kernel source ------------------------------------------------------------------------------
def _mul_si(sign, a):
    """``a * (sign * i)``."""
    return f"(CT)({a}.y, -{a}.x)" if sign < 0 else f"(CT)(-{a}.y, {a}.x)"


def _dft(R, sign, src, dst, lit):
    """C statements: ``dst0..`` = the R-point DFT (exponent sign ``sign``) of ``src0..``."""
    L = []
    if R == 2:
        L += [f"CT {dst}0 = {src}0 + {src}1;", f"CT {dst}1 = {src}0 - {src}1;"]
    elif R == 4:
        L += [f"CT {dst}t0 = {src}0 + {src}2;", f"CT {dst}t1 = {src}0 - {src}2;",
              f"CT {dst}t2 = {src}1 + {src}3;",
              f"CT {dst}t3 = {_mul_si(sign, f'({src}1 - {src}3)')};",
              f"CT {dst}0 = {dst}t0 + {dst}t2;", f"CT {dst}2 = {dst}t0 - {dst}t2;",
              f"CT {dst}1 = {dst}t1 + {dst}t3;", f"CT {dst}3 = {dst}t1 - {dst}t3;"]
    elif R == 8:
        for k, j in enumerate((0, 2, 4, 6)):
            L.append(f"CT {dst}e{k} = {src}{j};")
        for k, j in enumerate((1, 3, 5, 7)):
            L.append(f"CT {dst}o{k} = {src}{j};")
        L += _dft(4, sign, f"{dst}e", f"{dst}E", lit)
        L += _dft(4, sign, f"{dst}o", f"{dst}O", lit)
        c, s = lit(math.sqrt(0.5)), sign
        tw = [f"{dst}O0",
              f"((CT)({dst}O1.x - ({s}) * {dst}O1.y, ({s}) * {dst}O1.x + {dst}O1.y) * {c})",
              _mul_si(sign, f"{dst}O2"),
              f"((CT)(-{dst}O3.x - ({s}) * {dst}O3.y, ({s}) * {dst}O3.x - {dst}O3.y) * {c})"]
        for m in range(4):
            L.append(f"CT {dst}w{m} = {tw[m]};")
        for m in range(4):
            L.append(f"CT {dst}{m} = {dst}E{m} + {dst}w{m};")
            L.append(f"CT {dst}{m + 4} = {dst}E{m} - {dst}w{m};")
    else:  # odd prime: pair r with R - r (cos on the sums, sin on the differences)
        h = (R - 1) // 2
        for r in range(1, h + 1):
            L.append(f"CT {dst}a{r} = {src}{r} + {src}{R - r};")
            L.append(f"CT {dst}b{r} = {src}{r} - {src}{R - r};")
        L.append(f"CT {dst}0 = {src}0" + "".join(f" + {dst}a{r}" for r in range(1, h + 1))
                 + ";")
        for m in range(1, R):
            re = " + ".join(f"{dst}a{r} * {lit(math.cos(2 * math.pi * r * m / R))}"
                            for r in range(1, h + 1))
            im = " + ".join(f"{dst}b{r} * {lit(math.sin(2 * math.pi * r * m / R))}"
                            for r in range(1, h + 1))
            L.append(f"CT {dst}B{m} = {im};")
            L.append(f"CT {dst}{m} = {src}0 + {re} + {_mul_si(sign, f'{dst}B{m}')};")
    return L


_GID = """  const long gid = get_global_id(0);
  if (gid >= total) return;"""


def _butterfly(R, sign, lit, load, twiddle_base, store):
    """A radix-R pass on butterfly ``j`` (the global kernel's and the local pass's body): load
    v_r from element ``j + r * m`` (``load`` formats the index into an expression), twiddle
    v1.. by ``w`` (placed by the statement ``twiddle_base``) unless this is the first stage, take
    the R-point DFT and store y_r at element ``q + r * Ns`` (``store`` formats the index and the
    value into a statement)."""
    L = [f"  CT v{r} = {load.format(f'j + {r} * m')};" for r in range(R)]
    L += ["  const long k = j % Ns;", "  if (Ns > 1) {", f"    {twiddle_base}"]
    L += [f"    v{r} = c_mul(v{r}, w[{r - 1}]);" for r in range(1, R)]
    L.append("  }")
    L += ["  " + s for s in _dft(R, sign, "v", "y", lit)]
    L.append(f"  const long q = (j / Ns) * Ns * {R} + k;")
    return L + [f"  {store.format(f'q + {r} * Ns', f'y{r}')};" for r in range(R)]


def _radix_kernel(R, sign, unit, lit):
    L = [f"__kernel void radix{R}(__global const CT* in, __global CT* out, "
         "__global const CT* tw, const long n, const long Ns, const long inner, "
         "const long total, const long twoff, const RT scale)\n{", _GID]
    L.append(f"  const long m = n / {R};")
    if unit:
        L += ["  const long j = gid % m, o = gid / m;", "  const long base = o * n;"]
        step = ""
    else:
        L += ["  const long i = gid % inner, t = gid / inner;",
              "  const long j = t % m, o = t / m;", "  const long base = o * n * inner + i;"]
        step = " * inner"
    L += _butterfly(R, sign, lit, "in[base + ({})" + step + "]",
                    f"__global const CT* w = tw + twoff + k * {R - 1};",
                    "out[base + ({})" + step + "] = {} * scale")
    L.append("}")
    return "\n".join(L)


def _local_pass(R, sign, lit):
    """One radix-R pass between local arrays, for butterfly ``j`` (the radix kernel's body)."""
    L = [f"inline void pass{R}(__local const CT* s, __local CT* d, __global const CT* w, "
         "const long j, const long m, const long Ns)\n{"]
    L += _butterfly(R, sign, lit, "s[{}]", f"w += k * {R - 1};", "d[{}] = {}")
    L.append("}")
    return "\n".join(L)


def _local_kernel():
    cases = " ".join(f"case {R}: pass{R}(src, dst, tw + off, j, m, ns); break;"
                     for R in RADICES)
    return f"""
__kernel void fft_local(__global const CT* in, __global CT* out, __global const CT* tw,
                        __global const long* passes, const int npass, const long n,
                        const long inner, const RT scale)
{{
  __local CT bufA[{LOCAL_MAX}];
  __local CT bufB[{LOCAL_MAX}];
  const long line = get_group_id(0);
  const long ls = get_local_size(0), lid = get_local_id(0);
  const long base = (line / inner) * n * inner + line % inner;
  for (long j = lid; j < n; j += ls) bufA[j] = in[base + j * inner];
  barrier(CLK_LOCAL_MEM_FENCE);
  __local CT* src = bufA;
  __local CT* dst = bufB;
  for (int p = 0; p < npass; p++) {{
    const int R = (int)passes[3 * p];
    const long ns = passes[3 * p + 1], off = passes[3 * p + 2], m = n / R;
    for (long j = lid; j < m; j += ls) {{
      switch (R) {{ {cases} }}
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    __local CT* t = src; src = dst; dst = t;
  }}
  for (long j = lid; j < n; j += ls) out[base + j * inner] = src[j] * scale;
}}
"""


_BLUESTEIN = """
__kernel void chirp_pre(__global const CT* x, __global CT* a, __global const CT* w,
                        const long n, const long M, const long inner, const long total)
{
  const long gid = get_global_id(0);
  if (gid >= total) return;
  const long i = gid % inner, t = gid / inner, k = t % M, o = t / M;
  a[gid] = k < n ? c_mul(x[(o * n + k) * inner + i], w[k]) : (CT)(0, 0);
}
__kernel void pointwise(__global CT* y, __global const CT* B, const long M, const long inner,
                        const long total)
{
  const long gid = get_global_id(0);
  if (gid >= total) return;
  y[gid] = c_mul(y[gid], B[(gid / inner) % M]);
}
__kernel void chirp_post(__global const CT* c, __global CT* X, __global const CT* w,
                         const long n, const long M, const long inner, const long total,
                         const RT scale)
{
  const long gid = get_global_id(0);
  if (gid >= total) return;
  const long i = gid % inner, t = gid / inner, k = t % n, o = t / n;
  X[gid] = c_mul(c[(o * M + k) * inner + i], w[k]) * scale;
}
"""


def program_source(state, dtype, sign, unit):
    real = dtype.to_real()
    rt = cltypes.CTYPE[real]

    def lit(v):
        return cltypes.lit(v, real)
    parts = ["#pragma OPENCL FP_CONTRACT OFF", cltypes.extensions_pragmas(state.dtypes),
             f"typedef {cltypes.CTYPE[dtype]} CT;", f"typedef {rt} RT;",
             gpu_common.source("opencl", state.fp64), "EMBER_COMPLEX_OPS(c, CT)"]
    parts += [_radix_kernel(R, sign, unit, lit) for R in RADICES]
    parts += [_local_pass(R, sign, lit) for R in RADICES]
    parts.append(_local_kernel())
    parts.append(_BLUESTEIN)
    return "\n".join(parts)


def kernels(state, dtype, sign, unit):
    """The radix and chirp kernels for (precision, direction, layout), compiled once."""
    key = ("fft", dtype, sign, unit)
    ks = state.kernels.get(key)
    if ks is None:
        prg = codegen.compile_program(state, program_source(state, dtype, sign, unit),
                                      f"the FFT kernels ({dtype.name})")
        real = cltypes.np_type(dtype.to_real())
        i64 = np.int64
        ks = {}
        for R in RADICES:
            k = getattr(prg, f"radix{R}")
            k.set_scalar_arg_dtypes([None, None, None, i64, i64, i64, i64, i64, real])
            ks[R] = k
        ks["chirp_pre"] = prg.chirp_pre
        ks["chirp_pre"].set_scalar_arg_dtypes([None, None, None, i64, i64, i64, i64])
        ks["pointwise"] = prg.pointwise
        ks["pointwise"].set_scalar_arg_dtypes([None, None, i64, i64, i64])
        ks["local"] = prg.fft_local
        ks["local"].set_scalar_arg_dtypes([None, None, None, None, np.int32, i64, i64, real])
        ks["chirp_post"] = prg.chirp_post
        ks["chirp_post"].set_scalar_arg_dtypes([None, None, None, i64, i64, i64, i64, real])
        state.kernels[key] = ks
    return ks


# -- plans --------------------------------------------------------------------------------------
def _buffer(state, arr):
    import pyopencl as cl
    arr = np.ascontiguousarray(arr)
    if arr.size == 0:
        arr = np.zeros(1, dtype=arr.dtype)
    return cl.Buffer(state.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                     hostbuf=arr)


class StockhamPlan:
    """Radix passes for a smooth length: (radix, Ns, offset into the twiddle table)."""

    kind = "stockham"

    def __init__(self, state, n, dtype, sign, unit, radices):
        self.n, self.dtype, self.sign, self.unit = n, dtype, sign, unit
        self.passes = []
        tables, off, ns = [], 0, 1
        for R in radices:
            self.passes.append((R, ns, off))
            k = np.arange(ns)[:, None]
            r = np.arange(1, R)[None, :]
            tables.append(np.exp(sign * 2j * np.pi * k * r / (ns * R)).reshape(-1))
            off += ns * (R - 1)
            ns *= R
        table = np.concatenate(tables) if tables else np.zeros(1)
        self.twiddles = _buffer(state, table.astype(dtype.np))
        self.nbytes = table.size * dtype.itemsize
        # short lines: every pass in one launch (see LOCAL_MAX), the passes read from a table
        self.local = n <= LOCAL_MAX
        self.pass_table = _buffer(state, np.array(self.passes, dtype=np.int64).reshape(-1)) \
            if self.local else None


class BluesteinPlan:
    """Chirp ``w``, the chirp filter's spectrum ``B`` (divided by M), and the length-M plan."""

    kind = "bluestein"

    def __init__(self, state, n, dtype, sign, unit, cache):
        self.n, self.dtype, self.sign, self.unit = n, dtype, sign, unit
        self.M = 1 << (2 * n - 2).bit_length()
        k = np.arange(n, dtype=np.int64)
        w = np.exp(sign * 1j * np.pi * ((k * k) % (2 * n)) / n)  # k^2 mod 2n keeps it exact
        b = np.zeros(self.M, dtype=np.complex128)
        b[:n] = np.conj(w)
        b[self.M - n + 1:] = np.conj(w[1:])[::-1]
        self.w = _buffer(state, w.astype(dtype.np))
        self.B = _buffer(state, (np.fft.fft(b) / self.M).astype(dtype.np))
        # the length-M transforms (forward, then unnormalized inverse) in this plan's layout
        self.fwd = cache.get(state, self.M, dtype, -1, unit)
        self.inv = cache.get(state, self.M, dtype, 1, unit)
        self.nbytes = (n + self.M) * dtype.itemsize


class PlanCache:
    """LRU cache of one device's plans, with PyTorch's ``cufft_plan_cache`` interface:
    ``size`` (plans held), ``max_size`` (settable; 0 disables caching) and ``clear()``."""

    def __init__(self, max_size=DEFAULT_MAX_PLANS):
        self._plans = OrderedDict()
        self._max = max_size
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    @property
    def size(self) -> int:
        return len(self._plans)

    @property
    def max_size(self) -> int:
        return self._max

    @max_size.setter
    def max_size(self, value):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise RuntimeError(f"fft_plan_cache.max_size must be a non-negative integer, got "
                               f"{value!r}")
        with self._lock:
            self._max = value
            while len(self._plans) > value:
                self._plans.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._plans.clear()

    def get(self, state, n, dtype, sign, unit):
        key = (n, dtype, sign, unit)
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                self.hits += 1
                return plan
        self.misses += 1
        radices = factorize(n)
        plan = StockhamPlan(state, n, dtype, sign, unit, radices) if radices is not None else \
            BluesteinPlan(state, n, dtype, sign, unit, self)
        with self._lock:
            if self._max:
                self._plans[key] = plan
                while len(self._plans) > self._max:
                    self._plans.popitem(last=False)
        return plan

    def __repr__(self):
        return f"<fft plan cache: {self.size} plans, max_size {self._max}>"


def needs_fp64(dtype) -> bool:
    return dtype is D.complex128
