"""The rendering side of pointwise expressions: what a fused loop's dialect spells and types.

What an op computes for one element is its ``pointwise`` facet, written beside the op's define
(``ember/ops``; makers in ``ops/_lowering.py``): ``rule(e, *args)`` gets the node's schema
arguments (operands where tensors were, Python values elsewhere) and returns a C-family
expression, or None when this variant of the op stays a library call (``div`` with a rounding
mode, a ``clamp`` bound that is a tensor). ``e`` is the dialect a backend renders with
(``Dialect`` below): ``e(x)`` an operand (a variable or a literal in the compute dtype),
``e.fn("exp", x)`` a math call (``expf`` in C for float32, ``exp`` in OpenCL C), ``e.lit(0.5)``
a constant.

Every rule keeps the op's eager behaviour on NaN and infinities (``relu(nan)`` is nan, clamp
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


#: the math functions the rules call (a backend maps each to its spelling per dtype)
MATH_FUNCTIONS = ("fabs", "sqrt", "exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos",
                  "tan", "tanh", "erf", "pow")
