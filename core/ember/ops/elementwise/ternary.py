"""Ternary elementwise ops: ``addcmul``, ``addcdiv`` and ``lerp`` (optimizers' building blocks).

Kernel convention: ``addcmul(Tensor self, Tensor tensor1, Tensor tensor2, Scalar value, dtype
compute) -> Tensor`` computes ``self + value * tensor1 * tensor2`` (``addcdiv``: ``self + value
* tensor1 / tensor2``, in that order, as PyTorch's kernels round); ``lerp(Tensor self, Tensor
end, Tensor|float weight, dtype compute)`` uses PyTorch's two-sided formula, exact at both
ends: ``weight < 0.5 ? self + weight * (end - self) : end - (end - self) * (1 - weight)``. The
operands are already broadcastable and on one device; the in-place forms write ``self``.
"""
from __future__ import annotations

from ... import _dtype
from ..._dtype import COMPLEX, FLOATING, INTEGRAL
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _batching, _grad, _meta
from .._util import check_inplace, write_out
from ._rules import check_overlap, check_scalar

__all__ = ["addcmul", "addcdiv", "lerp"]


def _ternary_meta(name):
    def meta(self, a, b, value_or_compute, *rest):
        compute = rest[-1] if rest else value_or_compute
        return _meta.broadcast(name, self, a, b), compute
    return meta


def _ternary_inplace_meta(name):
    def meta(self, a, b, *rest):
        return _meta.same_shape(name, _meta.tensor_arg(name, self), _meta.broadcast(name, self, a, b),
                                "self and the other operands")
    return meta


# -- formulas -----------------------------------------------------------------------------------
def _addcmul_backward(ctx, g, self, t1, t2, value, compute):
    return (g if ctx.needs(0) else None,
            g * _grad.conj(t2 * value) if ctx.needs(1) else None,
            g * _grad.conj(t1 * value) if ctx.needs(2) else None)


def _addcdiv_backward(ctx, g, self, t1, t2, value, compute):
    return (g if ctx.needs(0) else None,
            g * _grad.conj(value / t2) if ctx.needs(1) else None,
            -g * _grad.conj(t1 * value / (t2 * t2)) if ctx.needs(2) else None)


def _lerp_backward(ctx, g, self, end, weight, compute):
    w = weight if isinstance(weight, Tensor) else weight
    return (g * _grad.conj(1 - w) if ctx.needs(0) else None,
            g * _grad.conj(w) if ctx.needs(1) else None,
            g * _grad.conj(end - self) if ctx.needs(2) else None)


def _lerp_name(self, end, weight, compute):
    return "LerpBackward1" if isinstance(weight, Tensor) else "LerpBackward0"


_ADDC_SAVE = {"tensor1": "tensor2", "tensor2": "tensor1"}

addcmul_op = define(
    "addcmul(Tensor self, Tensor tensor1, Tensor tensor2, Scalar value, dtype compute) -> Tensor",
    meta=_ternary_meta("addcmul"),
    derivative=Derivative(_addcmul_backward, save=_ADDC_SAVE, complex_ok=True))
addcmul_op_ = define(
    "addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, Scalar value, dtype compute) -> "
    "Tensor(a!)", meta=_ternary_inplace_meta("addcmul_"), functional=addcmul_op)
addcdiv_op = define(
    "addcdiv(Tensor self, Tensor tensor1, Tensor tensor2, Scalar value, dtype compute) -> Tensor",
    meta=_ternary_meta("addcdiv"),
    derivative=Derivative(_addcdiv_backward, save=("tensor1", "tensor2"), complex_ok=True))
addcdiv_op_ = define(
    "addcdiv_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, Scalar value, dtype compute) -> "
    "Tensor(a!)", meta=_ternary_inplace_meta("addcdiv_"), functional=addcdiv_op)
lerp_op = define(
    "lerp(Tensor self, Tensor end, Tensor|float weight, dtype compute) -> Tensor",
    meta=_ternary_meta("lerp"),
    derivative=Derivative(_lerp_backward, save={"self": "weight", "end": "weight",
                                                "weight": None},
                          complex_ok=True, name=_lerp_name,
                          scalars={"LerpBackward0": ("weight",)}))
lerp_op_ = define(
    "lerp_(Tensor(a!) self, Tensor end, Tensor|float weight, dtype compute) -> Tensor(a!)",
    meta=_ternary_inplace_meta("lerp_"), functional=lerp_op)



# -- lowering: one element as an expression (fusion) ------------------------------------------
@addcmul_op.def_pointwise
def _addcmul_expr(e, s, t1, t2, value=1, *_):
    return f"({e(s)} + {e.lit(value)} * {e(t1)} * {e(t2)})"


@addcdiv_op.def_pointwise
def _addcdiv_expr(e, s, t1, t2, value=1, *_):
    return f"({e(s)} + {e.lit(value)} * {e(t1)} / {e(t2)})"


@lerp_op.def_pointwise
def _lerp_expr(e, a, b, w, *_):
    a, b, w = e(a), e(b), e(w)
    # the eager kernels' two-sided form: exact at w = 0 and w = 1
    return (f"({w} < {e.lit(0.5)} ? {a} + {w} * ({b} - {a}) "
            f": {b} - ({b} - {a}) * ({e.lit(1)} - {w}))")

# ember.func.vmap: elementwise with broadcasting, like the binary ops
for _op in (addcmul_op, addcmul_op_, addcdiv_op, addcdiv_op_, lerp_op, lerp_op_):
    _op.def_batch_rule(_batching.elementwise(_op))
del _op


# -- API ----------------------------------------------------------------------------------------
def _tensor(x, op, what):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{what}' (position {_POS[what]}) must be Tensor, not "
                        f"{type(x).__name__}")
    return x


_POS = {"input": 1, "tensor1": 2, "tensor2": 3, "end": 2, "weight": 3}


def _bcast(op, *xs):
    try:
        return _meta.broadcast(op, *xs)
    except RuntimeError as e:
        raise RuntimeError(str(e)) from None


def _addc_args(op, input, tensor1, tensor2, value):
    _tensor(input, op, "input")
    _tensor(tensor1, op, "tensor1")
    _tensor(tensor2, op, "tensor2")
    value = check_scalar(value, op)
    if isinstance(value, Tensor):
        if value.ndim:
            raise TypeError(f"{op}(): argument 'value' must be Number, not Tensor")
        value = value.item()
    d = _dtype.result_type(input, tensor1, tensor2)
    if op.startswith("addcdiv") and tensor1.dtype.category <= INTEGRAL and \
            tensor2.dtype.category <= INTEGRAL:
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 and "
                           "tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float "
                           "inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    if d is _dtype.bool_:
        raise NotImplementedError(f"\"{op.rstrip('_')}_cpu_out\" not implemented for 'Bool'")
    if isinstance(value, complex) and d.category < COMPLEX:
        raise RuntimeError(f"{op}: value cannot be converted to type {d} without overflow")
    if d.category <= INTEGRAL and not isinstance(value, int):
        value = int(value)  # PyTorch converts the scalar to the integer type (truncation)
    return d, value


def _addc(name, op, op_):
    def fn(input, tensor1, tensor2, *, value=1, out=None):
        d, value = _addc_args(name, input, tensor1, tensor2, value)
        _bcast(name, input, tensor1, tensor2)
        r = op(input, tensor1, tensor2, value, d)
        return r if out is None else write_out(out, r, name)

    def fn_(self, tensor1, tensor2, *, value=1):
        d, value = _addc_args(name + "_", self, tensor1, tensor2, value)
        check_inplace(name + "_", self, d, _bcast(name + "_", self, tensor1, tensor2))
        if 0 in self._stride:
            check_overlap(self, name + "_")
        op_(self, tensor1, tensor2, value, d)
        self._storage.version += 1
        return self

    fn.__name__, fn_.__name__ = name, name + "_"
    return fn, fn_


addcmul, addcmul_ = _addc("addcmul", addcmul_op, addcmul_op_)
addcdiv, addcdiv_ = _addc("addcdiv", addcdiv_op, addcdiv_op_)


def _lerp_args(op, input, end, weight):
    _tensor(input, op, "input")
    _tensor(end, op, "end")
    if input.dtype is not end.dtype:
        raise RuntimeError(f"{op}: expected dtype {input.dtype.name} for `end` but got dtype "
                           f"{end.dtype.name}")
    if isinstance(weight, Tensor):
        if weight.dtype is not input.dtype and weight.ndim:
            raise RuntimeError(f"{op}: expected dtype {input.dtype.name} for `weight` but got "
                               f"dtype {weight.dtype.name}")
    else:
        weight = check_scalar(weight, op)
        if isinstance(weight, Tensor):
            raise TypeError(f"{op}(): argument 'weight' must be Tensor or Number")
    if input.dtype.category < FLOATING:
        raise NotImplementedError(f"{op}: \"lerp_kernel_scalar\" not implemented for "
                           f"'{_dtype_title(input.dtype)}'")
    return input.dtype, weight


def _dtype_title(d):
    return {"float32": "Float", "float64": "Double", "int64": "Long", "int32": "Int",
            "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}.get(d.name, d.name)


def lerp(input, end, weight, *, out=None):
    d, weight = _lerp_args("lerp", input, end, weight)
    _bcast("lerp", input, end, weight)
    r = lerp_op(input, end, weight, d)
    return r if out is None else write_out(out, r, "lerp")


def lerp_(self, end, weight):
    d, weight = _lerp_args("lerp_", self, end, weight)
    check_inplace("lerp_", self, d, _bcast("lerp_", self, end, weight))
    if 0 in self._stride:
        check_overlap(self, "lerp_")
    lerp_op_(self, end, weight, d)
    self._storage.version += 1
    return self


Tensor.addcmul, Tensor.addcmul_ = addcmul, addcmul_
Tensor.addcdiv, Tensor.addcdiv_ = addcdiv, addcdiv_
Tensor.lerp, Tensor.lerp_ = lerp, lerp_
