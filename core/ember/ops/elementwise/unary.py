"""Unary elementwise ops: one row per op — its kind (dtype rule) and its derivative.

Kernel convention: ``name(Tensor self, dtype compute) -> Tensor``; in place
``name_(Tensor(a!) self, dtype compute) -> Tensor(a!)`` (the functional twin's arguments; the
op layer passes ``compute`` = ``self``'s dtype, refusing results that can't be written back). For the holomorphic (complex-capable) ops the gradient
is ``grad * conj(f'(z))``, PyTorch's convention.
"""
from __future__ import annotations

import math

from ... import _dtype, _fastpath
from ..._dtype import COMPLEX, FLOATING, INTEGRAL
from ..._tensor import Tensor
from ...dispatch.dispatcher import define, get_op
from ...dispatch.facets import NOT_DIFFERENTIABLE, Derivative
from .. import _grad, _primitives, _tangents
from .. import _meta
from .._lowering import attach, call, foldable, onnx_unary
from .._util import check_inplace, write_out
from . import activation as _act  # formulas only (mish)
from . import backward as _bw  # fused backward ops (relu, tanh, sigmoid)
from . import complex_numbers as _cplx  # formulas only (sgn)
from ._rules import FLOAT, PRED, SAME, check_overlap, float_dtype, unary_meta
from .selection import clamp

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
C = True  # the formula holds for complex inputs


# -- how rows say what their derivative is ------------------------------------------------------
def from_input(fprime, **kw):
    """``grad * conj(f'(x))`` with ``f'`` written in terms of the saved input."""
    return Derivative(lambda ctx, g, x, compute: (g * _grad.conj(fprime(x)),), save=("self",),
                      **kw)


def from_result(fprime, **kw):
    """``grad * conj(f'(x))`` with ``f'`` written in terms of the saved result."""
    return Derivative(lambda ctx, g, x, compute: (g * _grad.conj(fprime(ctx.result)),),
                      save=("result",), **kw)


def linear(fn, **kw):
    """A linear op: the gradient is ``fn(grad)``; nothing is saved."""
    return Derivative(lambda ctx, g, x, compute: (fn(g),), **kw)


ZERO = Derivative(_grad.zero_grad)  # piecewise constant: zero gradient


def _silu_d(x):
    s = x.sigmoid()
    return s * (1 + x * (1 - s))


def _mish_d(x):
    t = _act.softplus(x).tanh()
    return t + x * x.sigmoid() * (1 - t * t)


def _digamma_backward(ctx, g, x, compute):
    # trigamma: polygamma(1, x), defined with the special functions (``special.py``)
    return (g * get_op("polygamma")(1, x, compute),)


def _abs_backward(ctx, g, x, compute):
    # PyTorch: grad * sgn(x), with sgn(z) = z / |z| (0 at 0) for complex values
    return (g * (_cplx.sgn(x) if x.dtype.category == COMPLEX else x.sign()),)


def _relu_backward(ctx, g, x, compute):
    r = ctx.result
    if g.dtype is r.dtype and g._shape == r._shape and r.dtype.category == FLOATING:
        return (_bw.threshold_backward_op(g, r, 0),)
    return (_grad.keep_where(g, r.le(0).logical_not()),)      # a NaN keeps its gradient


def _fused_or(fused_op, fprime):
    """A saved-result formula that runs ``fused_op(grad, result)`` for real floating dtypes
    (one kernel) and ``grad * conj(fprime(result))`` otherwise."""
    def backward(ctx, g, x, compute):
        r = ctx.result
        if g.dtype is r.dtype and g._shape == r._shape and r.dtype.category == FLOATING:
            return (getattr(_bw, fused_op)(g, r),)
        return (g * _grad.conj(fprime(r)),)
    return Derivative(backward, save=("result",), complex_ok=C)


# -- how rows lower: one element as an expression (fusion), the ONNX nodes (export) -------------
def _neg_expr(e, x, *_):
    return f"(-{e(x)})"


def _square_expr(e, x, *_):
    return f"({e(x)} * {e(x)})"


def _reciprocal_expr(e, x, *_):
    return f"({e.lit(1)} / {e(x)})"


def _rsqrt_expr(e, x, *_):
    return f"({e.lit(1)} / {e.fn('sqrt', e(x))})"


def _sigmoid_expr(e, x, *_):
    return f"({e.lit(1)} / ({e.lit(1)} + {e.fn('exp', f'-{e(x)}')}))"


def _silu_expr(e, x, *_):
    return f"({e(x)} / ({e.lit(1)} + {e.fn('exp', f'-{e(x)}')}))"


def _relu_expr(e, x, *_):
    return f"({e(x)} < {e.lit(0)} ? {e.lit(0)} : {e(x)})"   # relu(nan) is nan, as eager


def _mish_expr(e, x, *_):
    return f"({e(x)} * {e.fn('tanh', e.fn('log1p', e.fn('exp', e(x))))})"


def _rsqrt_onnx(b, c, x, *_):
    return b.op("Reciprocal", [b.op("Sqrt", [x])])


def _square_onnx(b, c, x, *_):
    return b.op("Mul", [x, x])


def _silu_onnx(b, c, x, *_):
    return b.op("Mul", [x, b.op("Sigmoid", [x])])


# name, kind, derivative[, pointwise expression[, ONNX rule]] (``ops/_lowering.py``)
UNARY_ROWS = [
    ("exp",        FLOAT, from_result(lambda r: r, complex_ok=C), call("exp"), onnx_unary("Exp")),
    ("exp2",       FLOAT, from_result(lambda r: r * _LN2), call("exp2")),
    ("expm1",      FLOAT, from_result(lambda r: r + 1, complex_ok=C), call("expm1")),
    ("log",        FLOAT, from_input(lambda x: x.reciprocal(), complex_ok=C),
     call("log"), onnx_unary("Log")),
    ("log2",       FLOAT, from_input(lambda x: (x * _LN2).reciprocal()), call("log2")),
    ("log10",      FLOAT, from_input(lambda x: (x * _LN10).reciprocal())),
    ("log1p",      FLOAT, from_input(lambda x: (x + 1).reciprocal(), complex_ok=C), call("log1p")),
    ("sqrt",       FLOAT, from_result(lambda r: (r * 2).reciprocal(), complex_ok=C),
     call("sqrt"), onnx_unary("Sqrt")),
    ("rsqrt",      FLOAT, from_result(lambda r: r * r * r * -0.5, complex_ok=C),
     _rsqrt_expr, _rsqrt_onnx),
    ("sin",        FLOAT, from_input(lambda x: x.cos(), complex_ok=C),
     call("sin"), onnx_unary("Sin")),
    ("cos",        FLOAT, from_input(lambda x: -x.sin(), complex_ok=C),
     call("cos"), onnx_unary("Cos")),
    ("tan",        FLOAT, from_result(lambda r: r * r + 1, complex_ok=C),
     call("tan"), onnx_unary("Tan")),
    ("asin",       FLOAT, from_input(lambda x: (1 - x * x).rsqrt(), complex_ok=C)),
    ("acos",       FLOAT, from_input(lambda x: -(1 - x * x).rsqrt(), complex_ok=C)),
    ("atan",       FLOAT, from_input(lambda x: (x * x + 1).reciprocal(), complex_ok=C)),
    ("sinh",       FLOAT, from_input(lambda x: x.cosh(), complex_ok=C)),
    ("cosh",       FLOAT, from_input(lambda x: x.sinh(), complex_ok=C)),
    ("tanh",       FLOAT, _fused_or("tanh_backward_op", lambda r: 1 - r * r),
     call("tanh"), onnx_unary("Tanh")),
    ("asinh",      FLOAT, from_input(lambda x: (x * x + 1).rsqrt(), complex_ok=C)),
    ("acosh",      FLOAT, from_input(lambda x: (x * x - 1).rsqrt(), complex_ok=C)),
    ("atanh",      FLOAT, from_input(lambda x: (1 - x * x).reciprocal(), complex_ok=C)),
    ("sigmoid",    FLOAT, _fused_or("sigmoid_backward_op", lambda r: r * (1 - r)),
     _sigmoid_expr, onnx_unary("Sigmoid")),
    ("erf",        FLOAT, from_input(lambda x: (-(x * x)).exp() * _TWO_OVER_SQRT_PI),
     call("erf"), onnx_unary("Erf")),
    ("erfc",       FLOAT, from_input(lambda x: (-(x * x)).exp() * -_TWO_OVER_SQRT_PI)),
    # torch's erfinv recomputes erfinv(x) from the saved input rather than saving the result
    ("erfinv",     FLOAT, from_input(lambda x: (x.erfinv() ** 2).exp() * (math.pi ** 0.5 / 2))),
    ("reciprocal", FLOAT, from_result(lambda r: -(r * r), complex_ok=C),
     _reciprocal_expr, onnx_unary("Reciprocal")),
    ("silu",       FLOAT, from_input(_silu_d), _silu_expr, _silu_onnx),
    ("mish",       FLOAT, from_input(_mish_d), _mish_expr),
    ("lgamma",     FLOAT, from_input(lambda x: x.digamma())),
    ("digamma",    FLOAT, Derivative(_digamma_backward, save=("self",))),
    ("logit",      FLOAT, from_input(lambda x: (x * (1 - x)).reciprocal())),
    ("deg2rad",    FLOAT, linear(lambda g: g * (math.pi / 180), name="Deg2RadBackward0")),
    ("rad2deg",    FLOAT, linear(lambda g: g * (180 / math.pi), name="Rad2DegBackward0")),
    ("neg",        SAME,  linear(lambda g: -g, complex_ok=C),
     _neg_expr, foldable(onnx_unary("Neg"))),
    ("abs",        SAME,  Derivative(_abs_backward, save=("self",), complex_ok=C),
     call("fabs"), onnx_unary("Abs")),
    ("sign",       SAME,  ZERO, None, onnx_unary("Sign")),
    ("floor",      SAME,  ZERO, None, onnx_unary("Floor")),
    ("ceil",       SAME,  ZERO, None, onnx_unary("Ceil")),
    ("trunc",      SAME,  ZERO),
    ("frac",       SAME,  linear(lambda g: g)),
    ("square",     SAME,  from_input(lambda x: x * 2, complex_ok=C, name="PowBackward0"),
     _square_expr, _square_onnx),
    ("relu",       SAME,  Derivative(_relu_backward, save=("result",)),
     _relu_expr, onnx_unary("Relu")),
    ("positive",   SAME,  linear(lambda g: g, complex_ok=C)),
    ("conj_physical", SAME, linear(_grad.conj, complex_ok=C)),
    ("bitwise_not", SAME, NOT_DIFFERENTIABLE),
    ("isnan",      PRED,  NOT_DIFFERENTIABLE),
    ("isinf",      PRED,  NOT_DIFFERENTIABLE),
    ("isfinite",   PRED,  NOT_DIFFERENTIABLE),
    ("isposinf",   PRED,  NOT_DIFFERENTIABLE),
    ("isneginf",   PRED,  NOT_DIFFERENTIABLE),
    ("signbit",    PRED,  NOT_DIFFERENTIABLE),
    ("logical_not", PRED, NOT_DIFFERENTIABLE),
]
UNARY = {kind: [name for name, k, *_ in UNARY_ROWS if k == kind] for kind in (FLOAT, SAME, PRED)}

# ops PyTorch does not define for complex inputs (numpy/scipy may, but every backend must agree)
_NO_COMPLEX = {"erf", "erfc", "erfinv", "lgamma", "digamma", "logit", "deg2rad", "rad2deg",
               "mish", "sign", "relu", "floor", "ceil", "trunc", "frac", "isposinf", "isneginf",
               "signbit"}
ALIASES_UNARY = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
                 "arccosh": "acosh", "arctanh": "atanh", "negative": "neg", "absolute": "abs",
                 "fix": "trunc", "special_expit": "sigmoid"}


def _unary_dtype(name, kind, x):
    d = x.dtype
    if d.category == COMPLEX and name in _NO_COMPLEX:
        hint = " (use sgn() or x / x.abs())" if name == "sign" else ""
        raise RuntimeError(f"{name}: complex inputs are not supported, got {d}{hint}")
    if kind == FLOAT:
        return float_dtype(d)
    if kind == SAME:
        if d is _dtype.bool_:
            if name == "neg":
                raise RuntimeError("neg: Negation, the `-` operator, on a bool tensor is not "
                                   "supported. If you are trying to invert a mask, use the `~` "
                                   "or `logical_not()` operator instead.")
            if name == "positive":
                raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
            if name == "relu":
                raise RuntimeError("Boolean inputs not supported for relu")
            if name == "square":
                return _dtype.int64  # square is pow(x, 2): bool promotes to int64
        if name == "bitwise_not" and d.category > INTEGRAL:
            raise RuntimeError(f"bitwise_not: only integral and bool tensors are supported, got "
                               f"{d}")
        if name == "frac" and d.category < FLOATING:
            raise RuntimeError(f"frac: only floating-point tensors are supported, got {d}")
        return d
    return d  # predicates compute in the input dtype and return bool


def _make_unary(name, kind, op, op_):
    float_kind = kind == FLOAT

    def fn(input, *, out=None):
        # hot path: a float tensor through a float op needs no further rule
        if float_kind and out is None and input.__class__ is Tensor and \
                input.dtype.category == FLOATING:
            return op(input, input.dtype)
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        r = op(input, _unary_dtype(name, kind, input))
        return r if out is None else write_out(out, r, name)

    def fn_(self):
        d = _unary_dtype(name, kind, self)
        if name == "abs" and d.category == COMPLEX:
            raise RuntimeError("In-place abs is not supported for complex tensors.")
        check_inplace(f"{name}_", self, d, self._shape)
        if 0 in self._stride:
            check_overlap(self, f"{name}_")
        op_(self, d)
        self._storage.version += 1
        return self

    fn.__name__, fn_.__name__ = name, name + "_"
    if name != "bitwise_not":
        # compiled (csrc/api.c): a floating tensor goes to op(input, input.dtype), which is
        # what fn does for it with every kind of op but bitwise_not (which refuses floats)
        fn = _fastpath.api_function(_fastpath.API_UNARY, op, fn)
    return fn, fn_


unary_ops = {}   # name -> (kind, op, in-place op or None)
unary_api = {}   # name -> the Python function (PyTorch's name), in-place ones as name_
for _name, _kind, _derivative, *_lowering in UNARY_ROWS:
    _op = define(f"{_name}(Tensor self, dtype compute) -> Tensor", meta=unary_meta(_name, _kind),
                 derivative=_derivative)
    attach(_op, _lowering)
    _op_ = None if _kind == PRED else define(f"{_name}_(Tensor(a!) self, dtype compute) -> Tensor(a!)",
                                             meta=_meta.inplace(_name + "_"), functional=_op)
    unary_ops[_name] = (_kind, _op, _op_)
    _fn, _fn_ = _make_unary(_name, _kind, _op, _op_)
    unary_api[_name] = _fn
    setattr(Tensor, _name, _fn)
    if _op_ is not None:
        unary_api[_name + "_"] = _fn_
        setattr(Tensor, _name + "_", _fn_)
for _alias, _target in ALIASES_UNARY.items():
    unary_api[_alias] = unary_api[_target]
    setattr(Tensor, _alias, unary_api[_target])
    if _target + "_" in unary_api:
        setattr(Tensor, _alias + "_", unary_api[_target + "_"])
conj_physical_op = unary_ops["conj_physical"][1]
_primitives.provide(conj_physical_op=conj_physical_op)


def _logical_not_(self):
    """In place: ``not self`` stored in self's dtype (1/0 for numbers), as PyTorch does."""
    if 0 in self._stride:
        check_overlap(self, "logical_not_")
    return self.copy_(unary_api["logical_not"](self))


unary_api["logical_not_"] = Tensor.logical_not_ = _logical_not_


def conj(input):
    """The complex conjugate (computed eagerly; ember has no lazy conjugate bit). A non-complex
    tensor is returned as is, like PyTorch."""
    return unary_api["conj_physical"](input) if input.dtype.category == COMPLEX else input


def _resolve_conj(self):
    return self


unary_api["conj"] = conj
Tensor.conj = conj
Tensor.resolve_conj = Tensor.resolve_neg = _resolve_conj
Tensor.is_conj = Tensor.is_neg = lambda self: False


# -- unary ops with parameters ------------------------------------------------------------------
def _round_name(self, decimals):
    return "RoundBackward1" if decimals else "RoundBackward0"


round_op = define("round(Tensor self, int decimals) -> Tensor", meta=_meta.same("round"),
                  derivative=Derivative(_grad.zero_grad, name=_round_name))
round_op_ = define("round_(Tensor(a!) self, int decimals) -> Tensor(a!)",
                   meta=_meta.inplace("round_"), functional=round_op)


def _check_round(input):
    if not isinstance(input, Tensor):
        raise TypeError(f"round(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype.category == COMPLEX:
        raise RuntimeError("round is not supported for complex inputs")


def round(input, *, decimals=0, out=None):
    _check_round(input)
    r = round_op(input, int(decimals))
    return r if out is None else write_out(out, r, "round")


def _round_(self, *, decimals=0):
    _check_round(self)
    if 0 in self._stride:
        check_overlap(self, "round_")
    round_op_(self, int(decimals))
    self._storage.version += 1
    return self


Tensor.round = round
Tensor.round_ = _round_


def _nan_to_num_backward(ctx, g, self, nan, posinf, neginf):
    return (_grad.keep_where(g, self.isfinite()),)


nan_to_num_op = define("nan_to_num(Tensor self, float nan, float? posinf, float? neginf) -> Tensor",
                       meta=_meta.same("nan_to_num"),
                       derivative=Derivative(_nan_to_num_backward, save=("self",),
                                             name="NanToNumBackward0"))
nan_to_num_op_ = define("nan_to_num_(Tensor(a!) self, float nan, float? posinf, float? neginf) "
                        "-> Tensor(a!)", meta=_meta.inplace("nan_to_num_"),
                        functional=nan_to_num_op)


def _opt_float(x):
    return None if x is None else float(x)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    r = nan_to_num_op(input, float(nan), _opt_float(posinf), _opt_float(neginf))
    return r if out is None else write_out(out, r, "nan_to_num")


def _nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    if 0 in self._stride:
        check_overlap(self, "nan_to_num_")
    nan_to_num_op_(self, float(nan), _opt_float(posinf), _opt_float(neginf))
    self._storage.version += 1
    return self


Tensor.nan_to_num = nan_to_num
Tensor.nan_to_num_ = _nan_to_num_


# -- ember.func: every op above batches elementwise; its jvp comes from its backward ------------
_tangents.attach_elementwise(*(o for _, op, op_ in unary_ops.values() for o in (op, op_)),
                             round_op, round_op_, nan_to_num_op, nan_to_num_op_)


# -- logit's eps: the table op, with the input first clamped to [eps, 1 - eps] -------------------
_plain_logit, _plain_logit_ = unary_api["logit"], unary_api["logit_"]


def logit(input, eps=None, *, out=None):
    """``log(p / (1 - p))``; with ``eps`` the input is first clamped to [eps, 1 - eps] (the
    gradient is zero where it was clamped), as PyTorch's."""
    if eps is not None and isinstance(input, Tensor):
        input = clamp(input, float(eps), 1.0 - float(eps))
    return _plain_logit(input, out=out)


def logit_(self, eps=None):
    if eps is None:
        return _plain_logit_(self)
    check_inplace("logit_", self, _unary_dtype("logit", FLOAT, self), self._shape)
    return self.copy_(_plain_logit(clamp(self, float(eps), 1.0 - float(eps))))


unary_api["logit"], unary_api["logit_"] = logit, logit_
Tensor.logit, Tensor.logit_ = logit, logit_
