"""ember dtypes as OpenCL C types: names, literals, conversions, kernel scalar arguments.

Every place that writes OpenCL C asks this module how a dtype is spelled and how a value moves
from one dtype to another, so the conversion rules (PyTorch's, which on x86 are numpy's) live in
one spot.
"""
from __future__ import annotations

import numpy as np

from ember.runtime import dtypes as D

# bool lives in memory as one byte holding 0 or 1 (OpenCL forbids `bool` in buffers);
# bfloat16 has no OpenCL type: it is stored as its 16 bits and only ever converted (see below)
CTYPE = {D.bool_: "uchar", D.uint8: "uchar", D.int8: "char", D.int16: "short", D.int32: "int",
         D.int64: "long", D.float16: "half", D.float32: "float", D.float64: "double",
         D.bfloat16: "ushort",
         # complex values are (real, imaginary) vectors: the layout of numpy's complex types
         D.complex64: "float2", D.complex128: "double2"}
UNSIGNED = {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong", "uchar": "uchar"}
BITS = {"uchar": 8, "char": 8, "short": 16, "int": 32, "long": 64}
FLOATS = (D.float16, D.float32, D.float64)
INTS = (D.uint8, D.int8, D.int16, D.int32, D.int64)

# dtypes every OpenCL device computes in; half and double depend on extensions
BASE_DTYPES = frozenset({D.bool_, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float32})


# stored, not computed: kernels see these converted to the dtype given here (the dispatcher
# does it: Backend.storage_dtypes); only copies and conversions read or write their bits
STORAGE_DTYPES = {D.bfloat16: D.float32}

# round to nearest even, as ml_dtypes (the CPU's bfloat16) does; NaN stays a quiet NaN
BF16_HELPERS = """
inline float ember_bf16_to_float(ushort h) { return as_float(((uint)h) << 16); }
inline ushort ember_float_to_bf16(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}"""


def supported_dtypes(extensions: str) -> frozenset:
    """The dtypes a device with these extensions stores.

    bfloat16 is always stored (16 bits, computed through float32: ``STORAGE_DTYPES``). Complex
    values are float2/double2 vectors with the arithmetic written out in the kernels
    (``codegen.complex_prelude``); complex128 needs fp64 like float64.
    """
    ext = set(extensions.split())
    out = set(BASE_DTYPES) | set(STORAGE_DTYPES) | {D.complex64}
    if "cl_khr_fp64" in ext:
        out.add(D.float64)
        out.add(D.complex128)
    if "cl_khr_fp16" in ext:
        out.add(D.float16)
    return frozenset(out)


def ctype(d) -> str:
    return CTYPE[d]


def is_float(d) -> bool:
    return d.category == D.FLOATING


def is_int(d) -> bool:
    return d.category == D.INTEGRAL


def is_complex(d) -> bool:
    return d.category == D.COMPLEX


def np_type(d):
    """numpy scalar type a kernel argument of dtype ``d`` is packed as."""
    return np.uint8 if d is D.bool_ else d.np.type


def lit(value, d) -> str:
    """A C literal of dtype ``d`` (no double literal reaches a float kernel: it needs fp64)."""
    if is_complex(d):
        v = complex(value)
        r = d.to_real()
        return f"(({CTYPE[d]})({lit(v.real, r)}, {lit(v.imag, r)}))"
    if d is D.float64:
        return f"((double){float(value)!r})"
    if is_float(d):
        v = float(value)
        text = "INFINITY" if v == float("inf") else "(-INFINITY)" if v == -float("inf") else \
            "NAN" if v != v else f"{v!r}f"
        return f"(({CTYPE[d]}){text})"
    return f"(({CTYPE[d]}){int(value)})"


def cvt(expr: str, src, dst) -> str:
    """C expression converting ``expr`` (a value of dtype ``src``) to dtype ``dst``.

    Matches numpy's ``astype`` on x86, which is what the CPU backend does: anything to bool is
    ``!= 0`` (NaN is true); floats to narrow integers go through int32 (so -1.5 -> uint8 255).
    """
    if src is dst:
        return expr
    if src is D.bfloat16:
        return cvt(f"ember_bf16_to_float({expr})", D.float32, dst)
    if dst is D.bfloat16:
        return f"ember_float_to_bf16({cvt(expr, src, D.float32)})"
    cd = CTYPE[dst]
    if is_complex(src):
        if is_complex(dst):
            return f"convert_{cd}({expr})"
        if dst is D.bool_:
            return f"(uchar)((({expr}).x != 0) || (({expr}).y != 0))"
        return cvt(f"({expr}).x", src.to_real(), dst)  # the real part, as numpy's astype
    if is_complex(dst):
        real = dst.to_real()
        return f"(({cd})({cvt(expr, src, real)}, ({CTYPE[real]})0))"
    if dst is D.bool_:
        return f"(uchar)(({expr}) != 0)"
    if is_float(src) and dst in (D.uint8, D.int8, D.int16):
        return f"({cd})(int)({expr})"
    return f"({cd})({expr})"


def pack_scalar(value, d):
    """A Python scalar as dtype ``d``'s kernel argument, wrapping integers like a cast does."""
    if d is D.bool_:
        return np.uint8(1 if value else 0)
    if is_int(d):
        v = int(value)
        bits = d.itemsize * 8
        if d.is_signed:
            v = (v + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
        else:
            v %= 1 << bits
        return d.np.type(v)
    if is_float(d):
        if isinstance(value, complex):
            value = value.real
        return d.np.type(float(value))
    if is_complex(d):
        return d.np.type(complex(value))
    raise TypeError(f"opencl: no kernel scalar of dtype {d}")


def extensions_pragmas(dtypes) -> str:
    lines = []
    if D.float64 in dtypes:
        lines.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if D.float16 in dtypes:
        lines.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
    if D.bfloat16 in dtypes:
        lines.append(BF16_HELPERS)
    return "\n".join(lines)
