"""Activations with parameters (gelu, softplus, leaky_relu, elu, hardtanh): each op with its
meta and derivative. Parameter-free activations (relu, sigmoid, silu, mish) are unary rows."""
from __future__ import annotations

import math

from ... import _dtype
from ..._dtype import COMPLEX, FLOATING
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _grad, _tangents
from .. import _meta
from . import selection as _sel  # formulas only: selection imports this module
from ._rules import float_dtype

_K_ALPHA = 1.0 / math.sqrt(2.0)
_K_PDF = 1.0 / math.sqrt(2.0 * math.pi)
_K_BETA = math.sqrt(2.0 / math.pi)
_K_KAPPA = 0.044715


def _gelu_backward(ctx, g, x, approximate, compute):
    if approximate == "tanh":
        x_sq = x * x
        t = ((x + x_sq * x * _K_KAPPA) * _K_BETA).tanh()
        left = (t + 1) * 0.5
        right = x * 0.5 * (1 - t * t) * _K_BETA * (x_sq * (3 * _K_KAPPA) + 1)
        return (g * (left + right),)
    cdf = ((x * _K_ALPHA).erf() + 1) * 0.5
    pdf = (x * x * -0.5).exp() * _K_PDF
    return (g * (cdf + x * pdf),)


def _softplus_backward(ctx, g, x, beta, threshold, compute):
    bx = x * beta
    return (_sel.where(bx.gt(threshold), g, g * bx.sigmoid()),)


def _leaky_relu_backward(ctx, g, x, slope):
    return (_sel.where(x.gt(0), g, g * slope),)


def _elu_backward(ctx, g, x, alpha, scale, input_scale):
    neg = g * (x * input_scale).exp() * (alpha * scale * input_scale)
    return (_sel.where(x.gt(0), g * scale, neg),)


def _hardtanh_backward(ctx, g, x, lo, hi):
    return (_grad.keep_where(g, x.gt(lo).logical_and(x.lt(hi))),)


gelu_op = define("gelu(Tensor self, str approximate, dtype compute) -> Tensor",
                 meta=_meta.with_compute("gelu"),
                 derivative=Derivative(_gelu_backward, save=("self",)))
softplus_op = define("softplus(Tensor self, float beta, float threshold, dtype compute) -> Tensor",
                     meta=_meta.with_compute("softplus"),
                     derivative=Derivative(_softplus_backward, save=("self",)))
leaky_relu_op = define("leaky_relu(Tensor self, float negative_slope) -> Tensor",
                       meta=_meta.same("leaky_relu"),
                       derivative=Derivative(_leaky_relu_backward, save=("self",),
                                             name="LeakyReluBackward0"))
elu_op = define("elu(Tensor self, float alpha, float scale, float input_scale) -> Tensor",
                meta=_meta.same("elu"), derivative=Derivative(_elu_backward, save=("self",)))
hardtanh_op = define("hardtanh(Tensor self, float min_val, float max_val) -> Tensor",
                     meta=_meta.same("hardtanh"),
                     derivative=Derivative(_hardtanh_backward, save=("self",)))



def _real_activation(input, op):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.dtype.category == COMPLEX:
        raise RuntimeError(f"{op}: complex inputs are not supported, got {input.dtype}")
    return float_dtype(input.dtype)


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


# -- ember.func: batching rules and jvps (from the backward formulas) ---------------------------
_tangents.attach_elementwise(gelu_op, softplus_op, leaky_relu_op, elu_op, hardtanh_op)
