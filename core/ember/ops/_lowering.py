"""What op rows share to say how they lower: makers of ``pointwise`` and ``onnx`` facets.

A ``pointwise`` rule ``rule(e, *args)`` returns the op's value for one element as a C-family
expression (``e(x)`` an operand, ``e.fn("exp", v)`` a math call, ``e.lit(0.5)`` a constant;
``ember.compiler.pointwise.Dialect`` renders them per backend), or None when this variant of
the op stays a library call. Its ``operands`` attribute says how the dtypes of the operands,
the arithmetic and the result relate (``SAME`` when absent). An ``onnx`` rule
``rule(b, c, *args)`` emits the op's ONNX nodes through the exporter's builder ``b`` and node
context ``c``; its ``fold`` attribute lets the exporter compute it once when every tensor it
reads is a parameter or buffer.

Part of the rules layer: imports nothing of ember, so every family may use it.
"""
from __future__ import annotations

#: every tensor operand, the arithmetic and the result in the compute dtype
SAME = "same"
#: operands in a floating compute dtype; the result is a 0/1 truth value of the op's bool output
PREDICATE = "predicate"
#: one operand of any dtype a loop handles, converted to the result's (non-bool) dtype
CAST = "cast"
#: operand 0 is a bool condition; the other operands and the result are in the compute dtype
CONDITION = "condition"


def operands(kind):
    """Mark a pointwise rule's dtype relation (``PREDICATE``, ``CAST``, ``CONDITION``)."""
    def mark(rule):
        rule.operands = kind
        return rule
    return mark


def foldable(rule):
    """Mark an ONNX rule the exporter may fold when all its inputs are constants."""
    rule.fold = True
    return rule


def _named(rule, text):
    rule.__name__ = rule.__qualname__ = text
    return rule


def is_number(x) -> bool:
    """A Python number (not an operand that is a tensor)."""
    return isinstance(x, (int, float, bool))


# -- pointwise expressions ------------------------------------------------------------------------
def call(fn):
    """``fn(x)``: one math function of the first operand."""
    return _named(lambda e, x, *_: e.fn(fn, e(x)), f"call({fn!r})")


def infix(symbol):
    """``(a symbol b)`` of the first two operands."""
    return _named(lambda e, a, b, *_: f"({e(a)} {symbol} {e(b)})", f"infix({symbol!r})")


def compare(symbol):
    """A comparison: ``(a symbol b)`` computed in the operands' dtype, a bool result."""
    return operands(PREDICATE)(_named(lambda e, a, b, *_: f"({e(a)} {symbol} {e(b)})",
                                      f"compare({symbol!r})"))


def clamp(e, x, lo, hi, *_):
    """``x`` limited to scalar bounds ``lo``/``hi`` (either None); NaN stays NaN. Tensor
    bounds stay a library call."""
    if (lo is not None and not is_number(lo)) or (hi is not None and not is_number(hi)):
        return None
    v = e(x)
    if lo is not None:
        v = f"({v} < {e.lit(lo)} ? {e.lit(lo)} : {v})"
    if hi is not None:
        v = f"({v} > {e.lit(hi)} ? {e.lit(hi)} : {v})"
    return v


# -- ONNX ---------------------------------------------------------------------------------------------
def onnx_unary(op_type):
    """One ONNX node of the first argument."""
    return _named(lambda b, c, x, *rest: b.op(op_type, [x]), f"onnx_unary({op_type!r})")


def onnx_binary(op_type):
    """One ONNX node of two operands (a Python number becomes a constant of the output dtype)."""
    def rule(b, c, x, y, *rest):
        return b.op(op_type, [c.operand(x), c.operand(y)])
    return _named(rule, f"onnx_binary({op_type!r})")


def onnx_compare(op_type, negate=False):
    """A comparison node (``Not`` of it with ``negate``); a Python number operand becomes a
    constant of the first operand's dtype."""
    def rule(b, c, x, y, *rest):
        dt = c.meta(0)[1]
        r = b.op(op_type, [c.operand(x, dt), c.operand(y, dt)])
        return b.op("Not", [r]) if negate else r
    return _named(rule, f"onnx_compare({op_type!r}{', negate=True' if negate else ''})")


def onnx_reduce(op_type):
    """A reduction over ``dims`` (all dims when empty); from opset 18 axes are an input."""
    def rule(b, c, x, dims, keepdim=False, *rest):
        axes = [int(d) for d in dims] if dims else list(range(len(c.shape(0))))
        if op_type == "ReduceSum" or b.opset >= 18:
            return b.op(op_type, [x, b.ints(axes)], keepdims=int(keepdim))
        return b.op(op_type, [x], axes=axes, keepdims=int(keepdim))
    return _named(rule, f"onnx_reduce({op_type!r})")


def onnx_clamp(b, c, x, lo=None, hi=None, *rest):
    """``Clip`` with scalar bounds; ``Max``/``Min`` nodes with tensor bounds."""
    if (lo is not None and isinstance(lo, str)) or (hi is not None and isinstance(hi, str)):
        y = x
        if lo is not None:
            y = b.op("Max", [y, lo])
        if hi is not None:
            y = b.op("Min", [y, hi])
        return y
    return b.op("Clip", [x, c.scalar(lo) if lo is not None else None,
                         c.scalar(hi) if hi is not None else None])


def attach(op, lowering):
    """Set a row's lowering columns on its op: ``(pointwise rule[, onnx rule])``, either None."""
    lowering = tuple(lowering) + (None, None)
    if lowering[0] is not None:
        op.def_pointwise(lowering[0])
    if lowering[1] is not None:
        op.def_onnx(lowering[1])
