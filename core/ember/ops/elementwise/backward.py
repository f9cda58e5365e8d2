"""Fused backward ops of the commonest activations, PyTorch's names: one op where the formula
in ember ops took two or three (``g * (1 - y * y)``), so relu/tanh/sigmoid layers cost one
kernel in backward.

* ``threshold_backward(grad_output, self, threshold)``: ``grad_output`` where
  ``self > threshold``, 0 elsewhere (relu's backward with ``self`` its result and threshold 0);
* ``tanh_backward(grad_output, output)``: ``grad_output * (1 - output**2)``;
* ``sigmoid_backward(grad_output, output)``: ``grad_output * output * (1 - output)``.

Real floating dtypes (complex gradients keep the general formulas of ``unary``). Each is
differentiable again (double backward) and has a composite (the formula in ember ops) for
backends without a kernel. Kernel convention: operands of one shape and dtype, result in that
dtype.
"""
from __future__ import annotations

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
    return _sel.where(self.gt(threshold), grad_output, 0.0)


def _tanh_composite(grad_output, output):
    return grad_output * (1.0 - output * output)


def _sigmoid_composite(grad_output, output):
    return grad_output * (output * (1.0 - output))


threshold_backward_op = define(
    "threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
    meta=_same_meta("threshold_backward"), composite=_threshold_composite,
    derivative=Derivative(_threshold_double, save=("self",)),
    doc="grad_output where self > threshold, else 0")
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
