"""The ops fusion can put inside a generated loop: one row per op, its meaning as an expression.

A row is ``name: (rule)`` where ``rule(e, *args)`` gets the node's schema arguments (Refs of
tensors, Python values elsewhere) and returns a C-family expression for one element, or None
when this variant of the op stays a library call (``div`` with a rounding mode, a ``clamp``
bound that is a tensor). ``e`` is the dialect a backend renders with (``Dialect`` below):
``e(x)`` an operand (a variable or a literal in the compute dtype), ``e.fn("exp", x)`` a math
call (``expf`` in C for float32, ``exp`` in OpenCL C), ``e.lit(0.5)`` a constant.

Every row keeps the op's eager behaviour on NaN and infinities (``relu(nan)`` is nan, clamp
and maximum propagate nan), so a fused graph agrees with its eager run to rounding. Ops that
compare produce 0/1 values typed by their output (bool); ``where`` reads one as a condition."""
from __future__ import annotations

import math

from .. import _dtype

#: dtypes a fused loop reads and writes, with their C names (OpenCL C names them the same)
C_TYPES = {_dtype.float32: "float", _dtype.float64: "double", _dtype.bool_: "unsigned char"}


class Dialect:
    """How a backend spells an expression: overridden per target (C on the host, OpenCL C)."""

    def __init__(self, dtype, render_var):
        self.dtype = dtype
        self._var = render_var

    def __call__(self, x):
        return self._var(x) if not isinstance(x, (int, float, bool)) else self.lit(x)

    def lit(self, value):
        value = float(value)
        if math.isnan(value):
            return "(0.0f/0.0f)" if self.dtype is _dtype.float32 else "(0.0/0.0)"
        if math.isinf(value):
            inf = "(1.0f/0.0f)" if self.dtype is _dtype.float32 else "(1.0/0.0)"
            return inf if value > 0 else f"(-{inf})"
        text = repr(value)
        return text + "f" if self.dtype is _dtype.float32 else text

    def fn(self, name, *args):
        return f"{name}({', '.join(args)})"


def _scalar(x):
    return isinstance(x, (int, float, bool))


def _add(e, a, b, alpha=1, *_):
    return f"({e(a)} + {e(b)})" if alpha == 1 else f"({e(a)} + {e.lit(alpha)} * {e(b)})"


def _sub(e, a, b, alpha=1, *_):
    return f"({e(a)} - {e(b)})" if alpha == 1 else f"({e(a)} - {e.lit(alpha)} * {e(b)})"


def _pow(e, a, b, *_):
    if _scalar(b):
        if b == 2:
            return f"({e(a)} * {e(a)})"
        if b == 1:
            return e(a)
        if b == 0.5:
            return e.fn("sqrt", e(a))
    return e.fn("pow", e(a), e(b))


def _clamp(e, x, lo, hi, *_):
    if (lo is not None and not _scalar(lo)) or (hi is not None and not _scalar(hi)):
        return None
    v = e(x)
    if lo is not None:
        v = f"({v} < {e.lit(lo)} ? {e.lit(lo)} : {v})"
    if hi is not None:
        v = f"({v} > {e.lit(hi)} ? {e.lit(hi)} : {v})"
    return v


def _gelu(e, x, approximate="none", *_):
    v = e(x)
    if approximate == "tanh":
        inner = f"{e.lit(math.sqrt(2 / math.pi))} * ({v} + {e.lit(0.044715)} * {v} * {v} * {v})"
        return f"({e.lit(0.5)} * {v} * ({e.lit(1)} + {e.fn('tanh', inner)}))"
    return f"({e.lit(0.5)} * {v} * ({e.lit(1)} + {e.fn('erf', f'{v} * {e.lit(math.sqrt(0.5))}')}))"


def _lerp(e, a, b, w, *_):
    a, b, w = e(a), e(b), e(w)
    return (f"({w} < {e.lit(0.5)} ? {a} + {w} * ({b} - {a}) "
            f": {b} - ({b} - {a}) * ({e.lit(1)} - {w}))")


def _softplus(e, x, beta, threshold, *_):
    v = e(x)
    return (f"({v} * {e.lit(beta)} > {e.lit(threshold)} ? {v} : "
            f"{e.fn('log1p', e.fn('exp', f'{v} * {e.lit(beta)}'))} / {e.lit(beta)})")


def _elu(e, x, alpha, scale, input_scale, *_):
    v = e(x)
    return (f"({v} <= {e.lit(0)} ? {e.fn('expm1', f'{v} * {e.lit(input_scale)}')} * "
            f"{e.lit(alpha * scale)} : {v} * {e.lit(scale)})")


def _cmp(symbol):
    return lambda e, a, b, *_: f"({e(a)} {symbol} {e(b)})"


#: op name -> rule; the op's schema arguments in order (``compute`` dtype last where it has one)
RULES = {
    "add": _add,
    "sub": _sub,
    "mul": lambda e, a, b, *_: f"({e(a)} * {e(b)})",
    "div": lambda e, a, b, mode=None, *_: None if mode is not None else f"({e(a)} / {e(b)})",
    "neg": lambda e, a, *_: f"(-{e(a)})",
    "abs": lambda e, a, *_: e.fn("fabs", e(a)),
    "square": lambda e, a, *_: f"({e(a)} * {e(a)})",
    "reciprocal": lambda e, a, *_: f"({e.lit(1)} / {e(a)})",
    "sqrt": lambda e, a, *_: e.fn("sqrt", e(a)),
    "rsqrt": lambda e, a, *_: f"({e.lit(1)} / {e.fn('sqrt', e(a))})",
    "exp": lambda e, a, *_: e.fn("exp", e(a)),
    "exp2": lambda e, a, *_: e.fn("exp2", e(a)),
    "expm1": lambda e, a, *_: e.fn("expm1", e(a)),
    "log": lambda e, a, *_: e.fn("log", e(a)),
    "log2": lambda e, a, *_: e.fn("log2", e(a)),
    "log1p": lambda e, a, *_: e.fn("log1p", e(a)),
    "sin": lambda e, a, *_: e.fn("sin", e(a)),
    "cos": lambda e, a, *_: e.fn("cos", e(a)),
    "tan": lambda e, a, *_: e.fn("tan", e(a)),
    "tanh": lambda e, a, *_: e.fn("tanh", e(a)),
    "erf": lambda e, a, *_: e.fn("erf", e(a)),
    "pow": _pow,
    "sigmoid": lambda e, a, *_: f"({e.lit(1)} / ({e.lit(1)} + {e.fn('exp', f'-{e(a)}')}))",
    "silu": lambda e, a, *_: f"({e(a)} / ({e.lit(1)} + {e.fn('exp', f'-{e(a)}')}))",
    "relu": lambda e, a, *_: f"({e(a)} < {e.lit(0)} ? {e.lit(0)} : {e(a)})",
    "gelu": _gelu,
    "leaky_relu": lambda e, a, slope, *_: f"({e(a)} > {e.lit(0)} ? {e(a)} : {e(a)} * {e.lit(slope)})",
    "hardtanh": lambda e, a, lo, hi, *_: _clamp(e, a, lo, hi),
    "clamp": _clamp,
    "threshold": lambda e, a, th, value, *_: f"({e(a)} <= {e.lit(th)} ? {e.lit(value)} : {e(a)})",
    "softplus": _softplus,
    "elu": _elu,
    "mish": lambda e, a, *_: f"({e(a)} * {e.fn('tanh', e.fn('log1p', e.fn('exp', e(a))))})",
    "maximum": lambda e, a, b, *_: f"(({e(a)} > {e(b)} || {e(a)} != {e(a)}) ? {e(a)} : {e(b)})",
    "minimum": lambda e, a, b, *_: f"(({e(a)} < {e(b)} || {e(a)} != {e(a)}) ? {e(a)} : {e(b)})",
    "where": lambda e, c, a, b, *_: f"({e(c)} ? {e(a)} : {e(b)})",
    "lerp": _lerp,
    "addcmul": lambda e, s, t1, t2, value=1, *_: f"({e(s)} + {e.lit(value)} * {e(t1)} * {e(t2)})",
    "addcdiv": lambda e, s, t1, t2, value=1, *_: f"({e(s)} + {e.lit(value)} * {e(t1)} / {e(t2)})",
    "gt": _cmp(">"), "lt": _cmp("<"), "ge": _cmp(">="), "le": _cmp("<="),
    "eq": _cmp("=="), "ne": _cmp("!="),
    "threshold_backward": lambda e, g, x, th, *_: f"({e(x)} <= {e.lit(th)} ? {e.lit(0)} : {e(g)})",
    "sigmoid_backward": lambda e, g, y, *_: f"({e(g)} * ({e.lit(1)} - {e(y)}) * {e(y)})",
    "tanh_backward": lambda e, g, y, *_: f"({e(g)} * ({e.lit(1)} - {e(y)} * {e(y)}))",
    "_to_copy": lambda e, a, *_: e(a),
}

#: ops whose result is 0/1 (bool), computed from operands of the compute dtype
COMPARISONS = frozenset({"gt", "lt", "ge", "le", "eq", "ne"})

#: the math functions the rows call (a backend maps each to its spelling per dtype)
MATH_FUNCTIONS = ("fabs", "sqrt", "exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos",
                  "tan", "tanh", "erf", "pow")
