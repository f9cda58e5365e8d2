"""Elementwise kernels for any numpy-like array module (``xp``), for ``ArrayBackend`` backends.

Each kernel is a module-level function whose first argument is the backend (``be``): it reads
``be.xp``, ``be.special`` (scipy.special for numpy, cupyx.scipy.special for cupy),
``be.native``, ``be.wrap`` and ``be.ieee``. The unary and binary math ops share one kernel each
and differ only in the function they apply: ``UNARY`` and ``BINARY`` are one row per op.
``register(backend)`` binds everything. The op layer (``ember.ops.elementwise``) has already
checked shapes and chosen the compute dtype.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from .. import _fastpath
from .._tensor import Tensor
from . import erf32, parallel
from .select import select
from .binding import bind, bind_with
from .linalg import HALF
from .value_checks import all_true

_SCALARS = (int, float, bool, complex)
_INT_BOUNDS = {}  # numpy dtype -> (min, max): iinfo costs ~1 us a call


# -- operands and results (shared by every kernel here) -------------------------------------------
def _bounds(xp, dt):
    b = _INT_BOUNDS.get(dt)
    if b is None:
        info = xp.iinfo(dt)
        b = _INT_BOUNDS[dt] = (int(info.min), int(info.max))
    return b


def operand(be, x, dt):
    """A kernel operand: a native array, or a scalar that numpy can take weakly in ``dt``."""
    if x.__class__ is Tensor or isinstance(x, Tensor):
        a = x._native
        if a is None:
            a = be.native(x)
        return a if a.dtype is dt or a.dtype == dt else a.astype(dt)
    if x.__class__ is int and dt.kind in "iu":
        # wrap out-of-range ints the way an integer tensor op does (int8 + 1000)
        lo, hi = _bounds(be.xp, dt)
        if not lo <= x <= hi:
            return be.xp.asarray(x).astype(dt)
    if dt.kind == "b" or dt.kind == "V":
        # bool, and bfloat16 (an extension dtype, kind "V"): numpy does not take a Python
        # scalar weakly in it, so round it to the dtype here as PyTorch does (b == 1.001 holds
        # for a bfloat16 1.0)
        return be.xp.asarray(x, dtype=dt)
    return x


def _with_number_in_half(dt, a, b):
    """True for a half-precision tensor times or over a Python number (the number second):
    torch's CPU mul and div compute those in float32 with the number's full value and round
    once (``original_scalar_value``), where numpy would first round the number to the half
    dtype -- 98304 is inf in float16, so a float16 1 / 98304 (a mean's gradient) gave 0, not
    1.02e-5. With the number first, torch rounds it to the half dtype, as numpy does."""
    return dt in HALF and b.__class__ in _SCALARS and a.__class__ not in _SCALARS


def _in_float32(be, f, a, b):
    """``f(a, b)`` computed in float32, the number at its full value (``_with_number_in_half``)."""
    def wide(x):
        if x.__class__ in _SCALARS:
            return x
        arr = x._native if x.__class__ is Tensor else None
        return (arr if arr is not None else be.native(x)).astype(be.xp.float32)
    return be.ieee(f, wide(a), wide(b))


def result(be, r, dt, dev):
    """A fresh array as the op's output tensor, in dtype ``dt``."""
    if r.__class__ is not be._ndarray:
        r = be.xp.asarray(r)
    if r.dtype is not dt and r.dtype != dt:
        r = r.astype(dt)
    return be.wrap(r, dev)


def into(be, self, r):
    """Write ``r`` into the in-place op's target."""
    dst = be.native(self)
    if r is not dst:
        if r.dtype.kind == "c" and dst.dtype.kind != "c":
            r = r.real
        be.xp.copyto(dst, r, casting="unsafe")
    return self


# -- unary math: helpers for what xp lacks, then one row per op ------------------------------------
def _gelu_none(be, x):
    return 0.5 * x * (1.0 + erf32.erf(be, x * (1.0 / math.sqrt(2.0))))


def _sigmoid(be, x):
    """1 / (1 + exp(-x)), PyTorch's formula. For float32/float64 it is four in-place ufunc
    passes (exp overflowing to inf gives 0, as PyTorch's): scipy's expit, kept for the other
    real dtypes, runs a scalar loop ~4x slower on float32."""
    xp = be.xp
    if x.dtype.kind == "c":
        return 1 / (1 + xp.exp(-x))
    if x.dtype.char not in "fd":
        return be.special.expit(x)
    out = xp.negative(x, out=xp.empty(x.shape, dtype=x.dtype))   # 0-d stays an array
    be.ieee(xp.exp, out, out)
    out += 1
    xp.reciprocal(out, out=out)
    return out


def _rsqrt(be, x):
    return be.ieee(be.xp.divide, 1.0, be.xp.sqrt(x))


def _lgamma(be, x):
    """scipy's gammaln, but lgamma(-inf) = +inf (C99, PyTorch; scipy gives -inf)."""
    xp = be.xp
    r = be.special.gammaln(x)
    return xp.where(xp.isneginf(x), xp.asarray(xp.inf, dtype=r.dtype), r)


def _reciprocal(be, x):
    return be.ieee(be.xp.divide, 1.0, x)


def _frac(be, x):
    return x - be.xp.trunc(x)


def _sign(be, x):
    if x.dtype.kind == "b":
        return x.copy()
    if x.dtype.kind in "fV":  # (bfloat16's kind is V) (x > 0) - (x < 0): NaN, -0.0 give +0
        return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)
    return be.xp.sign(x)


def sgn(be, x):
    """z / |z| (0 at 0) for complex values, ``sign`` for the others."""
    a = be.native(x)
    if a.dtype.kind != "c":
        return be.wrap(_sign(be, a), x.device)
    xp = be.xp
    mag = xp.abs(a)
    zero = mag == 0
    r = xp.asarray(be.ieee(xp.divide, a, xp.where(zero, 1, mag)))   # (0-d: a scalar back)
    r[zero] = 0
    return be.wrap(r, x.device)


def _relu(be, x):
    """Zero below 0; -0.0 and NaN stay, as PyTorch's (maximum(x, 0) would give +0.0)."""
    if x.dtype.kind == "b":
        return x.copy()
    if _fastpath.C is not None:   # compiled for float host arrays: csrc/activations.c
        r = _fastpath.C.relu(x)
        if r is not None:
            return r
    return be.xp.where(x < 0, x.dtype.type(0), x)


def _silu(be, x):
    return x * _sigmoid(be, x)


def _mish(be, x):
    return x * be.xp.tanh(be.xp.logaddexp(x, 0))


def _logit(be, x):
    with be.xp.errstate(divide="ignore", invalid="ignore"):
        return be.special.logit(x)


def _abs(be, x):
    return be.xp.abs(x) if x.dtype.kind != "b" else x.copy()


def _isposinf(be, x):
    xp = be.xp
    return xp.isposinf(x) if x.dtype.kind in "fc" else xp.zeros(x.shape, dtype=bool)


def _isneginf(be, x):
    xp = be.xp
    return xp.isneginf(x) if x.dtype.kind in "fc" else xp.zeros(x.shape, dtype=bool)


def _signbit(be, x):
    xp = be.xp
    return xp.signbit(x) if x.dtype.kind != "b" else xp.zeros(x.shape, dtype=bool)


def xp_fn(name):
    """A row's function: ``xp.<name>``."""
    return lambda be: getattr(be.xp, name)


def special_fn(name):
    """A row's function: ``special.<name>`` (scipy.special on the CPU)."""
    return lambda be: getattr(be.special, name)


def helper(fn):
    """A row's function: a helper above, given the backend."""
    return lambda be: partial(fn, be)


#: op name -> the function it applies (resolved per backend by ``register``)
UNARY = {
    "exp": xp_fn("exp"), "exp2": xp_fn("exp2"), "expm1": xp_fn("expm1"), "log": xp_fn("log"),
    "log2": xp_fn("log2"), "log10": xp_fn("log10"), "log1p": xp_fn("log1p"),
    "sqrt": xp_fn("sqrt"), "rsqrt": helper(_rsqrt), "sin": xp_fn("sin"), "cos": xp_fn("cos"),
    "tan": xp_fn("tan"), "asin": xp_fn("arcsin"), "acos": xp_fn("arccos"),
    "atan": xp_fn("arctan"), "sinh": xp_fn("sinh"), "cosh": xp_fn("cosh"),
    "tanh": xp_fn("tanh"), "asinh": xp_fn("arcsinh"), "acosh": xp_fn("arccosh"),
    "atanh": xp_fn("arctanh"), "sigmoid": helper(_sigmoid), "erf": special_fn("erf"),
    "erfc": special_fn("erfc"), "erfinv": special_fn("erfinv"),
    "reciprocal": helper(_reciprocal), "silu": helper(_silu), "mish": helper(_mish),
    "lgamma": helper(_lgamma), "digamma": special_fn("digamma"),
    "logit": helper(_logit), "deg2rad": xp_fn("deg2rad"), "rad2deg": xp_fn("rad2deg"),
    "neg": xp_fn("negative"), "abs": helper(_abs), "sign": helper(_sign),
    "floor": xp_fn("floor"), "ceil": xp_fn("ceil"), "trunc": xp_fn("trunc"),
    "frac": helper(_frac), "square": xp_fn("square"), "relu": helper(_relu),
    "positive": xp_fn("positive"), "conj_physical": xp_fn("conj"),
    "bitwise_not": xp_fn("invert"), "isnan": xp_fn("isnan"), "isinf": xp_fn("isinf"),
    "isfinite": xp_fn("isfinite"), "isposinf": helper(_isposinf),
    "isneginf": helper(_isneginf), "signbit": helper(_signbit),
    "logical_not": xp_fn("logical_not"),
}
PREDICATES = frozenset({"isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit",
                        "logical_not"})
INT_IDENTITY = frozenset({"floor", "ceil", "trunc"})  # integer inputs are already integral
_NO_OUT = frozenset({"sign", "relu", "abs"})            # must not write into their input

# how an integer/bool input short-cuts a unary op
_COMPUTE, _COPY, _ALL_FALSE, _ALL_TRUE = 0, 1, 2, 3


def _int_rule(name):
    if name in INT_IDENTITY:
        return _COPY
    if name in ("isnan", "isinf"):
        return _ALL_FALSE
    if name == "isfinite":
        return _ALL_TRUE
    return _COMPUTE


def unary(be, f, int_rule, predicate, real_out, x, compute):
    """``f`` elementwise in ``compute``: the kernel of every ``UNARY`` op."""
    a = be.native(x)
    dt = compute.np
    if a.dtype != dt:
        a = a.astype(dt)
    if int_rule and a.dtype.kind in "iub":
        xp = be.xp
        r = (a.copy() if int_rule == _COPY else xp.zeros(a.shape, dtype=bool)
             if int_rule == _ALL_FALSE else xp.ones(a.shape, dtype=bool))
    else:
        r = parallel.ufunc(be, f, bool if predicate else dt, a) \
            if a.size >= parallel.MIN_PARALLEL else None
        if r is None:
            r = be.ieee(f, a)
    if predicate:
        return be.wrap(be.xp.asarray(r, dtype=bool), x.device)
    if real_out and dt.kind == "c":  # |complex| is real
        return result(be, r, r.dtype, x.device)
    return result(be, r, dt, x.device)


def unary_(be, f, int_identity, out_ok, x, compute):
    """The in-place form (``exp_``) of a ``UNARY`` op (``compute`` is ``x``'s dtype: the op layer
    refuses results that can't be written back)."""
    a = be.native(x)
    if int_identity and a.dtype.kind in "iub":
        return x
    with be.xp.errstate(all="ignore"):
        if out_ok and a.dtype.kind == "f":
            try:
                f(a, out=a)
                return x
            except TypeError:
                pass
        return into(be, x, f(a))


# -- rounding and clean-up -------------------------------------------------------------------------
def _round(xp, a, decimals):
    if a.dtype.kind in "iub":
        return a.copy() if decimals >= 0 else xp.round(a, decimals)
    return xp.round(a, decimals)  # numpy rounds half to even, as PyTorch does


def round_kernel(be, x, decimals):
    return be.wrap(_round(be.xp, be.native(x), decimals), x.device)


def round_inplace(be, x, decimals):
    return into(be, x, _round(be.xp, be.native(x), decimals))


def _nan_to_num(xp, a, nan, posinf, neginf):
    if a.dtype.kind in "iub":
        return a.copy()
    return xp.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)


def nan_to_num(be, x, nan, posinf, neginf):
    return be.wrap(_nan_to_num(be.xp, be.native(x), nan, posinf, neginf), x.device)


def nan_to_num_(be, x, nan, posinf, neginf):
    return into(be, x, _nan_to_num(be.xp, be.native(x), nan, posinf, neginf))


# -- activations with parameters -------------------------------------------------------------------
def gelu(be, x, approximate, compute):
    xp = be.xp
    a = operand(be, x, compute.np)
    with xp.errstate(all="ignore"):
        if approximate == "tanh":
            c = math.sqrt(2.0 / math.pi)
            r = 0.5 * a * (1.0 + xp.tanh(c * (a + 0.044715 * a * a * a)))
        else:
            r = _gelu_none(be, a)
    return result(be, r, compute.np, x.device)


def softplus(be, x, beta, threshold, compute):
    xp = be.xp
    a = operand(be, x, compute.np)
    with xp.errstate(all="ignore"):
        soft = xp.log1p(xp.exp(a * beta)) / beta
        r = xp.where(a * beta > threshold, a, soft)
    return result(be, r, compute.np, x.device)


def leaky_relu(be, x, slope):
    xp = be.xp
    a = be.native(x)
    r = be.ieee(xp.multiply, a, slope)
    if 0 < slope <= 1 and a.dtype.kind == "f":
        # x > 0 ? x : slope x is max(x, slope x) here (NaN stays NaN, -0.0 and the infinities
        # stay themselves), without where's branch per element
        r = xp.maximum(a, r, out=r) if r.ndim else xp.maximum(a, r)   # (0-d: a scalar)
        return result(be, r, a.dtype, x.device)
    return result(be, select(xp, a > 0, a, r), a.dtype, x.device)


def elu(be, x, alpha, scale, input_scale):
    xp = be.xp
    a = be.native(x)
    with xp.errstate(all="ignore"):
        r = xp.where(a > 0, a * scale, alpha * scale * xp.expm1(a * input_scale))
    return result(be, r, a.dtype, x.device)


def hardtanh(be, x, lo, hi):
    xp = be.xp
    a = be.native(x)
    return result(be, xp.minimum(xp.maximum(a, lo), hi), a.dtype, x.device)


# -- binary math: helpers, then one row per op -----------------------------------------------------
def _is_int(a, b):
    d = a.dtype if a.__class__ not in _SCALARS else b.dtype
    return d.kind in "iu"


def _check_int_zero(be, op, b):
    if b.__class__ in _SCALARS:
        if b == 0:
            raise RuntimeError("ZeroDivisionError")
    elif b.dtype.kind in "iu":
        all_true(be, op, b != 0, RuntimeError, "ZeroDivisionError")


def _floor_divide(be, a, b):
    if _is_int(a, b):
        _check_int_zero(be, "floor_divide", b)
    return be.xp.floor_divide(a, b)


def _remainder(be, a, b):
    if _is_int(a, b):
        _check_int_zero(be, "remainder", b)
    return be.xp.remainder(a, b)


def _fmod(be, a, b):
    if _is_int(a, b):
        _check_int_zero(be, "fmod", b)
    return be.xp.fmod(a, b)


# a float tensor to these scalar powers, as PyTorch computes them (ATen's pow special cases):
# exact products and roots instead of powf, which is ~30x slower and rounds x**3 differently
_POW_SPECIAL = {
    2: lambda xp, a: xp.multiply(a, a),
    3: lambda xp, a: xp.multiply(xp.multiply(a, a), a),
    0.5: lambda xp, a: xp.sqrt(a),
    -0.5: lambda xp, a: xp.reciprocal(xp.sqrt(a)),
    -1: lambda xp, a: xp.reciprocal(a),
    -2: lambda xp, a: xp.reciprocal(xp.multiply(a, a)),
}


def _pow(be, a, b):
    xp = be.xp
    if _is_int(a, b):
        if b.__class__ in _SCALARS:
            if b < 0:  # the op layer refuses these; a backend called directly still must
                raise RuntimeError("Integers to negative integer powers are not allowed.")
        elif not be.values_on_host or (b.size and bool((b < 0).any())):
            # a device backend computes the negative-exponent rule everywhere rather than
            # read the check back (the result is the same where no exponent is negative)
            return _int_pow_negative(xp, a, b)
    elif (b.__class__ is float or b.__class__ is int) and a.__class__ not in _SCALARS and \
            a.dtype.kind == "f":
        special = _POW_SPECIAL.get(b)
        if special is not None:
            return special(xp, a)
    return xp.power(a, b)


def _int_pow_negative(xp, a, b):
    """Integer powers with some negative exponents, as PyTorch computes them: a ** -n is 1
    for a == 1, +-1 for a == -1 (by parity of n), and 0 otherwise (0 ** -n included)."""
    neg = b < 0
    r = xp.power(a, xp.where(neg, 0, b))
    one = xp.ones((), dtype=r.dtype)
    small = xp.where(a == 1, one, xp.where(a == -1, xp.where(b % 2 == 0, one, -one), 0))
    return xp.where(neg, small, r).astype(r.dtype, copy=False)


def _logaddexp(be, a, b):
    xp = be.xp
    if (a.dtype if a.__class__ not in _SCALARS else b.dtype).kind != "c":
        return xp.logaddexp(a, b)
    # complex: m + log(1 + exp(other - m)) around the operand of larger real part
    a, b = xp.asarray(a), xp.asarray(b)
    first = a.real >= b.real
    m = xp.where(first, a, b)
    o = xp.where(first, b, a)
    return m + xp.log1p(xp.exp(o - m))


def _xlogy(be, a, b):
    with be.xp.errstate(all="ignore"):
        return be.special.xlogy(a, b)


#: op name -> the function it applies (resolved per backend by ``register``)
BINARY = {
    "mul": xp_fn("multiply"), "maximum": xp_fn("maximum"), "minimum": xp_fn("minimum"),
    "fmax": xp_fn("fmax"), "fmin": xp_fn("fmin"), "remainder": helper(_remainder),
    "fmod": helper(_fmod), "floor_divide": helper(_floor_divide), "pow": helper(_pow),
    "atan2": xp_fn("arctan2"), "hypot": xp_fn("hypot"), "logaddexp": helper(_logaddexp),
    "logaddexp2": xp_fn("logaddexp2"),
    "copysign": xp_fn("copysign"), "xlogy": helper(_xlogy),
    "eq": xp_fn("equal"), "ne": xp_fn("not_equal"), "lt": xp_fn("less"),
    "le": xp_fn("less_equal"), "gt": xp_fn("greater"), "ge": xp_fn("greater_equal"),
    "logical_and": xp_fn("logical_and"), "logical_or": xp_fn("logical_or"),
    "logical_xor": xp_fn("logical_xor"),
    "bitwise_and": xp_fn("bitwise_and"), "bitwise_or": xp_fn("bitwise_or"),
    "bitwise_xor": xp_fn("bitwise_xor"), "bitwise_left_shift": xp_fn("left_shift"),
    "bitwise_right_shift": xp_fn("right_shift"),
}
TO_BOOL = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                     "logical_xor"})


def binary(be, f, out_dtype, a, b, compute):
    """``f(a, b)`` in ``compute`` (bool results for comparisons): every ``BINARY`` op."""
    dt = compute.np
    if f is be.xp.multiply and _with_number_in_half(dt, a, b):
        return result(be, _in_float32(be, f, a, b), dt, a.device)
    x, y = operand(be, a, dt), operand(be, b, dt)
    r = None
    if (x.__class__ is be._ndarray and x.size >= parallel.MIN_PARALLEL) or \
            (y.__class__ is be._ndarray and y.size >= parallel.MIN_PARALLEL):
        r = parallel.ufunc(be, f, out_dtype or dt, x, y)
    if r is None:
        r = be.ieee(f, x, y)
    return result(be, r, out_dtype or dt, a.device if isinstance(a, Tensor) else b.device)


def binary_(be, f, a, b, compute):
    """The in-place form (``mul_``) of a ``BINARY`` op."""
    dt = compute.np
    if f is be.xp.multiply and _with_number_in_half(dt, a, b):
        return into(be, a, _in_float32(be, f, a, b).astype(dt))
    return into(be, a, be.ieee(f, operand(be, a, dt), operand(be, b, dt)))


# -- add and sub (with alpha) ----------------------------------------------------------------------
def _scaled(be, y, alpha, dt):
    if alpha.__class__ is int and alpha == 1:
        return y
    # a scalar operand is scaled in Python precision, then taken like any scalar operand
    return (operand(be, y * alpha, dt) if y.__class__ in _SCALARS
            else be.xp.multiply(y, operand(be, alpha, dt)))


def add_sub(be, ufunc, a, b, alpha, compute):
    """``a + alpha * b`` (``ufunc`` = add) or ``a - alpha * b`` (subtract)."""
    dt = compute.np
    # inf - inf is nan without a warning, as in PyTorch (be.ieee)
    if a.__class__ is Tensor and b.__class__ is Tensor and alpha.__class__ is int and \
            alpha == 1:  # the per-op floor: two tensors already in the compute dtype
        x, y = a._native, b._native
        if x is None:
            x = be.native(a)
        if y is None:
            y = be.native(b)
        if x.dtype is dt and y.dtype is dt and x.size < parallel.MIN_PARALLEL:
            return be.wrap(be.ieee(ufunc, x, y), a.device)
    x, y = operand(be, a, dt), _scaled(be, operand(be, b, dt), alpha, dt)
    r = None
    if (x.__class__ is be._ndarray and x.size >= parallel.MIN_PARALLEL) or \
            (y.__class__ is be._ndarray and y.size >= parallel.MIN_PARALLEL):
        r = parallel.ufunc(be, ufunc, dt, x, y)
    if r is None:
        r = be.ieee(ufunc, x, y)
    return result(be, r, dt, a.device if isinstance(a, Tensor) else b.device)


def _in_place(ufunc, x, y):
    return ufunc(x, y, out=x)


def add_sub_(be, ufunc, a, b, alpha, compute):
    dt = compute.np
    x = be.native(a)
    y = _scaled(be, operand(be, b, dt), alpha, dt)
    if x.dtype == dt:
        be.ieee(_in_place, ufunc, x, y)
        return a
    return into(be, a, be.ieee(ufunc, x.astype(dt), y))


# -- division with rounding modes ------------------------------------------------------------------
def _div(be, x, y, mode):
    xp = be.xp
    if mode is None:
        return be.ieee(xp.true_divide, x, y)
    with xp.errstate(all="ignore"):
        int_inputs = (x.dtype.kind if x.__class__ not in _SCALARS else y.dtype.kind) in "iu"
        if int_inputs:
            _check_int_zero(be, "div", y)
        if mode == "floor":
            return xp.floor_divide(x, y)
        if int_inputs:
            q = xp.floor_divide(x, y)
            fix = (xp.remainder(x, y) != 0) & ((x < 0) != (y < 0))
            return q + fix
        return xp.trunc(xp.true_divide(x, y))


def div(be, a, b, mode, compute):
    dt = compute.np
    if mode is None and _with_number_in_half(dt, a, b):
        r = _in_float32(be, be.xp.true_divide, a, b)
    else:
        r = _div(be, operand(be, a, dt), operand(be, b, dt), mode)
    return result(be, r, dt, a.device if isinstance(a, Tensor) else b.device)


def div_(be, a, b, mode, compute):
    dt = compute.np
    if mode is None and _with_number_in_half(dt, a, b):
        r = _in_float32(be, be.xp.true_divide, a, b).astype(dt)
    else:
        r = _div(be, operand(be, a, dt), operand(be, b, dt), mode)
    return into(be, a, r)


# -- where / clamp ---------------------------------------------------------------------------------
def where(be, cond, a, b, compute):
    dt = compute.np
    r = select(be.xp, be.native(cond), operand(be, a, dt), operand(be, b, dt))
    return result(be, r, dt, cond.device)


def _clamp(be, x, lo, hi, dt):
    xp = be.xp
    r = x
    if lo is not None:
        r = xp.maximum(r, operand(be, lo, dt))
    if hi is not None:
        r = xp.minimum(r, operand(be, hi, dt))
    return r if r is not x else x.copy()


def clamp(be, x, lo, hi, compute):
    dt = compute.np
    return result(be, _clamp(be, operand(be, x, dt), lo, hi, dt), dt, x.device)


def clamp_(be, x, lo, hi, compute):
    dt = compute.np
    return into(be, x, _clamp(be, operand(be, x, dt), lo, hi, dt))


def clamp_min(be, x, lo, compute):
    return clamp(be, x, lo, None, compute)


def clamp_max(be, x, hi, compute):
    return clamp(be, x, None, hi, compute)


#: the kernels that are not table rows of UNARY/BINARY
TABLE = {
    "round": round_kernel, "round_": round_inplace, "nan_to_num": nan_to_num,
    "nan_to_num_": nan_to_num_, "gelu": gelu, "softplus": softplus, "leaky_relu": leaky_relu,
    "elu": elu, "hardtanh": hardtanh, "div": div, "div_": div_, "where": where,
    "clamp": clamp, "clamp_": clamp_, "clamp_min": clamp_min, "clamp_max": clamp_max,
    "sgn": sgn,
}


def register(backend) -> None:
    """Fill ``backend.kernels`` with every elementwise kernel, bound to ``backend``."""
    for name, resolve in UNARY.items():
        f = resolve(backend)
        bind_with(backend, name, unary, f, _int_rule(name), name in PREDICATES, name == "abs")
        if name not in PREDICATES:
            bind_with(backend, name + "_", unary_, f, name in INT_IDENTITY,
                      name not in _NO_OUT)
    for name, resolve in BINARY.items():
        f = resolve(backend)
        bind_with(backend, name, binary, f, bool if name in TO_BOOL else None)
        bind_with(backend, name + "_", binary_, f)
    xp = backend.xp
    for name, ufunc in (("add", xp.add), ("sub", xp.subtract)):
        bind_with(backend, name, add_sub, ufunc)
        bind_with(backend, name + "_", add_sub_, ufunc)
    bind(backend, TABLE)
    if _fastpath.C is not None and xp is np:
        _compile_common_cases(backend)


def _compile_common_cases(backend):
    """The unary, binary and add/sub kernels of a numpy backend behind their compiled common
    case (csrc/kernels.c: operands already in the compute dtype, small enough for one thread),
    which calls the Python kernel above for everything else."""
    C = _fastpath.C
    kernels = backend.kernels

    def compiled(kind, name, f, out):
        out = None if out is None else np.dtype(out)
        kernels.register(name, C.UfuncKernel(kind, f, out, kernels.get(name), backend.wrap,
                                             parallel.MIN_PARALLEL, name))

    for name, resolve in UNARY.items():
        # (|complex| is real: the compiled kernel sees a result not in the compute dtype and
        # hands abs of a complex tensor to the Python kernel)
        compiled(2, name, resolve(backend), bool if name in PREDICATES else None)
    for name, resolve in BINARY.items():
        compiled(0, name, resolve(backend), bool if name in TO_BOOL else None)
    for name, ufunc in (("add", np.add), ("sub", np.subtract)):
        compiled(1, name, ufunc, None)
    compiled(3, "div", np.true_divide, None)
