"""Elementwise ops: what they mean (promotion, broadcasting, in-place rules), defined once.

Kernel convention for this family (see ``ember.kit.elementwise`` for the array-module kernels):

* unary  ``name(Tensor x, dtype compute) -> Tensor``; in-place ``name_(Tensor(a!) x) -> x``
* binary ``name(Tensor|Scalar a, Tensor|Scalar b, dtype compute) -> Tensor``; in-place
  ``name_(Tensor(a!) a, Tensor|Scalar b, dtype compute) -> a``. ``b`` is already broadcastable
  to ``a`` and on its device; Python scalars stay scalars so kernels can use weak typing.

``compute`` is the dtype the values are computed in (PyTorch's result type); predicates and
comparisons return bool, the rest return ``compute``.
"""
from __future__ import annotations

import numpy as _np

from .. import _dtype
from .._dtype import BOOL, COMPLEX, FLOATING, INTEGRAL
from .._tensor import Tensor
from ..dispatch.dispatcher import define
from . import _meta
from ._util import _broadcast_pair, _dtype_title, check_inplace, is_scalar, write_out

_FLOATING_PT = (_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64)


# -- dtype rules --------------------------------------------------------------------------------
def _binary_dtype(a, b):
    """PyTorch's result_type for two operands, with fast paths for the common cases."""
    da = a.dtype if a.__class__ is Tensor or isinstance(a, Tensor) else None
    db = b.dtype if b.__class__ is Tensor or isinstance(b, Tensor) else None
    if da is not None and da is db:
        return da
    if db is None and da is not None:
        c = b.__class__
        if c is float and da.category == FLOATING or c is int and da.category in (
                INTEGRAL, FLOATING) or c is bool:
            return da
    return _dtype.result_type(a, b)


def _float_dtype(d):
    """The dtype a float-only op (exp, sqrt, div…) computes in for input dtype ``d``."""
    return d if d.category >= FLOATING else _dtype.get_default_dtype()


def _check_bcast(a, b, op):
    sa = a._shape if isinstance(a, Tensor) else ()
    sb = b._shape if isinstance(b, Tensor) else ()
    if sa == sb:
        return sa
    try:
        return _broadcast_pair(sa, sb)
    except RuntimeError as e:
        raise RuntimeError(f"{op}: {e} (shapes {list(sa)} and {list(sb)})") from None


def _check_scalar(x, op):
    """``x`` as an operand: a Tensor or a Python number (numpy scalars become Python numbers,
    as PyTorch takes them); TypeError otherwise. Only the slow paths call this."""
    c = x.__class__
    if c is Tensor or c is float or c is int or c is bool or c is complex:
        return x
    if isinstance(x, _np.generic):
        if x.dtype.kind in "biufc":
            return x.item()
    elif isinstance(x, Tensor) or is_scalar(x):
        return x
    raise TypeError(f"{op}(): expected a Tensor or a Python number, got {type(x).__name__}")


def _is_bool(x):
    return x.dtype is _dtype.bool_ if isinstance(x, Tensor) else x.__class__ is bool


def _check_sub(a, b, op):
    """PyTorch refuses ``-`` with any bool operand (a bool tensor or a Python bool)."""
    ba, bb = _is_bool(a), _is_bool(b)
    if ba and bb:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if ba or bb:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _check_overlap(t, op):
    """In-place writes into an expanded tensor (stride 0 over a dimension of size > 1) would
    write one element several times; PyTorch refuses them. (An empty tensor writes nothing.)"""
    if 0 in t._shape:
        return
    for n, s in zip(t._shape, t._stride):
        if s == 0 and n > 1:
            raise RuntimeError(f"{op}: unsupported operation: more than one element of the "
                               f"written-to tensor refers to a single memory location. Please "
                               f"clone() the tensor before performing the operation.")


# -- unary --------------------------------------------------------------------------------------
# family -> ops. "float": int inputs compute in the default float dtype; "same": keep the dtype;
# "pred": bool result.
UNARY = {
    "float": ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
              "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
              "atanh", "sigmoid", "erf", "erfc", "erfinv", "reciprocal", "silu", "mish",
              "lgamma", "digamma", "logit", "deg2rad", "rad2deg"],
    "same": ["neg", "abs", "sign", "floor", "ceil", "trunc", "frac", "square", "relu",
             "positive", "conj_physical", "bitwise_not"],
    "pred": ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not"],
}
_INT_OK_SAME = {"neg", "abs", "sign", "floor", "ceil", "trunc", "square", "relu", "positive",
                "conj_physical", "bitwise_not"}
ALIASES_UNARY = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
                 "arccosh": "acosh", "arctanh": "atanh", "negative": "neg", "absolute": "abs",
                 "fix": "trunc", "special_expit": "sigmoid"}

unary_ops = {}
for _family, _names in UNARY.items():
    for _n in _names:
        unary_ops[_n] = (_family, define(f"{_n}(Tensor self, dtype compute) -> Tensor",
                                         meta=_meta.unary(_n, _family)),
                         None if _family == "pred" else define(f"{_n}_(Tensor(a!) self) -> "
                                                               f"Tensor(a!)",
                                                               meta=_meta.inplace(_n + "_")))


# ops PyTorch does not define for complex inputs (numpy/scipy may, but every backend must agree)
_NO_COMPLEX = {"erf", "erfc", "erfinv", "lgamma", "digamma", "logit", "deg2rad", "rad2deg",
               "mish", "sign", "relu", "floor", "ceil", "trunc", "frac", "isposinf", "isneginf",
               "signbit"}


def _unary_dtype(name, family, x):
    d = x.dtype
    if d.category == COMPLEX and name in _NO_COMPLEX:
        hint = " (use sgn() or x / x.abs())" if name == "sign" else ""
        raise RuntimeError(f"{name}: complex inputs are not supported, got {d}{hint}")
    if family == "float":
        return _float_dtype(d)
    if family == "same":
        if d is _dtype.bool_:
            if name == "neg":
                raise RuntimeError("Negation, the `-` operator, on a bool tensor is not "
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


def _make_unary(name, family, op, op_):
    float_family = family == "float"

    def fn(input, *, out=None):
        # hot path: a float tensor through a float op needs no further rule
        if float_family and out is None and input.__class__ is Tensor and \
                input.dtype.category == FLOATING:
            return op(input, input.dtype)
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                            f"{type(input).__name__}")
        r = op(input, _unary_dtype(name, family, input))
        return r if out is None else write_out(out, r, name)

    def fn_(self):
        d = _unary_dtype(name, family, self)
        if name == "abs" and d.category == COMPLEX:
            raise RuntimeError("In-place abs is not supported for complex tensors.")
        check_inplace(f"{name}_", self, d, self._shape)
        if 0 in self._stride:
            _check_overlap(self, f"{name}_")
        op_(self)
        self._storage.version += 1
        return self

    fn.__name__, fn_.__name__ = name, name + "_"
    return fn, fn_


unary_api = {}
for _n, (_family, _op, _op_) in unary_ops.items():
    _fn, _fn_ = _make_unary(_n, _family, _op, _op_)
    unary_api[_n] = _fn
    setattr(Tensor, _n, _fn)
    if _op_ is not None:
        unary_api[_n + "_"] = _fn_
        setattr(Tensor, _n + "_", _fn_)
for _alias, _target in ALIASES_UNARY.items():
    unary_api[_alias] = unary_api[_target]
    setattr(Tensor, _alias, unary_api[_target])
    if _target + "_" in unary_api:
        setattr(Tensor, _alias + "_", unary_api[_target + "_"])


def _logical_not_(self):
    """In place: ``not self`` stored in self's dtype (1/0 for numbers), as PyTorch does."""
    if 0 in self._stride:
        _check_overlap(self, "logical_not_")
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
round_op = define("round(Tensor self, int decimals) -> Tensor", meta=_meta.same("round"))
round_op_ = define("round_(Tensor(a!) self, int decimals) -> Tensor(a!)",
                   meta=_meta.inplace("round_"))


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
        _check_overlap(self, "round_")
    round_op_(self, int(decimals))
    self._storage.version += 1
    return self


Tensor.round = round
Tensor.round_ = _round_

nan_to_num_op = define("nan_to_num(Tensor self, float nan, float? posinf, float? neginf) -> Tensor",
                       meta=_meta.same("nan_to_num"))
nan_to_num_op_ = define("nan_to_num_(Tensor(a!) self, float nan, float? posinf, float? neginf) "
                        "-> Tensor(a!)", meta=_meta.inplace("nan_to_num_"))


def _opt_float(x):
    return None if x is None else float(x)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    r = nan_to_num_op(input, float(nan), _opt_float(posinf), _opt_float(neginf))
    return r if out is None else write_out(out, r, "nan_to_num")


def _nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    if 0 in self._stride:
        _check_overlap(self, "nan_to_num_")
    nan_to_num_op_(self, float(nan), _opt_float(posinf), _opt_float(neginf))
    self._storage.version += 1
    return self


Tensor.nan_to_num = nan_to_num
Tensor.nan_to_num_ = _nan_to_num_

# activations with parameters: compute dtype like "float" unary ops
gelu_op = define("gelu(Tensor self, str approximate, dtype compute) -> Tensor",
                 meta=_meta.with_compute("gelu"))
softplus_op = define("softplus(Tensor self, float beta, float threshold, dtype compute) -> Tensor",
                     meta=_meta.with_compute("softplus"))
leaky_relu_op = define("leaky_relu(Tensor self, float negative_slope) -> Tensor",
                       meta=_meta.same("leaky_relu"))
elu_op = define("elu(Tensor self, float alpha, float scale, float input_scale) -> Tensor",
                meta=_meta.same("elu"))
hardtanh_op = define("hardtanh(Tensor self, float min_val, float max_val) -> Tensor",
                     meta=_meta.same("hardtanh"))


def _real_activation(input, op):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype.category == COMPLEX:
        raise RuntimeError(f"{op}: complex inputs are not supported, got {input.dtype}")
    return _float_dtype(input.dtype)


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return gelu_op(input, approximate, _real_activation(input, "gelu"))


def softplus(input, beta=1.0, threshold=20.0):
    return softplus_op(input, float(beta), float(threshold), _real_activation(input, "softplus"))


def _require_float(input, op):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype.category != FLOATING:
        raise RuntimeError(f"{op}: expected a floating-point tensor, got {input.dtype}")


def leaky_relu(input, negative_slope=0.01):
    _require_float(input, "leaky_relu")
    return leaky_relu_op(input, float(negative_slope))


def elu(input, alpha=1.0):
    _require_float(input, "elu")
    return elu_op(input, float(alpha), 1.0, 1.0)


def hardtanh(input, min_val=-1.0, max_val=1.0):
    _real_activation(input, "hardtanh")
    if min_val > max_val:
        raise ValueError("hardtanh: min_val cannot be greater than max_val")
    if input.dtype is _dtype.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if input.dtype is _dtype.uint8 and (int(min_val) < 0 or int(max_val) < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    return hardtanh_op(input, float(min_val), float(max_val))


# -- binary -------------------------------------------------------------------------------------
# family: "arith" computes/returns the result type; "float" computes in a float type (true div,
# atan2); "cmp" computes in the result type and returns bool; "logical" returns bool from any
# inputs; "int" accepts integral/bool only (bitwise, shifts).
BINARY = {
    "arith": ["mul", "maximum", "minimum", "fmax", "fmin", "remainder", "fmod", "floor_divide",
              "pow"],
    "float": ["atan2", "hypot", "logaddexp", "copysign", "xlogy"],
    "cmp": ["eq", "ne", "lt", "le", "gt", "ge"],
    "logical": ["logical_and", "logical_or", "logical_xor"],
    "int": ["bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
            "bitwise_right_shift"],
}
ALIASES_BINARY = {"multiply": "mul", "greater": "gt", "greater_equal": "ge", "less": "lt",
                  "less_equal": "le", "not_equal": "ne", "arctan2": "atan2"}

binary_ops = {}
for _family, _names in BINARY.items():
    for _n in _names:
        binary_ops[_n] = (_family,
                          define(f"{_n}(Tensor self, Tensor other, dtype compute) -> Tensor",
                                 meta=_meta.binary(_n, _family)),
                          define(f"{_n}_(Tensor(a!) self, Tensor other, dtype compute) -> "
                                 f"Tensor(a!)", meta=_meta.binary_(_n + "_")))
add_op = define("add(Tensor self, Tensor other, Scalar alpha, dtype compute) -> Tensor",
                meta=_meta.binary("add", "arith"))
add_op_ = define("add_(Tensor(a!) self, Tensor other, Scalar alpha, dtype compute) -> Tensor(a!)",
                 meta=_meta.binary_("add_"))
sub_op = define("sub(Tensor self, Tensor other, Scalar alpha, dtype compute) -> Tensor",
                meta=_meta.binary("sub", "arith"))
sub_op_ = define("sub_(Tensor(a!) self, Tensor other, Scalar alpha, dtype compute) -> Tensor(a!)",
                 meta=_meta.binary_("sub_"))
div_op = define("div(Tensor self, Tensor other, str? rounding_mode, dtype compute) -> Tensor",
                meta=_meta.binary("div", "float"))
div_op_ = define("div_(Tensor(a!) self, Tensor other, str? rounding_mode, dtype compute) -> "
                 "Tensor(a!)", meta=_meta.binary_("div_"))


def _binary_compute(name, family, a, b):
    d = _binary_dtype(a, b)
    if family == "float":
        if d.category == COMPLEX and name != "logaddexp":
            raise RuntimeError(f"{name}: complex inputs are not supported, got "
                               f"{_dtypes_of(a, b)}")
        return _float_dtype(d)
    if family == "int" and d.category > INTEGRAL:
        raise RuntimeError(f"{name}: only integral and bool tensors are supported, got "
                           f"{_dtypes_of(a, b)}")
    if family == "arith" and d is _dtype.bool_ and name in ("remainder", "fmod", "floor_divide",
                                                            "pow"):
        return _dtype.int64 if name != "pow" else d
    if family == "arith" and d.category == COMPLEX and name in (
            "maximum", "minimum", "fmax", "fmin", "remainder", "fmod", "floor_divide"):
        raise RuntimeError(f"{name}: complex inputs are not supported")
    if family == "cmp" and d.category == COMPLEX and name not in ("eq", "ne"):
        raise RuntimeError(f"{name}: complex inputs are not supported")
    return d


def _dtypes_of(*xs):
    return " and ".join(str(x.dtype) if isinstance(x, Tensor) else type(x).__name__ for x in xs)


def _int_pow_check(a, b, d):
    if d.category <= INTEGRAL and is_scalar(b) and not isinstance(b, bool) and b < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


def _align(a, b, op):
    """Put the tensor operands on one device (0-d CPU tensors and scalars follow the other)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor) and a.device is not b.device:
        if b.ndim == 0 and b.device.type == "cpu":
            b = b.to(a.device)
        elif a.ndim == 0 and a.device.type == "cpu":
            a = a.to(b.device)
    return a, b


def _make_binary(name, family, op, op_):
    # same-dtype real tensors of one shape compute in their own dtype for these families
    same_dtype_fast = family in ("arith", "cmp", "logical")

    def fn(input, other, *, out=None):
        if same_dtype_fast and out is None and input.__class__ is Tensor:
            d = input.dtype
            if (other.__class__ is Tensor and other.dtype is d and other._shape == input._shape
                    and (d.category == INTEGRAL or d.category == FLOATING)) or \
                    (other.__class__ is float and d.category == FLOATING) or \
                    (other.__class__ is int and d.category == FLOATING):
                return op(input, other, d)
        if not isinstance(input, Tensor):
            if not isinstance(other, Tensor):
                raise TypeError(f"{name}(): expected at least one Tensor argument, got "
                                f"{type(input).__name__} and {type(other).__name__}")
            input = _check_scalar(input, name)
        else:
            other = _check_scalar(other, name)
        d = _binary_compute(name, family, input, other)
        if name == "pow":
            _int_pow_check(input, other, d)
        if input.__class__ is not Tensor or other.__class__ is not Tensor or \
                input._shape != other._shape:
            _check_bcast(input, other, name)
        r = op(input, other, d)
        return r if out is None else write_out(out, r, name)

    def fn_(self, other):
        other = _check_scalar(other, name + "_")
        d = _binary_compute(name, family, self, other)
        if name == "pow":
            _int_pow_check(self, other, d)
        out_dtype = _dtype.bool_ if family in ("cmp", "logical") else d
        check_inplace(f"{name}_", self, out_dtype, _check_bcast(self, other, name + "_"))
        if 0 in self._stride:
            _check_overlap(self, name + "_")
        op_(self, other, d)
        self._storage.version += 1
        return self

    fn.__name__, fn_.__name__ = name, name + "_"
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
        if not isinstance(input, Tensor):
            if not isinstance(other, Tensor):
                raise TypeError(f"{name}(): expected at least one Tensor argument, got "
                                f"{type(input).__name__} and {type(other).__name__}")
            input = _check_scalar(input, name)
        else:
            other = _check_scalar(other, name)
        if alpha.__class__ is not int:
            alpha = _check_scalar(alpha, name)
        if is_sub:
            _check_sub(input, other, name)
        d = _binary_dtype(input, other)
        _check_alpha(alpha, d, name)
        if input.__class__ is not Tensor or other.__class__ is not Tensor or \
                input._shape != other._shape:
            _check_bcast(input, other, name)
        r = op(input, other, alpha, d)
        return r if out is None else write_out(out, r, name)

    def fn_(self, other, *, alpha=1):
        if other.__class__ is not Tensor:
            other = _check_scalar(other, name + "_")
        if alpha.__class__ is not int:
            alpha = _check_scalar(alpha, name + "_")
        if is_sub:
            _check_sub(self, other, name + "_")
        d = _binary_dtype(self, other)
        _check_alpha(alpha, d, name + "_")
        if self.__class__ is not Tensor or other.__class__ is not Tensor or \
                self._shape != other._shape:
            check_inplace(f"{name}_", self, d, _check_bcast(self, other, name + "_"))
        elif not _dtype.can_cast(d, self.dtype):
            check_inplace(f"{name}_", self, d, self._shape)
        if 0 in self._stride:
            _check_overlap(self, name + "_")
        op_(self, other, alpha, d)
        self._storage.version += 1
        return self

    fn.__name__, fn_.__name__ = name, name + "_"
    return fn, fn_


add, add_ = _make_add_sub("add", add_op, add_op_)
sub, sub_ = _make_add_sub("sub", sub_op, sub_op_)
Tensor.add, Tensor.add_, Tensor.sub, Tensor.sub_ = add, add_, sub, sub_
subtract = sub
Tensor.subtract, Tensor.subtract_ = sub, sub_

_ROUNDING = (None, "trunc", "floor")


def _div_dtype(a, b, rounding_mode):
    if rounding_mode not in _ROUNDING:
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    d = _binary_dtype(a, b)
    if rounding_mode is None:
        return _float_dtype(d)
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
    if not isinstance(input, Tensor):
        if not isinstance(other, Tensor):
            raise TypeError(f"div(): expected at least one Tensor argument, got "
                            f"{type(input).__name__} and {type(other).__name__}")
        input = _check_scalar(input, "div")
    else:
        other = _check_scalar(other, "div")
    d = _div_dtype(input, other, rounding_mode)
    if input.__class__ is not Tensor or other.__class__ is not Tensor or \
            input._shape != other._shape:
        _check_bcast(input, other, "div")
    r = div_op(input, other, rounding_mode, d)
    return r if out is None else write_out(out, r, "div")


def div_(self, other, *, rounding_mode=None):
    other = _check_scalar(other, "div_")
    d = _div_dtype(self, other, rounding_mode)
    check_inplace("div_", self, d, _check_bcast(self, other, "div_"))
    if 0 in self._stride:
        _check_overlap(self, "div_")
    div_op_(self, other, rounding_mode, d)
    self._storage.version += 1
    return self


Tensor.div, Tensor.div_ = div, div_
divide = true_divide = div
Tensor.divide = Tensor.true_divide = div
Tensor.divide_ = Tensor.true_divide_ = div_


# -- where / clamp ------------------------------------------------------------------------------
where_op = define("where(Tensor condition, Tensor self, Tensor other, dtype compute) -> Tensor",
                  meta=_meta.where)


def where(condition, input=None, other=None, *, out=None):
    if input is None and other is None:
        from .indexing import nonzero
        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be Tensor")
    if condition.dtype is not _dtype.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_dtype_name(condition.dtype)}")
    input = _check_scalar(input, "where")
    other = _check_scalar(other, "where")
    d = _binary_dtype(input, other)
    shape = _check_bcast(input, other, "where")
    try:
        _broadcast_pair(condition._shape, shape)
    except RuntimeError as e:
        raise RuntimeError(f"where: {e} (condition shape {list(condition._shape)}, values "
                           f"broadcast to {list(shape)})") from None
    input, other = _align(input, other, "where")
    r = where_op(condition, input, other, d)
    return r if out is None else write_out(out, r, "where")


def _dtype_name(d):
    return _dtype_title(d)


Tensor.where = lambda self, condition, other: where(condition, self, other)

clamp_op = define("clamp(Tensor self, Tensor? min, Tensor? max, dtype compute) -> Tensor",
                  meta=_meta.clamp)
clamp_op_ = define("clamp_(Tensor(a!) self, Tensor? min, Tensor? max, dtype compute) -> "
                   "Tensor(a!)", meta=_meta.clamp_)


def _clamp_args(input, min, max, op):
    """(compute dtype, min, max) with the bounds checked (numpy scalars made Python numbers)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if min is None and max is None:
        raise RuntimeError(f"{op}: At least one of 'min' or 'max' must not be None")
    if input.dtype.category == COMPLEX:
        raise RuntimeError("clamp is not supported for complex types")
    if min is not None:
        min = _check_scalar(min, op)
    if max is not None:
        max = _check_scalar(max, op)
    for x in (min, max):
        if x.__class__ is complex or isinstance(x, Tensor) and x.dtype.category == COMPLEX:
            raise RuntimeError("clamp is not supported for complex types")
    return _dtype.result_type(input, *[x for x in (min, max) if x is not None]), min, max


def _clamp_shape(input, min, max, op):
    shape = input._shape
    for x in (min, max):
        if isinstance(x, Tensor) and x._shape != shape:
            try:
                shape = _broadcast_pair(shape, x._shape)
            except RuntimeError as e:
                raise RuntimeError(f"{op}: {e} (shapes {list(shape)} and "
                                   f"{list(x._shape)})") from None
    return shape


def clamp(input, min=None, max=None, *, out=None):
    d, min, max = _clamp_args(input, min, max, "clamp")
    _clamp_shape(input, min, max, "clamp")
    r = clamp_op(input, min, max, d)
    return r if out is None else write_out(out, r, "clamp")


def clamp_(self, min=None, max=None):
    d, min, max = _clamp_args(self, min, max, "clamp_")
    check_inplace("clamp_", self, d, _clamp_shape(self, min, max, "clamp_"))
    if 0 in self._stride:
        _check_overlap(self, "clamp_")
    clamp_op_(self, min, max, d)
    self._storage.version += 1
    return self


clip, clip_ = clamp, clamp_
Tensor.clamp = Tensor.clip = clamp
Tensor.clamp_ = Tensor.clip_ = clamp_


def clamp_min(input, min):
    return clamp(input, min=min)


def clamp_max(input, max):
    return clamp(input, max=max)


Tensor.clamp_min, Tensor.clamp_max = clamp_min, clamp_max


# -- Python operators ---------------------------------------------------------------------------
def _rev(fn):
    return lambda self, other: fn(other, self)


def _inplace(fn_):
    return lambda self, other: fn_(self, other)


_pow = binary_api["pow"]
_mul = binary_api["mul"]
Tensor.__add__ = add  # the API functions take the tensor first: no wrapper needed
Tensor.__radd__ = lambda self, other: add(self, other)  # + and * commute: keep the fast path
Tensor.__iadd__ = _inplace(add_)
Tensor.__sub__ = sub
Tensor.__rsub__ = lambda self, other: sub(other, self)
Tensor.__isub__ = _inplace(sub_)
Tensor.__mul__ = _mul
Tensor.__rmul__ = lambda self, other: _mul(self, other)
Tensor.__imul__ = _inplace(binary_api["mul_"])
Tensor.__truediv__ = div
Tensor.__rtruediv__ = lambda self, other: div(other, self)
Tensor.__itruediv__ = _inplace(div_)
Tensor.__floordiv__ = lambda self, other: binary_api["floor_divide"](self, other)
Tensor.__rfloordiv__ = _rev(binary_api["floor_divide"])
Tensor.__ifloordiv__ = _inplace(binary_api["floor_divide_"])
Tensor.__mod__ = lambda self, other: binary_api["remainder"](self, other)
Tensor.__rmod__ = _rev(binary_api["remainder"])
Tensor.__imod__ = _inplace(binary_api["remainder_"])
Tensor.__pow__ = lambda self, other: _pow(self, other)
Tensor.__rpow__ = _rev(_pow)
Tensor.__ipow__ = _inplace(binary_api["pow_"])
Tensor.__neg__ = lambda self: unary_api["neg"](self)
Tensor.__pos__ = lambda self: self
Tensor.__abs__ = lambda self: unary_api["abs"](self)
Tensor.__invert__ = lambda self: (unary_api["logical_not"](self) if self.dtype is _dtype.bool_
                                  else unary_api["bitwise_not"](self))
for _py, _name in [("and", "bitwise_and"), ("or", "bitwise_or"), ("xor", "bitwise_xor"),
                   ("lshift", "bitwise_left_shift"), ("rshift", "bitwise_right_shift")]:
    setattr(Tensor, f"__{_py}__", (lambda f: lambda self, other: f(self, other))(binary_api[_name]))
    setattr(Tensor, f"__r{_py}__", _rev(binary_api[_name]))
    setattr(Tensor, f"__i{_py}__", _inplace(binary_api[_name + "_"]))
for _py, _name in [("eq", "eq"), ("ne", "ne"), ("lt", "lt"), ("le", "le"), ("gt", "gt"),
                   ("ge", "ge")]:
    setattr(Tensor, f"__{_py}__", (lambda f: lambda self, other: f(self, other)
                                   if isinstance(other, (Tensor, _np.generic)) or is_scalar(other)
                                   else NotImplemented)(binary_api[_name]))
Tensor.__hash__ = lambda self: id(self)
# numpy scalars and arrays defer to the Tensor's reflected operators (np.float32(2) * t is a
# Tensor, as in PyTorch)
Tensor.__array_priority__ = 1000
