"""Elementwise kernels for any numpy-like array module (``xp``), for ``ArrayBackend`` backends.

``register(backend)`` fills ``backend.kernels`` with one kernel per elementwise op, written once
against ``backend.xp`` and ``backend.special`` (scipy.special for numpy, cupyx.scipy.special for
cupy). The op layer (``ember.ops.elementwise``) has already checked shapes and chosen the
compute dtype.
"""
from __future__ import annotations

import math

from .._tensor import Tensor
from .array_backend import ieee_caller

_SCALARS = (int, float, bool, complex)


def register(backend):  # noqa: C901 - one table, read top to bottom
    xp, sp = backend.xp, backend.special
    native, wrap = backend.native, backend.wrap
    K = backend.kernels.register
    ieee = ieee_caller(xp)
    int_bounds = {}  # numpy dtype -> (min, max): iinfo costs ~1 us a call

    def _bounds(dt):
        b = int_bounds.get(dt)
        if b is None:
            info = xp.iinfo(dt)
            b = int_bounds[dt] = (int(info.min), int(info.max))
        return b

    def arg(x, dt):
        """A kernel operand: a native array, or a scalar that numpy can take weakly in ``dt``."""
        if x.__class__ is Tensor or isinstance(x, Tensor):
            a = x._native
            if a is None:
                a = native(x)
            return a if a.dtype is dt or a.dtype == dt else a.astype(dt)
        if x.__class__ is int and dt.kind in "iu":
            # wrap out-of-range ints the way an integer tensor op does (int8 + 1000)
            lo, hi = _bounds(dt)
            if not lo <= x <= hi:
                return xp.asarray(x).astype(dt)
        if dt.kind == "b":
            return xp.asarray(x, dtype=dt)
        return x

    def result(r, dt, dev):
        if r.__class__ is not backend._ndarray:
            r = xp.asarray(r)
        if r.dtype is not dt and r.dtype != dt:
            r = r.astype(dt)
        return wrap(r, dev)

    def into(self, r):
        """Write ``r`` into the in-place op's target."""
        dst = native(self)
        if r is not dst:
            if r.dtype.kind == "c" and dst.dtype.kind != "c":
                r = r.real
            xp.copyto(dst, r, casting="unsafe")
        return self

    # -- unary ----------------------------------------------------------------------------------
    def _gelu_none(x):
        return 0.5 * x * (1.0 + sp.erf(x * (1.0 / math.sqrt(2.0))))

    def _sigmoid(x):
        if x.dtype.kind == "c":
            return 1 / (1 + xp.exp(-x))
        return sp.expit(x)

    def _rsqrt(x):
        with xp.errstate(divide="ignore"):
            return 1.0 / xp.sqrt(x)

    def _reciprocal(x):
        with xp.errstate(divide="ignore"):
            return 1.0 / x

    def _frac(x):
        return x - xp.trunc(x)

    def _sign(x):
        if x.dtype.kind == "b":
            return x.copy()
        return xp.sign(x)

    def _relu(x):
        return xp.maximum(x, x.dtype.type(0)) if x.dtype.kind != "b" else x.copy()

    def _silu(x):
        return x * _sigmoid(x)

    def _mish(x):
        return x * xp.tanh(xp.logaddexp(x, 0))

    def _logit(x):
        with xp.errstate(divide="ignore", invalid="ignore"):
            return sp.logit(x)

    def _abs(x):
        return xp.abs(x) if x.dtype.kind != "b" else x.copy()

    def _erfinv(x):
        return sp.erfinv(x)

    def _lgamma(x):
        return sp.gammaln(x)

    def _isposinf(x):
        return xp.isposinf(x) if x.dtype.kind in "fc" else xp.zeros(x.shape, dtype=bool)

    def _isneginf(x):
        return xp.isneginf(x) if x.dtype.kind in "fc" else xp.zeros(x.shape, dtype=bool)

    def _signbit(x):
        return xp.signbit(x) if x.dtype.kind != "b" else xp.zeros(x.shape, dtype=bool)

    unary = {
        "exp": xp.exp, "exp2": xp.exp2, "expm1": xp.expm1, "log": xp.log, "log2": xp.log2,
        "log10": xp.log10, "log1p": xp.log1p, "sqrt": xp.sqrt, "rsqrt": _rsqrt, "sin": xp.sin,
        "cos": xp.cos, "tan": xp.tan, "asin": xp.arcsin, "acos": xp.arccos, "atan": xp.arctan,
        "sinh": xp.sinh, "cosh": xp.cosh, "tanh": xp.tanh, "asinh": xp.arcsinh,
        "acosh": xp.arccosh, "atanh": xp.arctanh, "sigmoid": _sigmoid, "erf": sp.erf,
        "erfc": sp.erfc, "erfinv": _erfinv, "reciprocal": _reciprocal, "silu": _silu,
        "mish": _mish, "lgamma": _lgamma, "digamma": sp.digamma, "logit": _logit,
        "deg2rad": xp.deg2rad, "rad2deg": xp.rad2deg,
        "neg": xp.negative, "abs": _abs, "sign": _sign, "floor": xp.floor, "ceil": xp.ceil,
        "trunc": xp.trunc, "frac": _frac, "square": xp.square, "relu": _relu,
        "positive": xp.positive, "conj_physical": xp.conj, "bitwise_not": xp.invert,
        "isnan": xp.isnan, "isinf": xp.isinf, "isfinite": xp.isfinite, "isposinf": _isposinf,
        "isneginf": _isneginf, "signbit": _signbit, "logical_not": xp.logical_not,
    }
    predicates = {"isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not"}
    int_identity = {"floor", "ceil", "trunc"}  # integer inputs are already integral

    def make_unary(name, f):
        is_pred = name in predicates
        real_out = name == "abs"  # |complex| is real

        def kernel(x, compute):
            a = native(x)
            dt = compute.np
            if a.dtype != dt:
                a = a.astype(dt)
            if name in int_identity and a.dtype.kind in "iub":
                r = a.copy()
            elif is_pred and name in ("isnan", "isinf") and a.dtype.kind in "iub":
                r = xp.zeros(a.shape, dtype=bool)
            elif is_pred and name == "isfinite" and a.dtype.kind in "iub":
                r = xp.ones(a.shape, dtype=bool)
            else:
                r = ieee(f, a)
            if is_pred:
                return wrap(xp.asarray(r, dtype=bool), x.device)
            if real_out and dt.kind == "c":
                return result(r, r.dtype, x.device)
            return result(r, dt, x.device)

        def kernel_(x):
            a = native(x)
            if name in int_identity and a.dtype.kind in "iub":
                return x
            with xp.errstate(all="ignore"):
                if a.dtype.kind == "f" and name not in ("sign", "relu", "abs"):
                    try:
                        f(a, out=a)
                        return x
                    except TypeError:
                        pass
                return into(x, f(a))

        K(name, kernel)
        if not is_pred:
            K(name + "_", kernel_)

    for name, f in unary.items():
        make_unary(name, f)

    def round_(a, decimals):
        if a.dtype.kind in "iub":
            return a.copy() if decimals >= 0 else xp.round(a, decimals)
        return xp.round(a, decimals)  # numpy rounds half to even, as PyTorch does

    K("round", lambda x, decimals: wrap(round_(native(x), decimals), x.device))
    K("round_", lambda x, decimals: into(x, round_(native(x), decimals)))

    def nan_to_num(a, nan, posinf, neginf):
        if a.dtype.kind in "iub":
            return a.copy()
        return xp.nan_to_num(a, nan=nan, posinf=posinf, neginf=neginf)

    K("nan_to_num", lambda x, nan, posinf, neginf: wrap(
        nan_to_num(native(x), nan, posinf, neginf), x.device))
    K("nan_to_num_", lambda x, nan, posinf, neginf: into(
        x, nan_to_num(native(x), nan, posinf, neginf)))

    def gelu(x, approximate, compute):
        a = arg(x, compute.np)
        with xp.errstate(all="ignore"):
            if approximate == "tanh":
                c = math.sqrt(2.0 / math.pi)
                r = 0.5 * a * (1.0 + xp.tanh(c * (a + 0.044715 * a * a * a)))
            else:
                r = _gelu_none(a)
        return result(r, compute.np, x.device)

    def softplus(x, beta, threshold, compute):
        a = arg(x, compute.np)
        with xp.errstate(all="ignore"):
            soft = xp.log1p(xp.exp(a * beta)) / beta
            r = xp.where(a * beta > threshold, a, soft)
        return result(r, compute.np, x.device)

    def leaky_relu(x, slope):
        a = native(x)
        return result(xp.where(a > 0, a, a * slope), a.dtype, x.device)

    def elu(x, alpha, scale, input_scale):
        a = native(x)
        with xp.errstate(all="ignore"):
            r = xp.where(a > 0, a * scale, alpha * scale * xp.expm1(a * input_scale))
        return result(r, a.dtype, x.device)

    def hardtanh(x, lo, hi):
        a = native(x)
        return result(xp.minimum(xp.maximum(a, lo), hi), a.dtype, x.device)

    K("gelu", gelu)
    K("softplus", softplus)
    K("leaky_relu", leaky_relu)
    K("elu", elu)
    K("hardtanh", hardtanh)

    # -- binary ---------------------------------------------------------------------------------
    def _check_int_zero(b):
        if b.__class__ in _SCALARS:
            if b == 0:
                raise RuntimeError("ZeroDivisionError")
        elif b.dtype.kind in "iu" and b.size and not xp.all(b):
            raise RuntimeError("ZeroDivisionError")

    def _floor_divide(a, b):
        if _is_int(a, b):
            _check_int_zero(b)
        return xp.floor_divide(a, b)

    def _remainder(a, b):
        if _is_int(a, b):
            _check_int_zero(b)
        return xp.remainder(a, b)

    def _fmod(a, b):
        if _is_int(a, b):
            _check_int_zero(b)
        return xp.fmod(a, b)

    def _pow(a, b):
        if _is_int(a, b):
            if b.__class__ in _SCALARS:
                if b < 0:  # the op layer refuses these; a backend called directly still must
                    raise RuntimeError("Integers to negative integer powers are not allowed.")
            elif b.size and bool((b < 0).any()):
                return _int_pow_negative(a, b)
        return xp.power(a, b)

    def _int_pow_negative(a, b):
        """Integer powers with some negative exponents, as PyTorch computes them: a ** -n is 1
        for a == 1, +-1 for a == -1 (by parity of n), and 0 otherwise (0 ** -n included)."""
        neg = b < 0
        r = xp.power(a, xp.where(neg, 0, b))
        one = xp.ones((), dtype=r.dtype)
        small = xp.where(a == 1, one, xp.where(a == -1, xp.where(b % 2 == 0, one, -one), 0))
        return xp.where(neg, small, r).astype(r.dtype, copy=False)

    def _logaddexp(a, b):
        if (a.dtype if a.__class__ not in _SCALARS else b.dtype).kind != "c":
            return xp.logaddexp(a, b)
        # complex: m + log(1 + exp(other - m)) around the operand of larger real part
        a, b = xp.asarray(a), xp.asarray(b)
        first = a.real >= b.real
        m = xp.where(first, a, b)
        o = xp.where(first, b, a)
        return m + xp.log1p(xp.exp(o - m))

    def _is_int(a, b):
        d = a.dtype if a.__class__ not in _SCALARS else b.dtype
        return d.kind in "iu"

    def _xlogy(a, b):
        with xp.errstate(all="ignore"):
            return sp.xlogy(a, b)

    def _shift_left(a, b):
        return xp.left_shift(a, b)

    def _shift_right(a, b):
        return xp.right_shift(a, b)

    binary = {
        "mul": xp.multiply, "maximum": xp.maximum, "minimum": xp.minimum, "fmax": xp.fmax,
        "fmin": xp.fmin, "remainder": _remainder, "fmod": _fmod, "floor_divide": _floor_divide,
        "pow": _pow, "atan2": xp.arctan2, "hypot": xp.hypot, "logaddexp": _logaddexp,
        "copysign": xp.copysign, "xlogy": _xlogy,
        "eq": xp.equal, "ne": xp.not_equal, "lt": xp.less, "le": xp.less_equal,
        "gt": xp.greater, "ge": xp.greater_equal,
        "logical_and": xp.logical_and, "logical_or": xp.logical_or,
        "logical_xor": xp.logical_xor,
        "bitwise_and": xp.bitwise_and, "bitwise_or": xp.bitwise_or,
        "bitwise_xor": xp.bitwise_xor, "bitwise_left_shift": _shift_left,
        "bitwise_right_shift": _shift_right,
    }
    to_bool = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}

    def make_binary(name, f):
        boolean = name in to_bool

        def kernel(a, b, compute):
            dt = compute.np
            r = ieee(f, arg(a, dt), arg(b, dt))
            dev = a.device if isinstance(a, Tensor) else b.device
            return result(r, bool if boolean else dt, dev)

        def kernel_(a, b, compute):
            dt = compute.np
            return into(a, ieee(f, arg(a, dt), arg(b, dt)))

        K(name, kernel)
        K(name + "_", kernel_)

    for name, f in binary.items():
        make_binary(name, f)

    def scaled(y, alpha, dt):
        if alpha.__class__ is int and alpha == 1:
            return y
        # a scalar operand is scaled in Python precision, then taken like any scalar operand
        return arg(y * alpha, dt) if y.__class__ in _SCALARS else xp.multiply(y, arg(alpha, dt))

    def make_add_sub(ufunc):
        def kernel(a, b, alpha, compute):
            dt = compute.np
            r = ufunc(arg(a, dt), scaled(arg(b, dt), alpha, dt))
            return result(r, dt, a.device if isinstance(a, Tensor) else b.device)

        def kernel_(a, b, alpha, compute):
            dt = compute.np
            x = native(a)
            y = scaled(arg(b, dt), alpha, dt)
            if x.dtype == dt:
                ufunc(x, y, out=x)
                return a
            return into(a, ufunc(x.astype(dt), y))

        return kernel, kernel_

    add, add_ = make_add_sub(xp.add)
    sub, sub_ = make_add_sub(xp.subtract)
    K("add", add)
    K("add_", add_)
    K("sub", sub)
    K("sub_", sub_)

    def _div(x, y, mode):
        if mode is None:
            return ieee(xp.true_divide, x, y)
        with xp.errstate(all="ignore"):
            int_inputs = (x.dtype.kind if x.__class__ not in _SCALARS else y.dtype.kind) in "iu"
            if int_inputs:
                _check_int_zero(y)
            if mode == "floor":
                return xp.floor_divide(x, y)
            if int_inputs:
                q = xp.floor_divide(x, y)
                fix = (xp.remainder(x, y) != 0) & ((x < 0) != (y < 0))
                return q + fix
            return xp.trunc(xp.true_divide(x, y))

    def div(a, b, mode, compute):
        dt = compute.np
        r = _div(arg(a, dt), arg(b, dt), mode)
        return result(r, dt, a.device if isinstance(a, Tensor) else b.device)

    def div_(a, b, mode, compute):
        dt = compute.np
        return into(a, _div(arg(a, dt), arg(b, dt), mode))

    K("div", div)
    K("div_", div_)

    # -- where / clamp --------------------------------------------------------------------------
    def where(cond, a, b, compute):
        dt = compute.np
        r = xp.where(native(cond), arg(a, dt), arg(b, dt))
        return result(r, dt, cond.device)

    K("where", where)

    def _clamp(x, lo, hi, dt):
        r = x
        if lo is not None:
            r = xp.maximum(r, arg(lo, dt))
        if hi is not None:
            r = xp.minimum(r, arg(hi, dt))
        return r if r is not x else x.copy()

    def clamp(x, lo, hi, compute):
        dt = compute.np
        return result(_clamp(arg(x, dt), lo, hi, dt), dt, x.device)

    def clamp_(x, lo, hi, compute):
        dt = compute.np
        return into(x, _clamp(arg(x, dt), lo, hi, dt))

    K("clamp", clamp)
    K("clamp_", clamp_)
