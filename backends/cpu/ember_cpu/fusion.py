"""The CPU backend's lowering for ``ember.compile``: a fused pointwise group becomes one C loop,
built by the system C compiler and loaded with ctypes.

Why C and not numba or numexpr (measured on this machine, 1M float32, 2 threads): sin+cos
0.25-0.29 ms in generated C through libmvec (0.16-0.20 with the inline sin/cos below), 3.5 ms
in numba (no vector math library: scalar libm) and 7.1 ms in numexpr; a 10-op chain 0.41 ms in C, 10.3 ms in numba, 1.76 ms in numexpr, 2.3 ms op by op in
numpy. What makes the C fast is glibc's vector math library (libmvec): each transcendental the
loop calls is declared ``omp declare simd`` so gcc calls its AVX-512/AVX2 form (``-fopenmp-simd``:
no OpenMP runtime), and a large loop is split in ranges over ember's intra-op threads
(``ember.kit.parallel.run_ranges``; ctypes releases the GIL). An OpenMP runtime was measured
and dropped: its spinning workers and OpenBLAS's starve each other on few cores (an MLP step
took 7.2 ms instead of 0.63 ms). The flags keep IEEE
semantics (no -ffast-math: nan and inf behave as in the eager kernels).

The loop walks the output in row segments: dimensions where every operand is contiguous are
merged, the innermost becomes a SIMD loop whose per-input stride class (0 for a broadcast
operand, 1 for a contiguous one, any other) is part of the generated code, and outer indices
are decoded per segment. Kernels are cached in memory and on disk, in ember's private,
hash-verified ``DiskCache("kernels")`` (``ember.runtime.disk_cache``), by the hash of their
source and the compiler; the bytes the cache verified are what gets loaded."""
from __future__ import annotations

import ctypes
import hashlib
import logging
import math
import os
import shutil
import subprocess
import tempfile
import threading
import time

import numpy as np

from ember.kit import parallel
from ember.runtime import DiskCache
from ember.compiler.pointwise import C_TYPES, Dialect, reduction_loop

log = logging.getLogger("ember.kernels")

_FLAGS = ["-O3", "-march=native", "-fno-math-errno", "-fno-trapping-math", "-fopenmp-simd",
          "-fPIC", "-shared",
          # gcc would merge sin and cos of one value into sincos, which has no vector form
          "-fno-builtin-sinf", "-fno-builtin-cosf", "-fno-builtin-sin", "-fno-builtin-cos"]
_UNARY = ("exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos", "tan", "tanh", "erf")
_lock = threading.Lock()
_loaded = {}


class _CDialect(Dialect):
    """C spellings: ``sinf`` for float32. float32 sin/cos at ``level`` 0 or 1 use the inline
    versions below; their arguments are collected so the loop can report one past that
    level's range, and the caller reruns the loop a level up (2: libm's)."""

    def __init__(self, dtype, var, level, range_args):
        super().__init__(dtype, var)
        self.level, self.range_args = level, range_args

    def fn(self, name, *args):
        if self.dtype.itemsize == 4:
            if name in ("sin", "cos") and self.level < 2:
                self.range_args.append(args[0])
                return f"ember_{name}{self.level}f({args[0]})"
            name += "f"
        return f"{name}({', '.join(args)})"


# float32 sin and cos (gcc merges the shared range reduction after inlining), cephes' minimax
# polynomials on [-pi/4, pi/4]. Level 0 reduces in float with a three-part pi/2, within
# 1.5 ulp of float64 sin while |x| <= 8 (the activations sin usually sees); level 1 reduces
# in double with a two-part pi/2, within 1.6 ulp up to |x| = 5e8 (used past 1e8 nothing but
# libm). Measured on 1M float32, one thread: sin+cos 0.22 ms at level 0, 0.37 at level 1,
# 0.49 through libmvec's sinf/cosf.
_SINCOS = """
static inline float ember_poly_sincos(float r, int q) {
  float z = r * r;
  float s = r + r * z * (-1.6666654611e-1f + z * (8.3321608736e-3f + z * -1.9515295891e-4f));
  float c = 1.0f - 0.5f * z + z * z * (4.166664568298827e-2f
            + z * (-1.388731625493765e-3f + z * 2.443315711809948e-5f));
  float v = (q & 1) ? c : s;
  return (q & 2) ? -v : v;
}
static inline float ember_sincos0f(float x, int quarter) {
  float k = __builtin_rintf(x * 0.636619772f);
  float r = ((x - k * 1.5703125f) - k * 4.837512969970703125e-4f) - k * 7.54978995489188216e-8f;
  return ember_poly_sincos(r, ((int)k + quarter) & 3);
}
static inline float ember_sincos1f(float x, int quarter) {
  double xd = x;
  double k = __builtin_rint(xd * 0.63661977236758134308);
  float r = (float)((xd - k * 1.5707963267341256) - k * 6.077100506506192e-11);
  return ember_poly_sincos(r, ((int)(int64_t)k + quarter) & 3);
}
static inline float ember_sin0f(float x) { return ember_sincos0f(x, 0); }
static inline float ember_cos0f(float x) { return ember_sincos0f(x, 1); }
static inline float ember_sin1f(float x) { return ember_sincos1f(x, 0); }
static inline float ember_cos1f(float x) { return ember_sincos1f(x, 1); }
"""
#: the |argument| past which a level's sin/cos is not accurate enough: rerun a level up
_RANGE_LIMIT = {0: "8.0f", 1: "1e8f"}
LIBM = 2


def compiler():
    """The C compiler used, or None (then the CPU backend does not fuse)."""
    return os.environ.get("CC") if os.environ.get("CC") and shutil.which(
        os.environ["CC"]) else shutil.which("gcc") or shutil.which("cc")


def _vector_math():
    """The math functions glibc's libmvec has SIMD forms of, as (name, arity) per C spelling."""
    if hasattr(_vector_math, "names"):
        return _vector_math.names
    names = set()
    try:
        lib = ctypes.CDLL("libmvec.so.1")
    except OSError:
        lib = None
    if lib is not None:
        for base in _UNARY + ("pow",):
            v = "vv" if base == "pow" else "v"
            for c, lanes in (("f", (4, 8, 8, 16)), ("", (2, 4, 4, 8))):
                want = [f"_ZGV{isa}N{n}{v}_{base}{c}" for isa, n in zip("bcde", lanes)]
                if all(hasattr(lib, w) for w in want):
                    names.add(base + c)
    _vector_math.names = names
    return names


def _declarations():
    out = []
    vector = _vector_math()
    for base in _UNARY + ("pow", "fabs", "sqrt"):
        for c, t in (("f", "float"), ("", "double")):
            name = base + c
            params = f"{t}, {t}" if base == "pow" else t
            if name in vector:
                out.append("#pragma omp declare simd notinbranch")
            out.append(f"__attribute__((const)) {t} {name}({params});")
    return "\n".join(out)


def _var(local):
    return f"x{local.index}" if local.kind == "in" else f"t{local.index}"


def _body(kernel, level, indent):
    """The loop body's statements (inputs read as ``x<k>``), then the checks that report a
    sin/cos argument past ``level``'s range through ``big``."""
    range_args = []
    lines = kernel.render(lambda dt: _CDialect(dt, _var, level, range_args), _var)
    lines += [f"big |= __builtin_fabsf({a}) > {_RANGE_LIMIT[level]};"
              for a in dict.fromkeys(range_args)]
    return [indent + line for line in lines]


def _source(kernel, classes, level=0):
    n_in, n_out = len(kernel.input_dtypes), len(kernel.outputs)
    lines = ["#include <stdint.h>", _declarations(), _SINCOS, "",
             "int kernel(int64_t inner, int nd, const int64_t* oshape, const int64_t* ostr, "
             "void** in, const int64_t* istr, void** out, int64_t p, int64_t hi) {"]
    for k, dt in enumerate(kernel.input_dtypes):
        lines.append(f"  const {C_TYPES[dt]}* restrict in{k} = (const {C_TYPES[dt]}*)in[{k}];")
    for k, dt in enumerate(kernel.output_dtypes):
        lines.append(f"  {C_TYPES[dt]}* restrict out{k} = ({C_TYPES[dt]}*)out[{k}];")
    lines += [
        "  int big = 0;",
        "  {",
        "    while (p < hi) {",
        "      int64_t row = p / inner, col = p - row * inner;",
        "      int64_t len = inner - col < hi - p ? inner - col : hi - p;",
    ]
    for k in range(n_in):
        lines.append(f"      int64_t o{k} = 0;")
    lines += ["      for (int d = nd - 1; d >= 0; d--) {",
              "        int64_t idx = row % oshape[d]; row /= oshape[d];"]
    for k in range(n_in):
        lines.append(f"        o{k} += idx * ostr[{k} * nd + d];")
    lines.append("      }")
    for k, cls in enumerate(classes):
        step = {0: "0", 1: "1"}.get(cls, f"istr[{k}]")
        lines.append(f"      const {C_TYPES[kernel.input_dtypes[k]]}* a{k} = in{k} + o{k} + "
                     f"col * {step};")
    for k in range(n_out):
        lines.append(f"      {C_TYPES[kernel.output_dtypes[k]]}* w{k} = out{k} + p;")
    lines += ["      #pragma omp simd reduction(|:big)",
              "      for (int64_t i = 0; i < len; i++) {"]
    for k, cls in enumerate(classes):
        at = {0: "0", 1: "i"}.get(cls, f"i * istr[{k}]")
        lines.append(f"        {C_TYPES[kernel.input_dtypes[k]]} x{k} = a{k}[{at}];")

    lines += _body(kernel, level, "        ")
    for k, j in enumerate(kernel.outputs):
        lines.append(f"        w{k}[i] = t{j};")
    lines += ["      }", "      p += len;", "    }", "  }", "  return big;", "}"]
    return "\n".join(lines) + "\n"


_KERNELS = DiskCache("kernels")


def cache_key(source):
    """The disk cache entry of the loop ``source``: its hash with the compiler's, the flags' and
    the CPU's (a kernel built for another CPU may use instructions this one lacks)."""
    return f"pointwise_{_digest(source)[:24]}.so"


def _compile(source):
    """The shared object's bytes for ``source`` (built in a scratch directory)."""
    cc = compiler()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.c")
        with open(src, "w") as f:
            f.write(source)
        tmp_so = os.path.join(tmp, "k.so")
        libs = ["-lmvec"] if _vector_math() else []
        proc = subprocess.run([cc, *_FLAGS, src, "-o", tmp_so, *libs, "-lm"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"ember.compile: the C compiler failed on a fused kernel:\n"
                               f"{proc.stderr[-2000:]}")
        with open(tmp_so, "rb") as f:
            data = f.read()
    log.info("fused kernel %s: compiled with %s in %.0f ms (%d lines of C)", _digest(source)[:12],
             os.path.basename(cc), 1e3 * (time.perf_counter() - start), source.count("\n"))
    return data


def _load_library(data):
    """dlopen the verified bytes ``data`` from a once-used file in the cache's private
    directory (a name never loaded before: the loader returns an already loaded library for a
    name it has seen, and it is not the cache entry, which may change after the check)."""
    with _KERNELS.private_copy(data, ".so") as path:
        return ctypes.CDLL(path)


def cached_kernel(source, build):
    """The loaded kernel of ``source``: this process's, else ``build(source)`` (which finds it
    on disk or compiles it). Runners ask once per variant, never per call."""
    with _lock:
        fn = _loaded.get(source)
        if fn is None:
            fn = _loaded[source] = build(source)
        else:
            log.debug("fused kernel %s: already loaded", _digest(source)[:12])
    return fn


def _digest(source):
    return hashlib.sha256((source + compiler() + " ".join(_FLAGS) + _machine()).encode()
                          ).hexdigest()


def build_kernel(source):
    key = cache_key(source)
    lib = _load_library(_KERNELS.get_or_build(key, lambda: _compile(source)))
    fn = lib.kernel
    fn.restype = ctypes.c_int
    i64p, ptrs = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_void_p)
    fn.argtypes = [ctypes.c_int64, ctypes.c_int, i64p, i64p, ptrs, i64p, ptrs, ctypes.c_int64,
                   ctypes.c_int64]
    fn._keep = lib
    return fn


def _machine():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return hashlib.sha1(line.encode()).hexdigest()
    except OSError:
        pass
    return ""


def _strides(arr, shape):
    """Element strides of ``arr`` broadcast to ``shape`` (0 along broadcast dimensions)."""
    pad = len(shape) - arr.ndim
    isz = arr.itemsize
    out = [0] * pad
    for d, (n, s) in enumerate(zip(arr.shape, arr.strides)):
        out.append(0 if n == 1 and shape[pad + d] != 1 else s // isz)
    return out


def _collapse(shape, strides):
    """Merge neighbouring dimensions that every operand (and the contiguous output) walks
    contiguously: fewer, longer rows."""
    dims = [[n] + [s[d] for s in strides] for d, n in enumerate(shape) if n != 1]
    if not dims:
        return [1], [[0] for _ in strides]
    merged = [dims[-1]]
    for d in reversed(dims[:-1]):
        last = merged[-1]
        if all(d[1 + k] == last[1 + k] * last[0] for k in range(len(strides))):
            last[0] *= d[0]
        else:
            merged.append(d)
    merged.reverse()
    return [m[0] for m in merged], [[m[1 + k] for m in merged] for k in range(len(strides))]


def address(a):
    """The address of ``a``'s first element (ctypes' buffer view is ~3x faster than
    ``__array_interface__``, but needs a writable contiguous array)."""
    try:
        return ctypes.addressof(_char.from_buffer(a))
    except (TypeError, ValueError, BufferError):
        return a.__array_interface__["data"][0]


_char = ctypes.c_char


class PointwiseRunner:
    """Runs one fused kernel on CPU tensors: broadcasting, output allocation, the C call."""

    def __init__(self, backend, kernel):
        self.backend = backend
        self.kernel = kernel
        self.variants = {}
        self.plans = {}
        self.out_np = [backend.xp.dtype(d.np) for d in kernel.output_dtypes]

    def _variant(self, classes, level=0):
        fn = self.variants.get((classes, level))
        if fn is None:
            fn = cached_kernel(_source(self.kernel, classes, level), build_kernel)
            self.variants[(classes, level)] = fn
        return fn

    def __call__(self, inputs):
        be = self.backend
        arrays = [be.native(t) for t in inputs]
        layout_key = tuple([(a.shape, a.strides) for a in arrays])
        plan = self.plans.get(layout_key)
        if plan is None:
            plan = self.plans[layout_key] = self._plan(arrays)
        shape, n, fn, fixed, n_in, _ = plan
        outs = [np.empty(shape, dtype=d) for d in self.out_np]
        if n:
            ptrs_in = (ctypes.c_void_p * n_in)(*[address(a) for a in arrays])
            ptrs_out = (ctypes.c_void_p * len(outs))(*[address(o) for o in outs])
            call = fixed[1:5] + (ptrs_in, fixed[5], ptrs_out)
            level = 0
            # a sin/cos argument past this level's range: the whole loop again a level up
            while any(parallel.run_ranges(n, lambda lo, hi: fn(*call, lo, hi))) and \
                    level < LIBM:
                level += 1
                fn = self._variant(plan[5], level)
        device = inputs[0].device
        return [be.wrap(o, device) for o in outs]

    def _plan(self, arrays):
        """What a call with these input layouts passes to C (cached per layout)."""
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
        n = math.prod(shape)
        if not n:
            return [shape, 0, None, None, len(arrays), None]
        strides = [_strides(a, shape) for a in arrays]
        dims, per_input = _collapse(shape, strides)
        inner_strides = [s[-1] for s in per_input]
        classes = tuple(s if s in (0, 1) else 2 for s in inner_strides)
        oshape = (ctypes.c_int64 * max(1, len(dims) - 1))(*(dims[:-1] or [1]))
        flat = [v for s in per_input for v in (s[:-1] or [0])]
        ostr = (ctypes.c_int64 * len(flat))(*flat)
        istr = (ctypes.c_int64 * len(inner_strides))(*inner_strides)
        fixed = (n, dims[-1], len(dims) - 1, oshape, ostr, istr)
        return [shape, n, self._variant(classes), fixed, len(arrays), classes]


def compile_pointwise(backend, kernel):
    """``Backend.compile_pointwise`` for the CPU: a runner, or None without a C compiler."""
    if compiler() is None:
        return None
    if kernel.reduction is not None:
        return ReductionRunner(backend, kernel)
    return PointwiseRunner(backend, kernel)


# -- foreach runs (optimizer updates) -----------------------------------------------------------
def _foreach_source(kernel):
    ctype = C_TYPES[kernel.slot_dtypes[0]]
    # [lo, hi) is a range of the tensors' elements laid end to end
    lines = ["#include <stdint.h>", _declarations(), _SINCOS, "",
             "int kernel(int64_t ntensors, const int64_t* sizes, void** ptrs, int64_t lo, "
             "int64_t hi) {",
             "  int64_t start = 0;",
             "  for (int64_t t = 0; t < ntensors && start < hi; t++) {",
             "    const int64_t n = sizes[t];",
             "    const int64_t a = lo > start ? lo - start : 0;",
             "    const int64_t b = hi - start < n ? hi - start : n;",
             "    start += n;",
             "    if (a >= b) continue;"]
    for k in range(len(kernel.slot_dtypes)):
        lines.append(f"    {ctype}* s{k} = ({ctype}*)ptrs[{k} * ntensors + t];")
    lines += ["    #pragma omp simd",
              "    for (int64_t i = a; i < b; i++) {"]
    for k in range(len(kernel.slot_dtypes)):
        lines.append(f"      {ctype} x{k} = s{k}[i];")

    lines += _body(kernel, LIBM, "      ")
    for slot, j in kernel.writes:
        lines.append(f"      s{slot}[i] = t{j};")
    lines += ["    }", "  }", "  return 0;", "}"]
    return "\n".join(lines) + "\n"


class ForeachRunner:
    """Runs a fused foreach run over CPU tensor lists in place; False when a tensor doesn't
    fit (not contiguous, shapes differ at an index): the caller runs the original ops."""

    def __init__(self, backend, kernel):
        self.backend, self.kernel = backend, kernel
        self.fn = None

    def __call__(self, slots):
        be = self.backend
        n = len(slots[0])
        arrays = []
        for lst in slots:
            if len(lst) != n:
                return False
            row = [be.native(t) for t in lst]
            arrays.append(row)
        for i in range(n):
            shape = arrays[0][i].shape
            for row in arrays:
                a = row[i]
                if a.shape != shape or not a.flags.c_contiguous or not a.flags.writeable:
                    return False
        if self.fn is None:
            self.fn = cached_kernel(_foreach_source(self.kernel), _build_foreach)
        counts = [a.size for a in arrays[0]]
        sizes = (ctypes.c_int64 * n)(*counts)
        ptrs = (ctypes.c_void_p * (n * len(arrays)))(*[address(a) for row in arrays
                                                       for a in row])
        fn = self.fn
        parallel.run_ranges(sum(counts), lambda lo, hi: fn(n, sizes, ptrs, lo, hi))
        return True


def _build_foreach(source):
    fn = build_kernel(source)
    i64p, vpp = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_void_p)
    fn.argtypes = [ctypes.c_int64, i64p, vpp, ctypes.c_int64, ctypes.c_int64]
    return fn


def compile_foreach(backend, kernel):
    """``Backend.compile_foreach`` for the CPU: a runner, or None without a C compiler."""
    if compiler() is None:
        return None
    return ForeachRunner(backend, kernel)


# -- pointwise chains ending in a reduction -----------------------------------------------------
_INIT = {"sum": "0", "mean": "0", "amax": "-1.0/0.0", "amin": "1.0/0.0"}


def _reduce_source(kernel, level=0):
    op, _, _ = kernel.reduction
    n_in = len(kernel.input_dtypes)
    out_t = C_TYPES[kernel.output_dtypes[0]]
    acc_t = "double" if op in ("sum", "mean") else out_t
    lines = ["#include <stdint.h>", _declarations(), _SINCOS, "",
             "int kernel(int nk, const int64_t* kshape, const int64_t* kstr, int nr, "
             "const int64_t* rshape, const int64_t* rstr, int64_t rcount, void** in, "
             "void** out, int64_t lo, int64_t hi) {"]
    for k, dt in enumerate(kernel.input_dtypes):
        lines.append(f"  const {C_TYPES[dt]}* restrict in{k} = (const {C_TYPES[dt]}*)in[{k}];")
    lines += [f"  {out_t}* restrict out0 = ({out_t}*)out[0];", "  int big = 0;",
              "  for (int64_t o = lo; o < hi; o++) {"]
    lines += ["    " + s for s in reduction_loop(kernel, acc_t, _INIT[op], ["0"] * n_in,
                                                 _body(kernel, level, ""), "int64_t")]
    final = "acc / rcount" if op == "mean" else "acc"
    lines += [f"    out0[o] = ({out_t})({final});", "  }", "  return big;", "}"]
    return "\n".join(lines) + "\n"


class ReductionRunner:
    """A pointwise chain and the reduction ending it, in one pass: each output element loops
    over the reduced dimensions (float32 sums accumulate in double)."""

    def __init__(self, backend, kernel):
        self.backend, self.kernel = backend, kernel
        self.fns = {}
        self.out_np = backend.xp.dtype(kernel.output_dtypes[0].np)

    def _fn(self, level):
        fn = self.fns.get(level)
        if fn is None:
            fn = cached_kernel(_reduce_source(self.kernel, level), _build_reduce)
            self.fns[level] = fn
        return fn

    def __call__(self, inputs):
        be = self.backend
        op, dims, keepdim = self.kernel.reduction
        arrays = [be.native(t) for t in inputs]
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
        kept = [d for d in range(len(shape)) if d not in dims]
        out_shape = tuple(1 if d in dims else n for d, n in enumerate(shape)) if keepdim \
            else tuple(shape[d] for d in kept)
        rcount = math.prod(shape[d] for d in dims)
        n_out = math.prod(shape[d] for d in kept)
        device = inputs[0].device
        if rcount == 0 or n_out == 0:
            if op in ("amax", "amin") and n_out:
                raise RuntimeError(f"{op}(): Expected reduction dim to have non-zero size "
                                   f"(fused {op} over an empty dimension of {list(shape)})")
            fill = np.nan if op == "mean" else 0
            return [be.wrap(np.full(out_shape, fill, dtype=self.out_np), device)]
        strides = [_strides(a, shape) for a in arrays]
        kshape = (ctypes.c_int64 * max(1, len(kept)))(*([shape[d] for d in kept] or [1]))
        kstr = (ctypes.c_int64 * max(1, len(kept) * len(arrays)))(
            *([s[d] for s in strides for d in kept] or [0]))
        rshape = (ctypes.c_int64 * len(dims))(*[shape[d] for d in dims])
        rstr = (ctypes.c_int64 * (len(dims) * len(arrays)))(*[s[d] for s in strides
                                                               for d in dims])
        out = np.empty(out_shape, dtype=self.out_np)
        ptrs_in = (ctypes.c_void_p * len(arrays))(*[address(a) for a in arrays])
        ptrs_out = (ctypes.c_void_p * 1)(address(out))
        call = (len(kept), kshape, kstr, len(dims), rshape, rstr, rcount, ptrs_in, ptrs_out)
        level = 0
        fn = self._fn(level)
        while any(parallel.run_ranges(n_out, lambda lo, hi: fn(*call, lo, hi))) and \
                level < LIBM:
            level += 1
            fn = self._fn(level)
        return [be.wrap(out, device)]


def _build_reduce(source):
    fn = build_kernel(source)
    i64p, vpp = ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_void_p)
    fn.argtypes = [ctypes.c_int, i64p, i64p, ctypes.c_int, i64p, i64p, ctypes.c_int64, vpp,
                   vpp, ctypes.c_int64, ctypes.c_int64]
    return fn
