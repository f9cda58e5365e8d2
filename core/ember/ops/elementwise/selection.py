"""Selection ops: ``where`` and ``clamp`` (their derivatives route the gradient by a mask), and
``heaviside`` composed from ``where``."""
from __future__ import annotations

from ... import _dtype
from ..._dtype import COMPLEX
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _grad, _primitives, _tangents
from .. import _meta
from .._lowering import CONDITION, clamp, onnx_clamp, operands
from .._meta import broadcast
from .._util import (_broadcast_pair, _dtype_title, check_inplace, ember_namespace, require_tensor,
                     tensor_method, write_out)
from . import binary as _bin  # formulas only: binary imports this module
from ._rules import align, binary_dtype, check_bcast, check_overlap, check_scalar


def _where_meta(condition, a, b, compute):
    return broadcast("where", condition, a, b), compute


def _where_backward(ctx, g, condition, self, other, compute):
    return (None, _grad.keep_where(g, condition) if ctx.needs(1) else None,
            _grad.mask_fill_zero(g, condition) if ctx.needs(2) else None)


where_op = define("where(Tensor condition, Tensor self, Tensor other, dtype compute) -> Tensor",
                  meta=_where_meta,
                  derivative=Derivative(_where_backward, save=("condition",),
                                        diff=("self", "other"), complex_ok=True))


@where_op.def_pointwise
@operands(CONDITION)
def _where_expr(e, c, a, b, *_):
    return f"({e(c)} ? {e(a)} : {e(b)})"


@where_op.def_onnx
def _where_onnx(b, c, cond, x, y, *rest):
    return b.op("Where", [cond, c.operand(x), c.operand(y)])


def where(condition, input=None, other=None, *, out=None):
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be Tensor")
    if condition.dtype is not _dtype.bool_:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_dtype_title(condition.dtype)}")
    input = check_scalar(input, "where")
    other = check_scalar(other, "where")
    d = binary_dtype(input, other)
    shape = check_bcast(input, other, "where")
    try:
        _broadcast_pair(condition._shape, shape)
    except RuntimeError as e:
        raise RuntimeError(f"where: {e} (condition shape {list(condition._shape)}, values "
                           f"broadcast to {list(shape)})") from None
    input, other = align(input, other)
    r = where_op(condition, input, other, d)
    return r if out is None else write_out(out, r, "where")


_primitives.provide(where=where)
Tensor.where = lambda self, condition, other: where(condition, self, other)


def _clamp_meta(x, lo, hi, compute):
    return broadcast("clamp", x, lo, hi), compute


def _clamp_meta_(x, lo, hi, compute):
    return _meta.same_shape("clamp_", x, broadcast("clamp_", x, lo, hi), "self, min and max")


def _clamp_name(self, lo, hi, compute):
    return "ClampBackward0" if isinstance(lo, Tensor) or isinstance(hi, Tensor) else \
        "ClampBackward1"


def _clamp_backward(ctx, g, x, lo, hi, compute):
    inside = None
    if lo is not None:
        inside = x.ge(lo)
    if hi is not None:
        upper = x.le(hi)
        inside = upper if inside is None else inside.logical_and(upper)
    gx = _grad.keep_where(g, inside) if ctx.needs(0) else None
    glo = ghi = None
    if ctx.needs(1):
        m = x.lt(lo)
        if hi is not None:
            m = m.logical_and(lo.le(hi))  # lo needs a gradient: it is a tensor
        glo = _grad.keep_where(g, m)
    if ctx.needs(2):
        pre = _bin.binary_api["maximum"](x, lo) if lo is not None else x
        ghi = _grad.keep_where(g, pre.gt(hi))
    return gx, glo, ghi


clamp_op = define("clamp(Tensor self, Tensor? min, Tensor? max, dtype compute) -> Tensor",
                  meta=_clamp_meta,
                  derivative=Derivative(_clamp_backward, save=("self", "min", "max"),
                                        name=_clamp_name,
                                        scalars={"ClampBackward1": ("min", "max")}))
clamp_op_ = define("clamp_(Tensor(a!) self, Tensor? min, Tensor? max, dtype compute) -> "
                   "Tensor(a!)", meta=_clamp_meta_, functional=clamp_op)
clamp_op.def_pointwise(clamp)       # tensor bounds stay a library call
clamp_op.def_onnx(onnx_clamp)


def _clamp_args(input, min, max, op):
    """(compute dtype, min, max) with the bounds checked (numpy scalars made Python numbers)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if min is None and max is None:
        raise RuntimeError(f"{op}: At least one of 'min' or 'max' must not be None")
    if input.dtype.category == COMPLEX:
        raise RuntimeError("clamp is not supported for complex types")
    if min is not None:
        min = check_scalar(min, op)
    if max is not None:
        max = check_scalar(max, op)
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
        check_overlap(self, "clamp_")
    clamp_op_(self, min, max, d)
    self._storage.version += 1
    return self


clip, clip_ = clamp, clamp_
Tensor.clamp = Tensor.clip = clamp
Tensor.clamp_ = Tensor.clip_ = clamp_


# clamp_min / clamp_max are ops of their own, as in PyTorch (ClampMinBackward0 for a number,
# ClampMinBackward1 for a tensor bound), with its formulas
def _clamp_min_backward(ctx, g, x, lo, compute):
    return (_grad.keep_where(g, x.ge(lo)) if ctx.needs(0) else None,
            _grad.keep_where(g, x.lt(lo)) if ctx.needs(1) else None)


def _clamp_max_backward(ctx, g, x, hi, compute):
    return (_grad.keep_where(g, x.le(hi)) if ctx.needs(0) else None,
            _grad.keep_where(g, x.gt(hi)) if ctx.needs(1) else None)


def _bound_name(prefix):
    return lambda x, bound, compute: f"{prefix}Backward{1 if isinstance(bound, Tensor) else 0}"


clamp_min_op = define("clamp_min(Tensor self, Tensor min, dtype compute) -> Tensor",
                      meta=lambda x, lo, compute: _clamp_meta(x, lo, None, compute),
                      composite=lambda x, lo, compute: clamp_op(x, lo, None, compute),
                      derivative=Derivative(_clamp_min_backward, save=("self", "min"),
                                            name=_bound_name("ClampMin"),
                                            scalars={"ClampMinBackward0": ("min",)}))
clamp_max_op = define("clamp_max(Tensor self, Tensor max, dtype compute) -> Tensor",
                      meta=lambda x, hi, compute: _clamp_meta(x, None, hi, compute),
                      composite=lambda x, hi, compute: clamp_op(x, None, hi, compute),
                      derivative=Derivative(_clamp_max_backward, save=("self", "max"),
                                            name=_bound_name("ClampMax"),
                                            scalars={"ClampMaxBackward0": ("max",)}))
# clamp's rule (this module's public clamp shadows the _lowering name later on)
clamp_min_op.def_pointwise(lambda e, x, lo, *rest: clamp_op.pointwise(e, x, lo, None))
clamp_max_op.def_pointwise(lambda e, x, hi, *rest: clamp_op.pointwise(e, x, None, hi))
clamp_min_op.def_onnx(lambda b, c, x, lo, *rest: onnx_clamp(b, c, x, lo, None))
clamp_max_op.def_onnx(lambda b, c, x, hi, *rest: onnx_clamp(b, c, x, None, hi))


def clamp_min(input, min):
    if min is None:
        raise TypeError("clamp_min(): argument 'min' must be a number or Tensor, not None")
    d, min, _ = _clamp_args(input, min, None, "clamp_min")
    _clamp_shape(input, min, None, "clamp_min")
    return clamp_min_op(input, min, d)


def clamp_max(input, max):
    if max is None:
        raise TypeError("clamp_max(): argument 'max' must be a number or Tensor, not None")
    d, _, max = _clamp_args(input, None, max, "clamp_max")
    _clamp_shape(input, None, max, "clamp_max")
    return clamp_max_op(input, max, d)


Tensor.clamp_min, Tensor.clamp_max = clamp_min, clamp_max
Tensor.clamp_min_ = lambda self, min: clamp_(self, min=min)
Tensor.clamp_max_ = lambda self, max: clamp_(self, max=max)


# -- heaviside: a selection between 0, 1 and the given values ------------------------------
@tensor_method()
def heaviside(input, values):
    """0 below zero, 1 above, ``values`` at zero."""
    require_tensor(input, "heaviside")
    em = ember_namespace()
    if not isinstance(values, Tensor):
        values = em.tensor(values, dtype=input.dtype, device=input.device)
    if values.dtype is not input.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different "
                           f"dtypes: got {input.dtype} and {values.dtype}")
    if input.is_complex():
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    one = em.ones((), dtype=input.dtype, device=input.device)
    zero = em.zeros((), dtype=input.dtype, device=input.device)
    return em.where(input.eq(0), values, em.where(input.gt(0), one, zero))


@tensor_method()
def heaviside_(self, values):
    return self.copy_(heaviside(self, values))


# -- ember.func: batching rules and jvps (from the backward formulas) ---------------------------
_tangents.attach_elementwise(where_op, clamp_op, clamp_op_, clamp_min_op, clamp_max_op)
