"""Fused backward ops of the commonest activations, PyTorch's names: one op where the formula
in ember ops took two or three (``g * (1 - y * y)``), so relu/tanh/sigmoid layers cost one
kernel in backward.

* ``threshold_backward(grad_output, self, threshold)``: 0 where ``self <= threshold``,
  ``grad_output`` elsewhere — a NaN ``self`` keeps its gradient, as in PyTorch (relu's backward
  with ``self`` its result and threshold 0);
* ``tanh_backward(grad_output, output)``: ``grad_output * (1 - output**2)``;
* ``sigmoid_backward(grad_output, output)``: ``grad_output * output * (1 - output)``;
* ``gelu_backward(grad_output, self, approximate)``: ``grad_output * gelu'(self)`` (erf form, or
  the tanh approximation's derivative) — the formula in ember ops kept four tensors of the
  input's size alive at once, a transformer's peak memory in backward.

Real floating dtypes (complex gradients keep the general formulas of ``unary``). Each is
differentiable again (double backward) and has a composite (the formula in ember ops) for
backends without a kernel. Kernel convention: operands of one shape and dtype, result in that
dtype.
"""
from __future__ import annotations

import math

from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from . import selection as _sel  # composites only: where


def _same_meta(name):
    def meta(grad_output, other, *rest):
        if grad_output._shape != other._shape or grad_output.dtype is not other.dtype:
            raise RuntimeError(f"{name}: grad_output {list(grad_output._shape)} "
                               f"({grad_output.dtype}) and {list(other._shape)} ({other.dtype}) "
                               f"must have one shape and dtype")
        return grad_output._shape, grad_output.dtype
    return meta


def _threshold_double(ctx, gg, grad_output, self, threshold):
    # piecewise linear in grad_output; zero almost everywhere in self
    return threshold_backward_op(gg, self, threshold), None


def _tanh_double(ctx, gg, grad_output, output):
    g_go = tanh_backward_op(gg, output) if ctx.needs(0) else None
    g_out = gg * grad_output * output * -2.0 if ctx.needs(1) else None
    return g_go, g_out


def _sigmoid_double(ctx, gg, grad_output, output):
    g_go = sigmoid_backward_op(gg, output) if ctx.needs(0) else None
    g_out = gg * grad_output * (1.0 - output * 2.0) if ctx.needs(1) else None
    return g_go, g_out


def _threshold_composite(grad_output, self, threshold):
    return _sel.where(self.le(threshold), 0.0, grad_output)


def _tanh_composite(grad_output, output):
    return grad_output * (1.0 - output * output)


def _sigmoid_composite(grad_output, output):
    return grad_output * (output * (1.0 - output))


_K_ALPHA = 1.0 / math.sqrt(2.0)
_K_PDF = 1.0 / math.sqrt(2.0 * math.pi)
_K_BETA = math.sqrt(2.0 / math.pi)
_K_KAPPA = 0.044715


def _gelu_composite(grad_output, self, approximate):
    x = self
    if approximate == "tanh":
        x_sq = x * x
        t = ((x + x_sq * x * _K_KAPPA) * _K_BETA).tanh()
        left = (t + 1) * 0.5
        right = x * 0.5 * (1 - t * t) * _K_BETA * (x_sq * (3 * _K_KAPPA) + 1)
        return grad_output * (left + right)
    cdf = ((x * _K_ALPHA).erf() + 1) * 0.5
    pdf = (x * x * -0.5).exp() * _K_PDF
    return grad_output * (cdf + x * pdf)


def _gelu_second(x, approximate):
    """gelu''(x): pdf * (2 - x**2) for the erf form; for the tanh approximation, with
    u = beta (x + kappa x**3) and t = tanh(u), (1 - t**2) (u' - x t u'**2 + x u'' / 2)."""
    if approximate == "tanh":
        x_sq = x * x
        t = ((x + x_sq * x * _K_KAPPA) * _K_BETA).tanh()
        du = (x_sq * (3 * _K_KAPPA) + 1) * _K_BETA
        d2u = x * (6 * _K_KAPPA * _K_BETA)
        return (1 - t * t) * (du - x * t * du * du + x * d2u * 0.5)
    return (x * x * -0.5).exp() * _K_PDF * (2 - x * x)


def _gelu_double(ctx, gg, grad_output, self, approximate):
    g_go = gelu_backward_op(gg, self, approximate) if ctx.needs(0) else None
    g_x = gg * grad_output * _gelu_second(self, approximate) if ctx.needs(1) else None
    return g_go, g_x, None


threshold_backward_op = define(
    "threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
    meta=_same_meta("threshold_backward"), composite=_threshold_composite,
    derivative=Derivative(_threshold_double, save=("self",)),
    doc="0 where self <= threshold, else grad_output (a NaN self keeps it)")
tanh_backward_op = define(
    "tanh_backward(Tensor grad_output, Tensor output) -> Tensor",
    meta=_same_meta("tanh_backward"), composite=_tanh_composite,
    derivative=Derivative(_tanh_double, save={"grad_output": "output", "output": None}),
    doc="grad_output * (1 - output ** 2)")
sigmoid_backward_op = define(
    "sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor",
    meta=_same_meta("sigmoid_backward"), composite=_sigmoid_composite,
    derivative=Derivative(_sigmoid_double, save={"grad_output": "output", "output": None}),
    doc="grad_output * output * (1 - output)")
gelu_backward_op = define(
    "gelu_backward(Tensor grad_output, Tensor self, str approximate) -> Tensor",
    meta=_same_meta("gelu_backward"), composite=_gelu_composite,
    derivative=Derivative(_gelu_double, save={"grad_output": "self", "self": None}),
    doc="grad_output * gelu'(self): the erf form ('none') or the tanh approximation's ('tanh')")


# -- lowering: one element as an expression (fusion) ------------------------------------------
@threshold_backward_op.def_pointwise
def _threshold_backward_expr(e, g, x, th, *_):
    return f"({e(x)} <= {e.lit(th)} ? {e.lit(0)} : {e(g)})"


@tanh_backward_op.def_pointwise
def _tanh_backward_expr(e, g, y, *_):
    return f"({e(g)} * ({e.lit(1)} - {e(y)} * {e(y)}))"


@sigmoid_backward_op.def_pointwise
def _sigmoid_backward_expr(e, g, y, *_):
    return f"({e(g)} * ({e.lit(1)} - {e(y)}) * {e(y)})"
