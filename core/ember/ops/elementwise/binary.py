"""Binary elementwise ops: one row per op — its kind (dtype rule) and its derivative.

Kernel convention: ``name(Tensor|Scalar self, Tensor|Scalar other, dtype compute) -> Tensor``;
in place ``name_(Tensor(a!) self, Tensor|Scalar other, dtype compute) -> Tensor(a!)``. ``other``
is already broadcastable to ``self`` and on its device; Python scalars stay scalars so kernels
can use weak typing. Comparisons and logical ops return bool, the rest return ``compute``.
Broadcasting needs no care in the formulas: autograd sums each gradient back to its input's
shape.
"""
from __future__ import annotations

import cmath
import math

from ... import _dtype, _fastpath
from ..._dtype import COMPLEX, FLOATING, INTEGRAL
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import NOT_DIFFERENTIABLE, Derivative
from .. import _grad, _primitives, _tangents
from .._lowering import attach, compare, foldable, infix, is_number, onnx_binary, onnx_compare
from .._util import check_inplace, ember_namespace, is_scalar, require_tensor, write_out
from ._rules import (ARITH, CMP, FLOAT_BINARY, INT, LOGICAL, binary_dtype, binary_inplace_meta,
                     binary_meta, check_bcast, check_operands, check_overlap, check_scalar,
                     check_sub, dtypes_of, float_dtype)


def _is_t(x):
    return isinstance(x, Tensor)


def _both(ctx, gs, go):
    """(gradient for self, for other), each only when that argument needs one."""
    return (gs() if ctx.needs(0) else None, go() if ctx.needs(1) else None)


# -- formulas -----------------------------------------------------------------------------------
def _mul_backward(ctx, g, self, other, compute):
    return _both(ctx, lambda: g * _grad.conj(other), lambda: g * _grad.conj(self))


def _zero_both(ctx, g, self, other, compute):
    return _both(ctx, lambda: _grad.zeros_like(g), lambda: _grad.zeros_like(g))


def _pow_name(self, exponent, compute):
    if not _is_t(self):
        return "PowBackward2"
    return "PowBackward1" if _is_t(exponent) else "PowBackward0"


def _scalar_log(z):
    if isinstance(z, complex):
        return cmath.log(z)
    return math.log(z) if z > 0 else math.nan


def _pow_backward(ctx, g, self, exponent, compute):
    gs = ge_ = None
    if ctx.needs(0):
        if _is_t(exponent):
            gs = _primitives.where(exponent.eq(0), 0.0,
                            g * _grad.conj(exponent * self ** (exponent - 1)))
        elif exponent == 0:
            gs = _grad.zeros_like(g)
        else:
            gs = g * _grad.conj(self ** (exponent - 1) * exponent)
    if ctx.needs(1):
        # PyTorch's pow_backward_exponent: d(0^b)/db is 0 for b >= 0 (by continuity) and
        # result * log(0) = -inf for b < 0 (a complex b counts as >= 0 only when real)
        r = ctx.result
        nonneg = exponent.ge(0) if not exponent.is_complex() else \
            exponent.imag.eq(0).logical_and(exponent.real.ge(0))
        if _is_t(self):
            zero_base = self.eq(0).logical_and(nonneg)
            ge_ = g * _grad.conj(_primitives.where(zero_base, 0.0, r * self.log()))
        elif self == 0:
            ge_ = g * _grad.conj(_primitives.where(nonneg, 0.0, r * -math.inf))
        else:
            ge_ = g * _grad.conj(r * _scalar_log(self))
    return gs, ge_


def _split_ties(g, self, other, loser_if):
    """maximum/minimum: the gradient goes to the larger (smaller) input, halved on ties."""
    half = _primitives.where(self.eq(other), g * 0.5, g)
    return _grad.mask_fill_zero(half, loser_if(self, other))


def _lt(a, b):
    return a.lt(b)


def _gt(a, b):
    return a.gt(b)


def _maximum_backward(ctx, g, self, other, compute):
    return _both(ctx, lambda: _split_ties(g, self, other, _lt),
                 lambda: _split_ties(g, self, other, _gt))


def _minimum_backward(ctx, g, self, other, compute):
    return _both(ctx, lambda: _split_ties(g, self, other, _gt),
                 lambda: _split_ties(g, self, other, _lt))


def _nan_mask(x, like):
    if _is_t(x):
        return x.isnan()
    return like.ne(like) if not math.isnan(x) else like.eq(like)


def _fmax_fmin(better_or_equal):
    def backward(ctx, g, self, other, compute):
        # the non-NaN input wins; self also wins when it compares better
        self_wins = better_or_equal(self, other).logical_or(_nan_mask(other, g))
        return _both(ctx, lambda: _grad.keep_where(g, self_wins),
                     lambda: _grad.mask_fill_zero(g, self_wins))
    return backward


def _rem_name(prefix):
    return lambda self, other, compute: f"{prefix}Backward{1 if _is_t(other) else 0}"


def _remainder_like(rounding_mode):
    def backward(ctx, g, self, other, compute):
        go = -g * div(self, other, rounding_mode=rounding_mode) if ctx.needs(1) else None
        return g, go
    return backward


def _atan2_backward(ctx, g, self, other, compute):
    # PyTorch's atan2_backward: 1 / (y^2 + x^2), taken as 0 at the origin
    denom = self * self + other * other
    recip = _primitives.where(denom.eq(0), 0.0, denom.reciprocal())
    return _both(ctx, lambda: g * other * recip, lambda: g * -self * recip)


def _hypot_backward(ctx, g, self, other, compute):
    r = ctx.result
    return _both(ctx, lambda: g * self / r, lambda: g * other / r)


def _logaddexp_backward(ctx, g, self, other, compute):
    return _both(ctx, lambda: g / ((other - self).exp() + 1),
                 lambda: g / ((self - other).exp() + 1))


def _logaddexp2_backward(ctx, g, self, other, compute):
    # d/da log2(2^a + 2^b) = 2^a / (2^a + 2^b) = 1 / (1 + 2^(b - a))
    return _both(ctx, lambda: g / ((other - self).exp2() + 1),
                 lambda: g / ((self - other).exp2() + 1))


def _copysign_backward(ctx, g, self, other, compute):
    return _both(ctx, lambda: g * _primitives.where(self.eq(0), 0.0, ctx.result / self),
                 lambda: _grad.zeros_like(g))


def _copysign_name(self, other, compute):
    return "CopysignBackward0" if _is_t(other) else "CopysignBackward1"


def _xlogy_name(self, other, compute):
    return "XlogyBackward1" if not _is_t(self) else \
        "XlogyBackward0" if _is_t(other) else "XlogyBackward2"


def _xlogy_self_grad(g, self, other):
    r = binary_api["xlogy"](g, other)
    if _is_t(other):
        return _grad.mask_fill_zero(r, self.eq(0).logical_and(other.le(0)))
    return _grad.mask_fill_zero(r, self.eq(0)) if other <= 0 else r   # xlogy(x, 2.5)


def _xlogy_backward(ctx, g, self, other, compute):
    return _both(ctx, lambda: _xlogy_self_grad(g, self, other), lambda: g * self / other)


# -- how rows lower: one element as an expression (fusion), the ONNX nodes (export) -------------
def _pow_expr(e, a, b, *_):
    if is_number(b):
        if b == 2:
            return f"({e(a)} * {e(a)})"
        # PyTorch's pow kernel computes these scalar exponents so (numpy's results agree)
        if b == 3:
            return f"({e(a)} * {e(a)} * {e(a)})"
        if b == 1:
            return e(a)
        if b == 0.5:
            return e.fn("sqrt", e(a))
        if b == -0.5:
            return f"(1 / {e.fn('sqrt', e(a))})"
        if b == -1:
            return f"(1 / {e(a)})"
        if b == -2:
            return f"(1 / ({e(a)} * {e(a)}))"
    return e.fn("pow", e(a), e(b))


def _maximum_expr(e, a, b, *_):
    return f"(({e(a)} > {e(b)} || {e(a)} != {e(a)}) ? {e(a)} : {e(b)})"   # NaN wins


def _minimum_expr(e, a, b, *_):
    return f"(({e(a)} < {e(b)} || {e(a)} != {e(a)}) ? {e(a)} : {e(b)})"


_SAVE_BOTH = ("self", "other")
# name, kind, derivative (the formula and what it saves)[, pointwise expression[, ONNX rule]]
BINARY_ROWS = [
    ("mul", ARITH, Derivative(_mul_backward, save={"self": "other", "other": "self"},
                              complex_ok=True), infix("*"), foldable(onnx_binary("Mul"))),
    ("maximum", ARITH, Derivative(_maximum_backward, save=_SAVE_BOTH),
     _maximum_expr, onnx_binary("Max")),
    ("minimum", ARITH, Derivative(_minimum_backward, save=_SAVE_BOTH),
     _minimum_expr, onnx_binary("Min")),
    ("fmax", ARITH, Derivative(_fmax_fmin(lambda a, b: a.ge(b)), save=_SAVE_BOTH)),
    ("fmin", ARITH, Derivative(_fmax_fmin(lambda a, b: a.le(b)), save=_SAVE_BOTH)),
    ("remainder", ARITH, Derivative(_remainder_like("floor"), save={"self": "other",
                                                                    "other": "other"},
                                    name=_rem_name("Remainder"),
                                    scalars={"RemainderBackward0": ("other",)})),
    ("fmod", ARITH, Derivative(_remainder_like("trunc"), save={"self": "other", "other": "other"},
                               name=_rem_name("Fmod"), scalars={"FmodBackward0": ("other",)})),
    ("floor_divide", ARITH, Derivative(_zero_both)),
    ("pow", ARITH, Derivative(_pow_backward, save=("self", "other", "result"), complex_ok=True,
                              name=_pow_name, scalars={"PowBackward0": ("other",),
                                                       "PowBackward2": ("self",)}),
     _pow_expr, onnx_binary("Pow")),
    ("atan2", FLOAT_BINARY, Derivative(_atan2_backward, save=_SAVE_BOTH)),
    ("hypot", FLOAT_BINARY, Derivative(_hypot_backward, save=("self", "other", "result"))),
    ("logaddexp", FLOAT_BINARY, Derivative(_logaddexp_backward, save=_SAVE_BOTH)),
    ("logaddexp2", FLOAT_BINARY, Derivative(_logaddexp2_backward, save=_SAVE_BOTH)),
    ("copysign", FLOAT_BINARY, Derivative(_copysign_backward, save=("self", "result"),
                                          name=_copysign_name,
                                          scalars={"CopysignBackward1": ("other",)})),
    ("xlogy", FLOAT_BINARY, Derivative(_xlogy_backward, save=_SAVE_BOTH, name=_xlogy_name,
                                       scalars={"XlogyBackward1": ("self",),
                                                "XlogyBackward2": ("other",)})),
    ("eq", CMP, NOT_DIFFERENTIABLE, compare("=="), onnx_compare("Equal")),
    ("ne", CMP, NOT_DIFFERENTIABLE, compare("!="), onnx_compare("Equal", negate=True)),
    ("lt", CMP, NOT_DIFFERENTIABLE, compare("<"), onnx_compare("Less")),
    ("le", CMP, NOT_DIFFERENTIABLE, compare("<="), onnx_compare("LessOrEqual")),
    ("gt", CMP, NOT_DIFFERENTIABLE, compare(">"), onnx_compare("Greater")),
    ("ge", CMP, NOT_DIFFERENTIABLE, compare(">="), onnx_compare("GreaterOrEqual")),
    ("logical_and", LOGICAL, NOT_DIFFERENTIABLE),
    ("logical_or", LOGICAL, NOT_DIFFERENTIABLE),
    ("logical_xor", LOGICAL, NOT_DIFFERENTIABLE),
    ("bitwise_and", INT, NOT_DIFFERENTIABLE),
    ("bitwise_or", INT, NOT_DIFFERENTIABLE),
    ("bitwise_xor", INT, NOT_DIFFERENTIABLE),
    ("bitwise_left_shift", INT, NOT_DIFFERENTIABLE),
    ("bitwise_right_shift", INT, NOT_DIFFERENTIABLE),
]
BINARY = {kind: [name for name, k, *_ in BINARY_ROWS if k == kind]
          for kind in (ARITH, FLOAT_BINARY, CMP, LOGICAL, INT)}
ALIASES_BINARY = {"multiply": "mul", "greater": "gt", "greater_equal": "ge", "less": "lt",
                  "less_equal": "le", "not_equal": "ne", "arctan2": "atan2"}

binary_ops = {}  # name -> (kind, op, in-place op)
for _name, _kind, _derivative, *_lowering in BINARY_ROWS:
    _op = define(f"{_name}(Tensor self, Tensor other, dtype compute) -> Tensor",
                 meta=binary_meta(_name, _kind), derivative=_derivative)
    attach(_op, _lowering)
    _op_ = define(f"{_name}_(Tensor(a!) self, Tensor other, dtype compute) -> Tensor(a!)",
                  meta=binary_inplace_meta(_name + "_"), functional=_op)
    binary_ops[_name] = (_kind, _op, _op_)


# -- add, sub, div: an extra argument (alpha, rounding mode) --------------------------------
def _add_backward(ctx, g, self, other, alpha, compute):
    go = None
    if ctx.needs(1):
        go = g if alpha.__class__ is int and alpha == 1 else g * _grad.conj(alpha)
    return g, go


def _sub_backward(ctx, g, self, other, alpha, compute):
    go = None
    if ctx.needs(1):
        go = -g if alpha.__class__ is int and alpha == 1 else g * -_grad.conj(alpha)
    return g, go


def _sub_name(self, other, alpha, compute):
    return "SubBackward0" if _is_t(self) else "RsubBackward1"


def _div_backward(ctx, g, self, other, mode, compute):
    if mode is not None:  # floor/trunc division is piecewise constant
        return _zero_both(ctx, g, self, other, compute)
    return _both(ctx, lambda: g / _grad.conj(other),
                 lambda: -g * _grad.conj(self / other / other))


def _div_name(self, other, mode, compute):
    return "DivBackward0" if mode is None else "DivBackward2"


add_op = define("add(Tensor self, Tensor other, Scalar alpha, dtype compute) -> Tensor",
                meta=binary_meta("add", ARITH),
                derivative=Derivative(_add_backward, complex_ok=True))
add_op_ = define("add_(Tensor(a!) self, Tensor other, Scalar alpha, dtype compute) -> Tensor(a!)",
                 meta=binary_inplace_meta("add_"), functional=add_op)
sub_op = define("sub(Tensor self, Tensor other, Scalar alpha, dtype compute) -> Tensor",
                meta=binary_meta("sub", ARITH),
                derivative=Derivative(_sub_backward, complex_ok=True, name=_sub_name,
                                      scalars={"RsubBackward1": ("self",)}))
sub_op_ = define("sub_(Tensor(a!) self, Tensor other, Scalar alpha, dtype compute) -> Tensor(a!)",
                 meta=binary_inplace_meta("sub_"), functional=sub_op)
def _rsub_backward(ctx, g, self, other, alpha, compute):
    gs = None
    if ctx.needs(0):
        gs = -g if alpha.__class__ is int and alpha == 1 else g * -_grad.conj(alpha)
    return gs, g


# rsub of two tensors is its own op, as in PyTorch (RsubBackward0); with a number it is sub's
# number-first form (RsubBackward1, what ``1 - x`` records)
rsub_op = define("rsub(Tensor self, Tensor other, Scalar alpha, dtype compute) -> Tensor",
                 meta=binary_meta("rsub", ARITH),
                 composite=lambda x, y, alpha, compute: sub_op(y, x, alpha, compute),
                 derivative=Derivative(_rsub_backward, complex_ok=True))
div_op = define("div(Tensor self, Tensor other, str? rounding_mode, dtype compute) -> Tensor",
                meta=binary_meta("div", FLOAT_BINARY),
                derivative=Derivative(_div_backward, save={"self": "other", "other": None},
                                      complex_ok=True, name=_div_name))
div_op_ = define("div_(Tensor(a!) self, Tensor other, str? rounding_mode, dtype compute) -> "
                 "Tensor(a!)", meta=binary_inplace_meta("div_"), functional=div_op)


@add_op.def_pointwise
def _add_expr(e, a, b, alpha=1, *_):
    return f"({e(a)} + {e(b)})" if alpha == 1 else f"({e(a)} + {e.lit(alpha)} * {e(b)})"


@sub_op.def_pointwise
def _sub_expr(e, a, b, alpha=1, *_):
    return f"({e(a)} - {e(b)})" if alpha == 1 else f"({e(a)} - {e.lit(alpha)} * {e(b)})"


@rsub_op.def_pointwise
def _rsub_expr(e, a, b, alpha=1, *_):
    return _sub_expr(e, b, a, alpha)


@div_op.def_pointwise
def _div_expr(e, a, b, mode=None, *_):
    return None if mode is not None else f"({e(a)} / {e(b)})"   # rounding: a library call


def _scaled_onnx(op_type):
    def rule(b, c, x, y, alpha=1, *rest):
        y = c.operand(y)
        if alpha != 1:
            y = b.op("Mul", [y, c.scalar(alpha)])
        return b.op(op_type, [c.operand(x), y])
    return foldable(rule)


add_op.def_onnx(_scaled_onnx("Add"))
sub_op.def_onnx(_scaled_onnx("Sub"))
rsub_op.def_onnx(foldable(lambda b, c, x, y, alpha=1, *rest:
                          _scaled_onnx("Sub")(b, c, y, x, alpha)))


@div_op.def_onnx
@foldable
def _div_onnx(b, c, x, y, mode=None, *rest):
    q = b.op("Div", [c.operand(x), c.operand(y)])
    if mode == "floor" and c.out_dtype.is_floating_point:
        return b.op("Floor", [q])
    if mode == "trunc" and c.out_dtype.is_floating_point:
        return b.op("Where", [b.op("Less", [q, c.scalar(0)]), b.op("Ceil", [q]),
                              b.op("Floor", [q])])
    return q


# -- the Python API -----------------------------------------------------------------------------
def _binary_compute(name, family, a, b):
    d = binary_dtype(a, b)
    if family == "float":
        if d.category == COMPLEX and name != "logaddexp":
            raise RuntimeError(f"{name}: complex inputs are not supported, got "
                               f"{dtypes_of(a, b)}")
        return float_dtype(d)
    if family == "int" and d.category > INTEGRAL:
        raise RuntimeError(f"{name}: only integral and bool tensors are supported, got "
                           f"{dtypes_of(a, b)}")
    if family == "arith" and d is _dtype.bool_ and name in ("remainder", "fmod", "floor_divide",
                                                            "pow"):
        return _dtype.int64 if name != "pow" else d
    if family == "arith" and d.category == COMPLEX and name in (
            "maximum", "minimum", "fmax", "fmin", "remainder", "fmod", "floor_divide"):
        raise RuntimeError(f"{name}: complex inputs are not supported")
    if family == "cmp" and d.category == COMPLEX and name not in ("eq", "ne"):
        raise RuntimeError(f"{name}: complex inputs are not supported")
    return d


def _int_pow_check(a, b, d):
    if d.category <= INTEGRAL and is_scalar(b) and not isinstance(b, bool) and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")



def _make_binary(name, family, op, op_):
    # same-dtype real tensors of one shape compute in their own dtype for these families
    same_dtype_fast = family in ("arith", "cmp", "logical")
    # an integer tensor with a Python int keeps its dtype too; pow checks negative exponents
    int_scalar_fast = name != "pow"

    def fn(input, other, *, out=None):
        if same_dtype_fast and out is None and input.__class__ is Tensor:
            d = input.dtype
            if (other.__class__ is Tensor and other.dtype is d and other._shape == input._shape
                    and (d.category == INTEGRAL or d.category == FLOATING)) or \
                    (other.__class__ is float and d.category == FLOATING) or \
                    (other.__class__ is int and (d.category == FLOATING or
                                                 int_scalar_fast and d.category == INTEGRAL)):
                return op(input, other, d)
        input, other = check_operands(input, other, name)
        d = _binary_compute(name, family, input, other)
        if name == "pow":
            _int_pow_check(input, other, d)
        if input.__class__ is not Tensor or other.__class__ is not Tensor or \
                input._shape != other._shape:
            check_bcast(input, other, name)
        r = op(input, other, d)
        return r if out is None else write_out(out, r, name)

    def fn_(self, other):
        other = check_scalar(other, name + "_")
        d = _binary_compute(name, family, self, other)
        if name == "pow":
            _int_pow_check(self, other, d)
        out_dtype = _dtype.bool_ if family in ("cmp", "logical") else d
        check_inplace(f"{name}_", self, out_dtype, check_bcast(self, other, name + "_"))
        if 0 in self._stride:
            check_overlap(self, name + "_")
        op_(self, other, d)
        self._storage.version += 1
        return self

    fn.__name__, fn_.__name__ = name, name + "_"
    if same_dtype_fast:  # the first test above, compiled (csrc/api.c)
        fn = _fastpath.api_function(_fastpath.API_BINARY, op, fn)
    return fn, fn_


binary_api = {}
for _n, (_family, _op, _op_) in binary_ops.items():
    _fn, _fn_ = _make_binary(_n, _family, _op, _op_)
    binary_api[_n], binary_api[_n + "_"] = _fn, _fn_
    setattr(Tensor, _n, _fn)
    setattr(Tensor, _n + "_", _fn_)
for _alias, _target in ALIASES_BINARY.items():
    binary_api[_alias] = binary_api[_target]
    setattr(Tensor, _alias, binary_api[_target])
    setattr(Tensor, _alias + "_", binary_api[_target + "_"])


def _check_alpha(alpha, d, op):
    if alpha.__class__ is int and alpha == 1:
        return
    if isinstance(alpha, bool) and d is not _dtype.bool_:
        raise RuntimeError(f"{op}: boolean alpha only supported for Tensors of bool dtype")
    if isinstance(alpha, float) and d.category < FLOATING:
        raise RuntimeError(f"For integral input tensors, argument alpha must not be a floating "
                           f"point number. ({op})")
    if isinstance(alpha, complex) and d.category < COMPLEX:
        raise RuntimeError(f"For non-complex input tensors, argument alpha must not be a complex "
                           f"number. ({op})")


def _make_add_sub(name, op, op_):
    is_sub = name == "sub"

    def fn(input, other, *, alpha=1, out=None):
        if alpha.__class__ is int and alpha == 1 and out is None and input.__class__ is Tensor:
            d = input.dtype
            if (other.__class__ is Tensor and other.dtype is d and other._shape == input._shape
                    and (d.category == INTEGRAL or d.category == FLOATING)) or \
                    (other.__class__ is float and d.category == FLOATING) or \
                    (other.__class__ is int and (d.category == FLOATING or
                                                 d.category == INTEGRAL)):
                return op(input, other, 1, d)
        elif (input.__class__ is float or input.__class__ is int) and other.__class__ is Tensor \
                and other.dtype.category == FLOATING and alpha.__class__ is int and alpha == 1 \
                and out is None:
            return op(input, other, 1, other.dtype)  # 1 - p
        input, other = check_operands(input, other, name)
        if alpha.__class__ is not int:
            alpha = check_scalar(alpha, name)
        if is_sub:
            check_sub(input, other, name)
        d = binary_dtype(input, other)
        _check_alpha(alpha, d, name)
        if input.__class__ is not Tensor or other.__class__ is not Tensor or \
                input._shape != other._shape:
            check_bcast(input, other, name)
        r = op(input, other, alpha, d)
        return r if out is None else write_out(out, r, name)

    def fn_(self, other, *, alpha=1):
        if other.__class__ is not Tensor:
            other = check_scalar(other, name + "_")
        if alpha.__class__ is not int:
            alpha = check_scalar(alpha, name + "_")
        if is_sub:
            check_sub(self, other, name + "_")
        d = binary_dtype(self, other)
        _check_alpha(alpha, d, name + "_")
        if self.__class__ is not Tensor or other.__class__ is not Tensor or \
                self._shape != other._shape:
            check_inplace(f"{name}_", self, d, check_bcast(self, other, name + "_"))
        elif not _dtype.can_cast(d, self.dtype):
            check_inplace(f"{name}_", self, d, self._shape)
        if 0 in self._stride:
            check_overlap(self, name + "_")
        op_(self, other, alpha, d)
        self._storage.version += 1
        return self

    fn.__name__, fn_.__name__ = name, name + "_"
    return _fastpath.api_function(_fastpath.API_ADD_SUB, op, fn), fn_


add, add_ = _make_add_sub("add", add_op, add_op_)
sub, sub_ = _make_add_sub("sub", sub_op, sub_op_)
Tensor.add, Tensor.add_, Tensor.sub, Tensor.sub_ = add, add_, sub, sub_


def subtract(input, other, alpha=1, *, out=None):
    """``sub``; torch's overload for a number ``other`` takes ``alpha`` positionally."""
    return sub(input, other, alpha=alpha, out=out)


def subtract_(self, other, alpha=1):
    return sub_(self, other, alpha=alpha)


Tensor.subtract, Tensor.subtract_ = subtract, subtract_

_ROUNDING = (None, "trunc", "floor")


def _div_dtype(a, b, rounding_mode):
    if rounding_mode not in _ROUNDING:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    d = binary_dtype(a, b)
    if rounding_mode is None:
        return float_dtype(d)
    if d.category == COMPLEX:
        raise RuntimeError(f"div with rounding_mode='{rounding_mode}' is not supported for "
                           f"complex inputs")
    return _dtype.int64 if d is _dtype.bool_ else d


def div(input, other, *, rounding_mode=None, out=None):
    if rounding_mode is None and out is None and input.__class__ is Tensor and \
            input.dtype.category == FLOATING:
        d = input.dtype
        if other.__class__ is float or (other.__class__ is Tensor and other.dtype is d and
                                        other._shape == input._shape) or other.__class__ is int:
            return div_op(input, other, None, d)
    elif rounding_mode is None and out is None and other.__class__ is Tensor and \
            (input.__class__ is float or input.__class__ is int) and \
            other.dtype.category == FLOATING:
        return div_op(input, other, None, other.dtype)  # 1 / x
    input, other = check_operands(input, other, "div")
    d = _div_dtype(input, other, rounding_mode)
    if input.__class__ is not Tensor or other.__class__ is not Tensor or \
            input._shape != other._shape:
        check_bcast(input, other, "div")
    r = div_op(input, other, rounding_mode, d)
    return r if out is None else write_out(out, r, "div")


def div_(self, other, *, rounding_mode=None):
    other = check_scalar(other, "div_")
    d = _div_dtype(self, other, rounding_mode)
    check_inplace("div_", self, d, check_bcast(self, other, "div_"))
    if 0 in self._stride:
        check_overlap(self, "div_")
    div_op_(self, other, rounding_mode, d)
    self._storage.version += 1
    return self


div = _fastpath.api_function(_fastpath.API_DIV, div_op, div)  # its first test, compiled
Tensor.div, Tensor.div_ = div, div_
divide = true_divide = div
Tensor.divide = Tensor.true_divide = div
Tensor.divide_ = Tensor.true_divide_ = div_


def rsub(input, other, alpha=1):
    """``other - alpha * input`` (PyTorch's reversed subtraction)."""
    require_tensor(input, "rsub")
    if not isinstance(other, Tensor):
        return sub(check_scalar(other, "rsub"), input, alpha=alpha)
    if alpha.__class__ is not int:
        alpha = check_scalar(alpha, "rsub")
    check_sub(other, input, "rsub")
    d = binary_dtype(input, other)
    _check_alpha(alpha, d, "rsub")
    check_bcast(input, other, "rsub")
    return rsub_op(input, other, alpha, d)


# -- ember.func: every op above batches elementwise; its jvp comes from its backward ------------
_tangents.attach_elementwise(*(o for _, op, op_ in binary_ops.values() for o in (op, op_)),
                             add_op, add_op_, sub_op, sub_op_, rsub_op, div_op, div_op_)
