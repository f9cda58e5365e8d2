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


def reduction_loop(kernel, acc_type, init, starts, body, index_type):
    """The statements of a fused pointwise chain ending in a reduction, for one output element
    ``o``, in the C family (host C and OpenCL C spell them alike but for ``index_type``, the
    64-bit index: ``int64_t`` or ``long``). Each input's offset ``b<k>`` starts at ``starts[k]``
    and moves to ``o``'s first reduced element through the kept dims (``kshape``, ``kstr``: nk
    sizes, then nk strides per input); ``acc`` (``acc_type``, from ``init``) then folds the
    ``rcount`` reduced elements (``rshape``, ``rstr``) read as ``x<k>``, each through ``body``
    (the chain's statements, ending in ``t<output>``). A NaN wins amax/amin, as in eager."""
    op = kernel.reduction[0]
    n_in = len(kernel.input_dtypes)
    lines = [f"{index_type} rem = o;"]
    lines += [f"{index_type} b{k} = {starts[k]};" for k in range(n_in)]
    lines += ["for (int d = nk - 1; d >= 0; d--) {",
              f"  const {index_type} idx = rem % kshape[d]; rem /= kshape[d];"]
    lines += [f"  b{k} += idx * kstr[{k} * nk + d];" for k in range(n_in)]
    lines += ["}", f"{acc_type} acc = {init};", f"for ({index_type} k = 0; k < rcount; k++) {{",
              f"  {index_type} r = k;"]
    lines += [f"  {index_type} a{k} = b{k};" for k in range(n_in)]
    lines += ["  for (int d = nr - 1; d >= 0; d--) {",
              f"    const {index_type} idx = r % rshape[d]; r /= rshape[d];"]
    lines += [f"    a{k} += idx * rstr[{k} * nr + d];" for k in range(n_in)]
    lines.append("  }")
    lines += [f"  const {C_TYPES[dt]} x{k} = in{k}[a{k}];"
              for k, dt in enumerate(kernel.input_dtypes)]
    lines += ["  " + s for s in body]
    lines.append(f"  const {acc_type} v = t{kernel.outputs[0]};")
    if op in ("sum", "mean"):
        lines.append("  acc += v;")
    else:
        lines.append(f"  if (v {'>' if op == 'amax' else '<'} acc || v != v) acc = v;")
    lines.append("}")
    return lines
