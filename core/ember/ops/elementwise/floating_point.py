"""Floating-point structure: ``frexp`` (mantissa and exponent), ``ldexp``, ``nextafter`` (one
unit in the last place toward another value) and ``float_power`` (``pow`` in double
precision) — compositions of ember ops, so they batch under vmap like any elementwise op."""
from __future__ import annotations

import math

from ... import _dtype
from ... import return_types as _rt
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .._util import check_inplace, ember_namespace, require_tensor, scalar_beside, tensor_method

__all__ = ["frexp", "ldexp", "nextafter", "float_power"]

_rt.frexp = _rt._return_type("frexp", ["mantissa", "exponent"])


def _linked(values, scale, source):
    return values.clone()


def _linked_backward(ctx, grad, values, scale, source):
    # the source's gradient is ``grad * scale`` (``grad`` without a scale); values get none
    return None, None, grad if scale is None else grad * scale


def _linked_op(name):
    """An op whose value is ``values`` (computed from detached inputs) and whose derivative is
    PyTorch's for ``name``: ``grad * scale`` to ``source`` (summed to its shape by the node)."""
    return define(f"_{name.lower()}_linked(Tensor values, Tensor? scale, Tensor source) -> Tensor",
                  composite=_linked,
                  derivative=Derivative(_linked_backward, save=("scale",), diff=("source",),
                                        name=f"{name}Backward0"))


def _nextafter_linked(values, input, other):
    return values.clone()


def _nextafter_backward(ctx, grad, values, input, other):
    # PyTorch's NextafterBackward0: grad to input, a zero gradient to other
    return None, grad, grad.new_zeros(ctx.meta(2)[0]) if ctx.needs(2) else None


frexp_linked_op = _linked_op("Frexp")
nextafter_linked_op = define("_nextafter_linked(Tensor values, Tensor self, Tensor other) -> Tensor",
                             composite=_nextafter_linked,
                             derivative=Derivative(_nextafter_backward, diff=("self", "other"),
                                                   name="NextafterBackward0"))


_PRECISION = {"float32": (24, -125, 3.4028234663852886e38),
              "float64": (53, -1021, 1.7976931348623157e308)}


@tensor_method()
def frexp(input):
    """(mantissa, exponent) with ``input = mantissa * 2 ** exponent``, |mantissa| in [0.5, 1)
    (0, inf and NaN keep themselves with exponent 0)."""
    require_tensor(input, "frexp")
    em = ember_namespace()
    if not input.is_floating_point():
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, but got "
                           f"{input.dtype}")
    x = input.detach()
    finite = x.isfinite() & x.ne(0)
    safe = em.where(finite, x.abs(), em.ones((), dtype=x.dtype, device=x.device))
    e = safe.to(_dtype.float64).log2().floor() + 1
    m = safe.to(_dtype.float64) / em.pow(2.0, e)
    # log2 rounds near powers of two: one correction step each way
    e = em.where(m.ge(1), e + 1, em.where(m.lt(0.5), e - 1, e))
    m = safe.to(_dtype.float64) / em.pow(2.0, e)
    mantissa = em.where(finite, (m * x.sign().to(_dtype.float64)).to(x.dtype), x)
    exponent = em.where(finite, e, em.zeros((), dtype=e.dtype, device=e.device))
    if input.requires_grad:       # PyTorch's derivative: grad / 2 ** exponent
        mantissa = frexp_linked_op(mantissa, em.pow(2.0, -exponent).to(x.dtype), input)
    return _rt.frexp(mantissa, exponent.to(_dtype.int32))


@tensor_method()
def nextafter(input, other):
    """The next representable value after ``input`` toward ``other``: one unit in the last
    place (from ``frexp``'s exponent; half of it moving toward 0 from a power of two), in plain
    arithmetic, so it batches under ember.func.vmap like any elementwise composite."""
    require_tensor(input, "nextafter")
    em = ember_namespace()
    if not isinstance(other, Tensor):
        other = em.tensor(other, dtype=input.dtype, device=input.device)
    if input.dtype not in (_dtype.float32, _dtype.float64) or other.dtype is not input.dtype:
        raise RuntimeError(f"\"nextafter_cpu\" not implemented for '{input.dtype}' and "
                           f"'{other.dtype}' (expected float32 or float64, the same for both)")
    digits, emin, largest = _PRECISION[input.dtype.name]
    x, y = em.broadcast_tensors(input.detach(), other.detach())
    mantissa, exponent = frexp(x)
    e = exponent.to(_dtype.float64).clamp_min(emin)
    ulp = em.pow(2.0, e - digits)
    toward_zero = (y - x).sign().ne(x.sign())
    half = toward_zero & mantissa.abs().eq(0.5) & exponent.to(_dtype.float64).gt(emin)
    step = em.where(half, ulp / 2, ulp)
    up = y.gt(x)
    moved = (x.to(_dtype.float64) + em.where(up, step, -step)).to(x.dtype)
    tiny = em.tensor(2.0 ** (emin - digits), dtype=_dtype.float64, device=x.device).to(x.dtype)
    out = em.where(x.eq(0), em.where(y.gt(0), tiny, -tiny), moved)
    big = em.tensor(largest, dtype=x.dtype, device=x.device)
    out = em.where(x.isinf() & x.ne(y), em.where(x.gt(0), big, -big), out)
    out = em.where(x.eq(y), y, out)
    nan = x.ne(x) | y.ne(y)
    out = em.where(nan, x + y, out)
    if input.requires_grad or other.requires_grad:
        # PyTorch's derivative: the gradient passes to input unchanged, other gets none
        out = nextafter_linked_op(out, input, other)
    return out


def _ldexp(input, other):
    return input * ember_namespace().pow(2.0, other)


def _ldexp_backward(ctx, g, input, other):
    # torch's LdexpBackward0: 2**other for input, result * ln 2 for other (input not saved)
    em = ember_namespace()
    return (g * em.pow(2.0, other) if ctx.needs(0) else None,
            g * ctx.result * math.log(2.0) if ctx.needs(1) else None)


ldexp_op = define("ldexp(Tensor self, Tensor other) -> Tensor", composite=_ldexp,
                  derivative=Derivative(_ldexp_backward, save=({"other": "self",
                                                                "result": "other"})),
                  doc="input * 2 ** other, with torch's saved tensors (other, result)")


@tensor_method()
def ldexp(input, other):
    """``input * 2 ** other``."""
    require_tensor(input, "ldexp")
    em = ember_namespace()
    other = scalar_beside(other, input)
    dt = _dtype.promote_types(input.dtype, other.dtype)
    if dt.category < _dtype.FLOATING:    # integer operands: the default float dtype
        dt = _dtype.get_default_dtype()
    if dt.category == _dtype.COMPLEX:
        # PyTorch's composite ``mul(input, pow(2, other))``: a complex power of two
        return input.to(dt) * em.pow(2.0, other.to(dt))
    return ldexp_op(input.to(dt), other.to(dt))


@tensor_method()
def float_power(input, exponent):
    """``pow`` in double precision (complex128 when either operand is complex)."""
    em = ember_namespace()
    ops = [t for t in (input, exponent) if isinstance(t, Tensor)]
    if not ops:
        raise TypeError("float_power(): expected at least one Tensor argument")
    cplx = any(t.is_complex() for t in ops) or any(isinstance(t, complex)
                                                    for t in (input, exponent))
    dt = _dtype.complex128 if cplx else _dtype.float64
    a = input.to(dt) if isinstance(input, Tensor) else input
    b = exponent.to(dt) if isinstance(exponent, Tensor) else exponent
    return em.pow(a, b)


@tensor_method("float_power_")
def _float_power_(self, exponent):
    if self.dtype is not _dtype.float64 and self.dtype is not _dtype.complex128:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype} but the "
                           f"operation's result requires dtype Double")
    return self.copy_(float_power(self, exponent))


def _into_self(op, self, result):
    """An in-place op's result written into ``self``, refused as PyTorch refuses it when self
    cannot hold the result's type or shape."""
    check_inplace(op, self, result.dtype, result._shape)
    return self.copy_(result)


@tensor_method()
def ldexp_(self, other):
    return _into_self("ldexp_", self, ldexp(self, other))


@tensor_method()
def nextafter_(self, other):
    return _into_self("nextafter_", self, nextafter(self, other))
