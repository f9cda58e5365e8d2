"""Complex numbers as values: ``angle``, ``sgn``, ``complex``, ``polar`` (``abs``, ``conj`` and
the part views are with the unary ops and the views).

Each is a composite of ops every backend has (``atan2`` of the part views, ``stack`` then
``view_as_complex``), so no backend needs a kernel, with PyTorch's derivative and node name
beside it (``FunctionsManual.cpp``: ``angle_backward``, ``polar_backward``, ``complex``'s
``real(grad)``/``imag(grad)``).
"""
from __future__ import annotations

import math

from ... import _dtype
from ..._dtype import COMPLEX, FLOATING
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _grad
from .. import _meta
from .. import conversion as _conv
from .. import views as _views
from .._util import _dtype_title, tensor_method, write_out
from ._rules import float_dtype, write_in_place
from .selection import where


# -- angle --------------------------------------------------------------------------------------
def _angle(self):
    if self.dtype.category == COMPLEX:
        return _views.imag(self).atan2(_views.real(self))
    x = self if self.dtype.category == FLOATING else self.to(float_dtype(self.dtype))
    # pi for negative values, 0 otherwise; NaN stays NaN
    r = (x < 0).to(x.dtype) * math.pi
    return where(x.isnan(), x, r)


def _angle_meta(self):
    d = _meta.tensor_arg("angle", self).dtype
    return tuple(self._shape), _meta.real_of(float_dtype(d))


def _angle_backward(ctx, g, self):
    if self.dtype.category != COMPLEX:
        return (_grad.zeros_like(g),)
    # d angle / d z in PyTorch's convention: grad * z / |z|^2 * i, 0 where z == 0
    a = self.abs()
    r = g * self / (a * a) * 1j
    return (_grad.mask_fill_zero(r, self.eq(0)),)


angle_op = define("angle(Tensor self) -> Tensor", meta=_angle_meta, composite=_angle,
                  derivative=Derivative(_angle_backward, save=("self",), complex_ok=True,
                                        name="AngleBackward0"))


def angle(input, *, out=None):
    """The argument of each element (radians); for real values 0 or pi (NaN stays NaN)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"angle(): argument 'input' must be Tensor, not {type(input).__name__}")
    r = angle_op(input)
    return r if out is None else write_out(out, r, "angle")


Tensor.angle = angle


# -- sgn: its own op (SgnBackward0, for real inputs too, as torch records it) -------------------
def _sgn(self):
    if self.dtype.category != COMPLEX:
        return self.sign()
    a = self.abs()
    zero = a.eq(0)
    return _grad.mask_fill_zero(self / where(zero, 1.0, a), zero)


def _sgn_backward(ctx, g, self):
    # torch's sgn_backward: 0 for real inputs; (g - sgn^2 conj(g)) / (2|z|), 0 at z = 0
    if self.dtype.category != COMPLEX:
        return (_grad.zeros_like(g),)
    a = self.abs()
    s = ctx.result
    return (_grad.mask_fill_zero((g - s * s * _grad.conj(g)) / (a * 2), a.eq(0)),)


sgn_op = define("sgn(Tensor self) -> Tensor", meta=_meta.same("sgn"), composite=_sgn,
                derivative=Derivative(_sgn_backward, save=("self", "result"), complex_ok=True),
                doc="z / |z| for complex values (0 at 0); sign for real ones")


@sgn_op.def_onnx
def _sgn_onnx(b, c, x, *rest):
    if c.out_dtype.category == COMPLEX:
        c.refuse("complex tensors")
    return b.op("Sign", [x])


def sgn(input, *, out=None):
    """``z / |z|`` for complex values (0 at 0); ``sign`` for real ones."""
    if not isinstance(input, Tensor):
        raise TypeError(f"sgn(): argument 'input' must be Tensor, not {type(input).__name__}")
    r = sgn_op(input)
    return r if out is None else write_out(out, r, "sgn")


Tensor.sgn = sgn


# -- complex / polar ----------------------------------------------------------------------------
def _pair_dtype(fname, a, b, names):
    for t, name in zip((a, b), names):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fname}(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if a.dtype not in (_dtype.float32, _dtype.float64, _dtype.float16) or \
            b.dtype not in (_dtype.float32, _dtype.float64, _dtype.float16):
        raise RuntimeError(f"{fname}: Expected both inputs to be Half, Float or Double tensors "
                           f"but got {_dtype_title(a.dtype)} and {_dtype_title(b.dtype)}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{fname}: Expected object of scalar type {_dtype_title(a.dtype)} but "
                           f"got scalar type {_dtype_title(b.dtype)} for second argument")
    if a.dtype is _dtype.float16:
        raise RuntimeError(f"{fname}: complex32 is not supported (got Half inputs)")
    return a.dtype.to_complex()


def _complex(real, imag):
    real, imag = _views.broadcast_tensors(real, imag)
    return _views.view_as_complex(_shape_ops.stack([real, imag], -1))


def _complex_meta(real, imag):
    shape = _meta.broadcast("complex", real, imag)
    return shape, real.dtype.to_complex()


def _complex_backward(ctx, g, real, imag):
    return (_views.real(g), _views.imag(g))


complex_op = define("complex(Tensor real, Tensor imag) -> Tensor", meta=_complex_meta,
                    composite=_complex,
                    derivative=Derivative(_complex_backward, complex_ok=True,
                                          name="ComplexBackward0"))


def complex(real, imag, *, out=None):  # noqa: A001 - PyTorch's name
    """The complex tensor ``real + imag * 1j`` (broadcast; float32 -> complex64,
    float64 -> complex128)."""
    _pair_dtype("complex", real, imag, ("real", "imag"))
    r = complex_op(real, imag)
    return r if out is None else write_out(out, r, "complex")


def _polar(abs, angle):
    return _complex(abs * angle.cos(), abs * angle.sin())


def _polar_backward(ctx, g, abs, angle):
    result = ctx.result
    gc = g.conj()
    return (_views.real(gc * sgn(result)), _views.real(gc * (result * 1j)))


polar_op = define("polar(Tensor abs, Tensor angle) -> Tensor", meta=_complex_meta,
                  composite=_polar,
                  derivative=Derivative(_polar_backward, save=("result",), complex_ok=True,
                                        name="PolarBackward0"))


def polar(abs, angle, *, out=None):  # noqa: A002 - PyTorch's argument names
    """The complex tensor ``abs * (cos(angle) + sin(angle) * 1j)``."""
    _pair_dtype("polar", abs, angle, ("abs", "angle"))
    r = polar_op(abs, angle)
    return r if out is None else write_out(out, r, "polar")


# -- the lazy-bit queries: ember has no lazy conjugation or negation, so is_conj/is_neg are False
# and resolve_conj/resolve_neg return their input, exactly what torch does without those bits
def is_conj(input):
    return input.is_conj()


def is_neg(input):
    return input.is_neg()


def resolve_conj(input):
    return input.resolve_conj()


def resolve_neg(input):
    return input.resolve_neg()


sgn__op = define("sgn_(Tensor(a!) self) -> Tensor(a!)", meta=_meta.inplace("sgn_"),
                 composite=_conv.written_back(sgn_op), functional=sgn_op)


@tensor_method("sgn_")
def _sgn_(self):
    return write_in_place(sgn__op, "sgn_", self)


__all__ = ["angle", "sgn", "complex", "polar", "is_conj", "is_neg", "resolve_conj",
           "resolve_neg"]

from .. import shape as _shape_ops  # noqa: E402 - shape imports this family
