"""Accumulating writes (``index_put_(accumulate=True)``, ``scatter`` with a reduction,
``index_add``, and the kit's ``add_at`` under deterministic mode): deterministic kernels instead
of cupy's atomics.

cupy's ``add.at`` adds with atomics (the order of the additions, and so the rounding, changes
from run to run; bool, int8/16 and complex are not covered) and it has no ``multiply.at`` at all.
Here every write is a (target offset, value) pair; the pairs are sorted stably by offset and each
offset's values are applied in their original order -- the order numpy's ``ufunc.at`` uses, so
results match the CPU backend bit for bit (float16 included: each step is rounded to half
precision as numpy does) -- except that a segment longer than ``LONG`` writes is folded in
``CHUNK``-long pieces first, in parallel, and the pieces applied in order (still deterministic).
Offsets are computed from the target view's strides, so the target is written in place whatever
its layout; nothing is read back to the host (two launches sized by the write count).
"""
from __future__ import annotations

import numpy as np

from ember.kit.value_checks import bounds

from . import prelude
from .launch import launch

# dtype char -> (C storage type, add, multiply); ints wrap through unsigned arithmetic
_INT = "(%(t)s)((%(u)s)a %(op)s (%(u)s)b)"
TYPES = {
    "b1": ("unsigned char", "(unsigned char)((a | b) != 0)", "(unsigned char)(a && b)"),
    "u1": ("unsigned char", _INT % {"t": "unsigned char", "u": "unsigned int", "op": "+"},
           _INT % {"t": "unsigned char", "u": "unsigned int", "op": "*"}),
    "i1": ("signed char", _INT % {"t": "signed char", "u": "unsigned int", "op": "+"},
           _INT % {"t": "signed char", "u": "unsigned int", "op": "*"}),
    "i2": ("short", _INT % {"t": "short", "u": "unsigned int", "op": "+"},
           _INT % {"t": "short", "u": "unsigned int", "op": "*"}),
    "i4": ("int", _INT % {"t": "int", "u": "unsigned int", "op": "+"},
           _INT % {"t": "int", "u": "unsigned int", "op": "*"}),
    "i8": ("long long", _INT % {"t": "long long", "u": "unsigned long long", "op": "+"},
           _INT % {"t": "long long", "u": "unsigned long long", "op": "*"}),
    "f2": ("unsigned short", "ember_f2h(ember_h2f(a) + ember_h2f(b))",
           "ember_f2h(ember_h2f(a) * ember_h2f(b))"),
    "f4": ("float", "a + b", "a * b"),
    "f8": ("double", "a + b", "a * b"),
    "c8": ("ember_c64", "ember_c64_add(a, b)", "ember_c64_mul(a, b)"),
    "c16": ("ember_c128", "ember_c128_add(a, b)", "ember_c128_mul(a, b)"),
}

# IEEE half <-> float by bits (numpy's npy_half conversions: round to nearest even, NaN payload)
C_HALF = r"""
__device__ __forceinline__ float ember_bits_f(unsigned int u) {
  union { unsigned int u; float f; } v; v.u = u; return v.f;
}
__device__ __forceinline__ unsigned int ember_f_bits(float f) {
  union { unsigned int u; float f; } v; v.f = f; return v.u;
}
__device__ __forceinline__ float ember_h2f(unsigned short h) {
  unsigned int sign = (unsigned int)(h >> 15) << 31, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {
    if (m == 0) return ember_bits_f(sign);
    int s = -1;
    do { s++; m <<= 1; } while ((m & 0x400u) == 0);
    return ember_bits_f(sign | ((unsigned int)(112 - s) << 23) | ((m & 0x3ffu) << 13));
  }
  if (e == 31) return ember_bits_f(sign | 0x7f800000u | (m << 13));
  return ember_bits_f(sign | ((e + 112u) << 23) | (m << 13));
}
__device__ __forceinline__ unsigned short ember_f2h(float x) {
  const unsigned int f = ember_f_bits(x);
  const unsigned int sign = (f >> 16) & 0x8000u, e = (f >> 23) & 0xffu, m = f & 0x7fffffu;
  if (e == 0xffu) {
    if (m == 0) return (unsigned short)(sign | 0x7c00u);
    unsigned int r = 0x7c00u + (m >> 13);
    if (r == 0x7c00u) r++;
    return (unsigned short)(sign | r);
  }
  const int ue = (int)e - 127;
  if (ue > 15) return (unsigned short)(sign | 0x7c00u);
  if (ue >= -14) {
    const unsigned int hm = m >> 13, rest = m & 0x1fffu;
    unsigned int h = sign | ((unsigned int)(ue + 15) << 10) | hm;
    if (rest > 0x1000u || (rest == 0x1000u && (hm & 1u))) h++;  /* a carry rounds up the exponent */
    return (unsigned short)h;
  }
  if (ue < -25) return (unsigned short)sign;
  const unsigned int full = m | 0x800000u;
  const int shift = -ue - 1;
  unsigned int hm = full >> shift;
  const unsigned int rest = full & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rest > half || (rest == half && (hm & 1u))) hm++;
  return (unsigned short)(sign | hm);
}
"""

# complex values as (real, imaginary) pairs, with the GPU backends' shared add and multiply
C_COMPLEX = r"""
struct ember_c64 { float x, y; };
struct ember_c128 { double x, y; };
EMBER_COMPLEX_OPS(ember_c64, ember_c64)
EMBER_COMPLEX_OPS(ember_c128, ember_c128)
"""


#: positions per chunk thread in the first pass; segments longer than LONG are combined from
#: chunk partials (deterministic, but not numpy's strict one-by-one order), shorter ones are
#: applied one value at a time from the target's value, as numpy's ``ufunc.at`` does
CHUNK = 32
LONG = 8 * CHUNK


def _kernels(code: str) -> str:
    t, add, mul = TYPES[code]
    out = []
    for op, expr in (("add", add), ("mul", mul)):
        out.append(f"""
__device__ __forceinline__ {t} ember_{op}_{code}({t} a, {t} b) {{ return {expr}; }}
/* pass 1, a thread per chunk of CHUNK sorted positions: the fold of each run of one offset */
extern "C" __global__ void ordered_{op}_{code}_pieces(const long long* offs,
    const {t}* vals, const long long* order, {t}* pieces, long long total) {{
  EMBER_LOOP(c, (total + {CHUNK} - 1) / {CHUNK}) {{
    const long long end = (c + 1) * {CHUNK} < total ? (c + 1) * {CHUNK} : total;
    long long p = c * {CHUNK};
    while (p < end) {{
      const long long begin = p, o = offs[order[p]];
      {t} acc = vals[order[p]];
      for (p++; p < end && offs[order[p]] == o; p++) acc = ember_{op}_{code}(acc, vals[order[p]]);
      pieces[begin] = acc;
    }}
  }}
}}
/* pass 2, a thread per sorted position; the first of each offset applies the segment */
extern "C" __global__ void ordered_{op}_{code}({t}* target, const long long* offs,
    const {t}* vals, const long long* order, const {t}* pieces, long long total) {{
  EMBER_LOOP(j, total) {{
    const long long o = offs[order[j]];
    if (j > 0 && offs[order[j - 1]] == o) continue;
    {t} acc = target[o];
    if (j + {LONG} < total && offs[order[j + {LONG}]] == o) {{
      acc = ember_{op}_{code}(acc, pieces[j]);
      for (long long k = (j / {CHUNK} + 1) * {CHUNK}; k < total && offs[order[k]] == o;
           k += {CHUNK})
        acc = ember_{op}_{code}(acc, pieces[k]);
    }} else {{
      for (long long p = j; p < total && offs[order[p]] == o; p++)
        acc = ember_{op}_{code}(acc, vals[order[p]]);
    }}
    target[o] = acc;
  }}
}}""")
    return "\n".join(out)


def source() -> str:
    """One program with the add and multiply kernels of every dtype."""
    return "\n".join([prelude.C_PRELUDE, C_HALF, C_COMPLEX] + [_kernels(c) for c in TYPES])


def _code(np_dtype) -> str:
    if np_dtype.kind == "b":
        return "b1"
    return f"{np_dtype.kind}{np_dtype.itemsize}"


def _element_offsets(xp, a, key):
    """Element offsets (from ``a``'s first element) of ``a[key]``, shaped like ``a[key]``;
    the sum over dims of each coordinate times its stride, indexed with ``key`` (views of
    stride-0 broadcasts: nothing target-sized is allocated)."""
    isz = a.itemsize
    nd = a.ndim
    total = None
    for d in range(nd):
        coord = xp.arange(a.shape[d], dtype=np.int64) * (a.strides[d] // isz)
        coord = xp.broadcast_to(coord.reshape((1,) * d + (-1,) + (1,) * (nd - d - 1)), a.shape)
        part = coord[key]
        total = part if total is None else total + part
    return total


def accumulate(be, a, key, values, op):
    """``a[key] op= values`` with repeated positions applied in order, deterministically, in
    place in the array ``a`` (a view of device memory); ``op`` is "add" or "mul". The writes are
    sorted stably by target offset; a segment of one offset up to LONG writes long is applied
    one value at a time in numpy's ``ufunc.at`` order (bit for bit the CPU's result), a longer
    one from the partial folds of CHUNK-position pieces, in order -- parallel over pieces, so a
    hot index (a padding token) does not serialize. No value is read back: the launch sizes are
    the write count, known on the host."""
    xp = be.xp
    if a.ndim == 0:
        a = a.reshape(1)
    grid = _element_offsets(xp, a, key)
    offs = xp.ascontiguousarray(grid.reshape(-1))
    total = offs.shape[0]
    if total == 0:
        return
    vals = xp.ascontiguousarray(
        xp.broadcast_to(xp.asarray(values).astype(a.dtype, copy=False), grid.shape)).reshape(-1)
    order = xp.argsort(offs, kind="stable").astype(np.int64, copy=False)
    pieces = xp.empty(total, dtype=a.dtype)
    code = _code(a.dtype)
    prog = be.program("ordered", source)
    launch(be, prog, f"ordered_{op}_{code}_pieces", (total + CHUNK - 1) // CHUNK,
           (offs, vals, order, pieces, np.int64(total)))
    launch(be, prog, f"ordered_{op}_{code}", total,
           (a, offs, vals, order, pieces, np.int64(total)))


# -- the kernels that write through accumulate ----------------------------------------------------
def _key(be, indices, a):
    out = []
    for d, t in enumerate(indices):
        if t is None:
            out.append(slice(None))
        else:
            i = be.native(t)
            bounds(be, "index_put_", i, a.shape[d], d, prefix="index_put_: ", negative=True)
            out.append(i)
    return tuple(out)


def index_put_(be, x, indices, values, accumulate_):
    a = be.native(x)
    k = _key(be, indices, a)
    if accumulate_:
        accumulate(be, a, k, be.native(values), "add")
    else:
        a[k] = be.native(values)
    return x


def _scatter_key(xp, shape, dim, i):
    """The key addressing ``out[..., i[j], ...]`` at every position ``j`` of the index."""
    key = []
    for d, n in enumerate(shape):
        if d == dim:
            key.append(i)
        else:
            key.append(xp.arange(n, dtype=np.int64).reshape((1,) * d + (-1,) +
                                                            (1,) * (len(shape) - d - 1)))
    return tuple(key)


def scatter(be, x, dim, index, src, reduce):
    xp = be.xp
    op = "scatter_add" if reduce == "add" else "scatter"
    out = be.native(x).copy()
    i, s = be.native(index), be.native(src)
    if out.ndim == 0 or i.ndim == 0:
        view = out.reshape(-1)
        bounds(be, op, i, view.shape[0], dim, RuntimeError, f"{op}: ")
        i, s = i.reshape(-1), s.reshape(-1)[:i.size]
        k = (i,)
    else:
        bounds(be, op, i, out.shape[dim], dim, RuntimeError, f"{op}: ")
        view = out
        if s.ndim:
            s = s[tuple(slice(0, n) for n in i.shape)]
        else:
            s = xp.broadcast_to(s, i.shape)
        k = _scatter_key(xp, i.shape, dim, i)
    if reduce in ("add", "multiply"):
        accumulate(be, view, k, s, "add" if reduce == "add" else "mul")
    else:
        view[k] = s
    return be.wrap(out, x.device)


def index_add(be, x, dim, index, source, alpha):
    out = be.native(x).copy()
    view = out.reshape(1) if out.ndim == 0 else out
    i, s = be.native(index), be.native(source)
    bounds(be, "index_add", i, view.shape[dim], dim, RuntimeError, "index_add: ")
    s = s.reshape(view.shape[:dim] + (i.size,) + view.shape[dim + 1:])
    if alpha != 1:
        s = (s * alpha).astype(out.dtype, copy=False)
    accumulate(be, view, (slice(None),) * dim + (i.reshape(-1),), s, "add")
    return be.wrap(out, x.device)


TABLE = {"index_put_": index_put_, "scatter": scatter, "index_add": index_add}
