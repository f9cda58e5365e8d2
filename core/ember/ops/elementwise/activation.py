"""Activations with parameters (gelu, softplus, leaky_relu, elu/selu, hardtanh, threshold,
hardsigmoid, hardswish, rrelu, prelu): each op with its meta and derivative (celu, the shrinks,
glu and log_sigmoid are in ``activation_nodes``). Parameter-free activations (relu, sigmoid, silu, mish) are unary rows.

In-place variants save what PyTorch's save (``derivatives.yaml``), because that decides whether a
later in-place write breaks the backward: ``leaky_relu_``, ``elu_`` (so ``celu_``, ``selu_``)
read their *result* (the target after the write: a formula in terms of the output, so the slope
must be >= 0, as PyTorch requires); ``hardtanh_``, ``threshold_``, ``hardsigmoid_``,
``hardswish_`` save the input *before* the write (autograd saves a copy, PyTorch's
``original_self``). Their kernels are composites: the functional op, then one copy back.
"""
from __future__ import annotations

import math

from ... import _dtype
from ..._dtype import COMPLEX, FLOATING
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _grad, _primitives, _tangents
from .. import _meta
from .. import conversion as _conv  # formulas and composites only
from .._lowering import clamp, onnx_clamp
from .._util import require_tensor, tensor_method
from . import backward as _bw  # formulas only: the fused gelu_backward
from .backward import _K_BETA, _K_KAPPA   # gelu's tanh constants, for its lowering rules
from ._rules import float_dtype, write_in_place


def _gelu_backward(ctx, g, x, approximate, compute):
    if g.dtype is not x.dtype or g._shape != x._shape:  # (a broadcast gradient)
        return (_bw._gelu_composite(g, x, approximate),)
    return (_bw.gelu_backward_op(g, x, approximate),)   # one fused kernel


def _softplus_backward(ctx, g, x, beta, threshold, compute):
    # PyTorch's softplus_backward takes the sigmoid up to beta*x == threshold, but its double
    # backward (softplus_double_backward) masks beta*x < threshold: at the threshold the
    # sigmoid reads the constant threshold, same value, no slope
    bx = x * beta
    inner = _primitives.where(bx.eq(threshold), threshold, bx)
    return (_primitives.where(bx.gt(threshold), g, g * inner.sigmoid()),)


def _leaky_relu_backward(ctx, g, x, slope):
    return (_primitives.where(x.gt(0), g, g * slope),)


def _elu_backward(ctx, g, x, alpha, scale, input_scale):
    # PyTorch's elu_backward takes the exponential branch at x <= 0, but its double backward
    # (elu_double_backward) masks x < 0: at 0 the exponential reads the constant 0
    xn = _primitives.where(x.lt(0), x, 0.0)
    neg = g * (xn * input_scale).exp() * (alpha * scale * input_scale)
    return (_primitives.where(x.le(0), neg, g * scale),)   # a NaN x takes the linear branch


def _hardtanh_backward(ctx, g, x, lo, hi):
    # PyTorch's hardtanh_backward: 0 at and beyond the bounds (a NaN x keeps its gradient)
    return (_grad.mask_fill_zero(g, x.le(lo).logical_or(x.ge(hi))),)


def _leaky_relu_result_backward(ctx, g, x, slope):
    if slope < 0:
        raise RuntimeError(
            "In-place leakyReLu backward calculation is triggered with a negative slope which is "
            "not supported. This is caused by calling in-place forward function with a negative "
            "slope, please call out-of-place version instead. File an issue at "
            "https://github.com/pytorch/pytorch if you do require supporting in-place leakRelu "
            "backward calculation with negative slope")
    r = ctx.result
    return (_primitives.where(r.gt(0), g, g * slope),)


def _elu_result_backward(ctx, g, x, alpha, scale, input_scale):
    # out = scale*alpha*(exp(x*input_scale) - 1) for x <= 0, so d/dx = input_scale*(out + alpha*scale)
    if alpha < 0:
        raise RuntimeError(
            "In-place elu backward calculation is triggered with a negative slope which is not "
            "supported. This is caused by calling in-place forward function with a negative "
            "slope, please call out-of-place version instead.")
    # the exponential branch at out <= 0, whose own derivative torch masks to out < 0
    # (elu_double_backward with is_result): at 0 it reads the constant 0
    r = ctx.result
    rn = _primitives.where(r.lt(0), r, 0.0)
    return (_primitives.where(r.le(0), g * ((rn + alpha * scale) * input_scale), g * scale),)


def _elu_name(suffix):
    # celu is elu with input_scale = 1/alpha; PyTorch names its nodes CeluBackward*
    def name(self, alpha, scale, input_scale):
        return ("Celu" if input_scale != 1.0 else "Elu") + "Backward" + suffix
    return name


def _threshold_backward(ctx, g, x, threshold, value):
    return (_grad.mask_fill_zero(g, x.le(threshold)),)   # a NaN x keeps its gradient


def _hardsigmoid_backward(ctx, g, x):
    return (_grad.keep_where(g / 6.0, x.gt(-3.0).logical_and(x.lt(3.0))),)


def _hardswish_backward(ctx, g, x):
    # PyTorch's hardswish_backward: 0 up to -3, the slope x/3 + 1/2 strictly between, 1 from 3
    mid = g * (x / 3.0 + 0.5)
    return (_primitives.where(x.le(-3.0), 0.0, _primitives.where(x.lt(3.0), mid, g)),)


def _threshold(self, threshold, value):
    fill = _primitives.where(self.le(threshold), value, self)   # NaN stays NaN, as in torch
    return fill if fill.dtype is self.dtype else fill.to(self.dtype)


def _hardsigmoid(self):
    # PyTorch's order of rounding: min(max(x + 3, 0), 6) / 6
    return hardtanh_op(self + 3.0, 0.0, 6.0) / 6.0


def _hardswish(self):
    return self * hardtanh_op(self + 3.0, 0.0, 6.0) / 6.0


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
leaky_relu__op = define("leaky_relu_(Tensor(a!) self, float negative_slope) -> Tensor(a!)",
                        meta=_meta.inplace("leaky_relu_"),
                        composite=_conv.written_back(leaky_relu_op), functional=leaky_relu_op,
                        derivative=Derivative(_leaky_relu_result_backward, save=("result",),
                                              name="LeakyReluBackward1"))
elu_op = define("elu(Tensor self, float alpha, float scale, float input_scale) -> Tensor",
                meta=_meta.same("elu"),
                derivative=Derivative(_elu_backward, save=("self",), name=_elu_name("0")))
elu__op = define("elu_(Tensor(a!) self, float alpha, float scale, float input_scale) -> Tensor(a!)",
                 meta=_meta.inplace("elu_"), composite=_conv.written_back(elu_op), functional=elu_op,
                 derivative=Derivative(_elu_result_backward, save=("result",),
                                       name=_elu_name("1")))
hardtanh_op = define("hardtanh(Tensor self, float min_val, float max_val) -> Tensor",
                     meta=_meta.same("hardtanh"),
                     derivative=Derivative(_hardtanh_backward, save=("self",)))
hardtanh__op = define("hardtanh_(Tensor(a!) self, float min_val, float max_val) -> Tensor(a!)",
                      meta=_meta.inplace("hardtanh_"), composite=_conv.written_back(hardtanh_op),
                      functional=hardtanh_op,
                      derivative=Derivative(_hardtanh_backward, save=("self",)))
threshold_op = define("threshold(Tensor self, float threshold, float value) -> Tensor",
                      composite=_threshold,
                      derivative=Derivative(_threshold_backward, save=("self",)))
threshold__op = define("threshold_(Tensor(a!) self, float threshold, float value) -> Tensor(a!)",
                       meta=_meta.inplace("threshold_"), composite=_conv.written_back(threshold_op),
                       functional=threshold_op,
                       derivative=Derivative(_threshold_backward, save=("self",),
                                             name="ThresholdBackward1"))
hardsigmoid_op = define("hardsigmoid(Tensor self) -> Tensor", composite=_hardsigmoid,
                        derivative=Derivative(_hardsigmoid_backward, save=("self",)))
hardsigmoid__op = define("hardsigmoid_(Tensor(a!) self) -> Tensor(a!)",
                         meta=_meta.inplace("hardsigmoid_"),
                         composite=_conv.written_back(hardsigmoid_op), functional=hardsigmoid_op,
                         derivative=Derivative(_hardsigmoid_backward, save=("self",)))
hardswish_op = define("hardswish(Tensor self) -> Tensor", composite=_hardswish,
                      derivative=Derivative(_hardswish_backward, save=("self",)))
hardswish__op = define("hardswish_(Tensor(a!) self) -> Tensor(a!)",
                       meta=_meta.inplace("hardswish_"), composite=_conv.written_back(hardswish_op),
                       functional=hardswish_op,
                       derivative=Derivative(_hardswish_backward, save=("self",)))


# -- lowering: one element as an expression (fusion), the ONNX nodes (export) -----------------
_SQRT_HALF = math.sqrt(0.5)   # sqrt(0.5), not _K_ALPHA: the two differ in the last bit
_K_BETA, _K_KAPPA = _bw._K_BETA, _bw._K_KAPPA   # the tanh approximation's constants


@gelu_op.def_pointwise
def _gelu_expr(e, x, approximate="none", *_):
    v = e(x)
    if approximate == "tanh":
        inner = f"{e.lit(_K_BETA)} * ({v} + {e.lit(_K_KAPPA)} * {v} * {v} * {v})"
        return f"({e.lit(0.5)} * {v} * ({e.lit(1)} + {e.fn('tanh', inner)}))"
    return f"({e.lit(0.5)} * {v} * ({e.lit(1)} + {e.fn('erf', f'{v} * {e.lit(_SQRT_HALF)}')}))"


@gelu_op.def_onnx
def _gelu_onnx(b, c, x, approximate="none", *rest):
    if approximate == "tanh":
        cube = b.op("Mul", [b.op("Mul", [x, x]), x])
        inner = b.op("Mul", [b.op("Add", [x, b.op("Mul", [cube, c.scalar(_K_KAPPA)])]),
                             c.scalar(_K_BETA)])
        t = b.op("Add", [b.op("Tanh", [inner]), c.scalar(1.0)])
    else:
        t = b.op("Add", [b.op("Erf", [b.op("Mul", [x, c.scalar(_SQRT_HALF)])]), c.scalar(1.0)])
    return b.op("Mul", [b.op("Mul", [x, t]), c.scalar(0.5)])


@softplus_op.def_pointwise
def _softplus_expr(e, x, beta, threshold, *_):
    v = e(x)
    return (f"({v} * {e.lit(beta)} > {e.lit(threshold)} ? {v} : "
            f"{e.fn('log1p', e.fn('exp', f'{v} * {e.lit(beta)}'))} / {e.lit(beta)})")


@softplus_op.def_onnx
def _softplus_onnx(b, c, x, beta=1.0, threshold=20.0, *rest):
    if beta != 1.0:
        scaled = b.op("Mul", [x, c.scalar(beta)])
        return b.op("Div", [b.op("Softplus", [scaled]), c.scalar(beta)])
    return b.op("Softplus", [x])


@leaky_relu_op.def_pointwise
def _leaky_relu_expr(e, x, slope, *_):
    return f"({e(x)} > {e.lit(0)} ? {e(x)} : {e(x)} * {e.lit(slope)})"


@leaky_relu_op.def_onnx
def _leaky_relu_onnx(b, c, x, slope=0.01, *rest):
    return b.op("LeakyRelu", [x], alpha=float(slope))


@elu_op.def_pointwise
def _elu_expr(e, x, alpha, scale, input_scale, *_):
    v = e(x)
    return (f"({v} <= {e.lit(0)} ? {e.fn('expm1', f'{v} * {e.lit(input_scale)}')} * "
            f"{e.lit(alpha * scale)} : {v} * {e.lit(scale)})")


@hardtanh_op.def_pointwise
def _hardtanh_expr(e, x, lo, hi, *_):
    return clamp(e, x, lo, hi)


@hardtanh_op.def_onnx
def _hardtanh_onnx(b, c, x, lo=-1.0, hi=1.0, *rest):
    return onnx_clamp(b, c, x, lo, hi)


@threshold_op.def_pointwise
def _threshold_expr(e, x, th, value, *_):
    return f"({e(x)} <= {e.lit(th)} ? {e.lit(value)} : {e(x)})"


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


def softplus_exact(x):
    """log(1 + exp(x)) to rounding for any x: what PyTorch's log_sigmoid (``-softplus_exact(-x)``)
    and BCE-with-logits compute. softplus returns x itself above its threshold (2e-9 short at
    x = 20), which BCE-with-logits' (1 - t) x cancels against for very negative logits. Above 20
    the next term of the series, exp(-x), is added; the clamp keeps the branch not taken finite
    (a where() gradient multiplies it by zero), so derivatives stay sigmoid(x) at every order."""
    big = x.ge(_SOFTPLUS_THRESHOLD)
    tail = x + (-x.clamp_min(_SOFTPLUS_THRESHOLD)).exp()
    return _primitives.where(big, tail, softplus(x))


_SOFTPLUS_THRESHOLD = 20.0


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


def _check_hardtanh(input, min_val, max_val, name):
    _real_activation(input, name)
    if min_val > max_val:
        raise ValueError(f"{name}: min_val cannot be greater than max_val")
    if input.dtype is _dtype.bool_:
        raise RuntimeError(f"Bool inputs not supported for {name.rstrip('_')}")
    if input.dtype is _dtype.uint8 and (int(min_val) < 0 or int(max_val) < 0):
        raise RuntimeError(f"cannot do {name.rstrip('_')} on an unsigned type with negative "
                           f"limits")


def hardtanh(input, min_val=-1.0, max_val=1.0):
    _check_hardtanh(input, min_val, max_val, "hardtanh")
    return hardtanh_op(input, float(min_val), float(max_val))


# -- in place and the rest of the family --------------------------------------------------------
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def leaky_relu_(input, negative_slope=0.01):
    _require_float(input, "leaky_relu_")
    return write_in_place(leaky_relu__op, "leaky_relu_", input, float(negative_slope))


def elu_(input, alpha=1.0, scale=1.0, input_scale=1.0):
    _require_float(input, "elu_")
    return write_in_place(elu__op, "elu_", input, float(alpha), float(scale),
                           float(input_scale))


def _celu_alpha(input, alpha, name):
    _require_float(input, name)
    if alpha == 0:
        raise RuntimeError(f"ZeroDivisionError: {name}: alpha must not be 0 (celu divides the "
                           f"input by alpha)")
    return float(alpha)


def selu(input):
    _require_float(input, "selu")
    return elu_op(input, _SELU_ALPHA, _SELU_SCALE, 1.0)


def selu_(input):
    _require_float(input, "selu_")
    return write_in_place(elu__op, "selu_", input, _SELU_ALPHA, _SELU_SCALE, 1.0)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    _check_hardtanh(input, min_val, max_val, "hardtanh_")
    return write_in_place(hardtanh__op, "hardtanh_", input, float(min_val), float(max_val))


def _check_threshold(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype.category == COMPLEX or input.dtype is _dtype.bool_:
        raise RuntimeError(f"{name}: expected a real non-bool tensor, got {input.dtype}")


def threshold(input, threshold, value):
    """``input`` where ``input > threshold``, else ``value``."""
    _check_threshold(input, "threshold")
    return threshold_op(input, float(threshold), float(value))


def threshold_(input, threshold, value):
    _check_threshold(input, "threshold_")
    return write_in_place(threshold__op, "threshold_", input, float(threshold), float(value))


def _float_activation(name, op, op_):
    """``name(input)`` and ``name_(input)`` over an argument-free floating-point op."""
    def fn(input):
        _require_float(input, name)
        return op(input)

    def fn_(input):
        _require_float(input, name + "_")
        return write_in_place(op_, name + "_", input)

    fn.__name__, fn_.__name__ = name, name + "_"
    fn.__qualname__, fn_.__qualname__ = name, name + "_"
    return fn, fn_


hardsigmoid, hardsigmoid_ = _float_activation("hardsigmoid", hardsigmoid_op, hardsigmoid__op)
hardswish, hardswish_ = _float_activation("hardswish", hardswish_op, hardswish__op)


def _rrelu_args(input, lower, upper, name):
    _require_float(input, name)
    lower, upper = float(lower), float(upper)
    if lower > upper:
        raise RuntimeError(f"{name}: Lower bound should be less than or equal to the upper "
                           f"bound (got lower={lower}, upper={upper})")
    return lower, upper


def _rrelu_noise(input, lower, upper, generator):
    """Per element: 1 where ``input > 0``, else a slope drawn from U(lower, upper) with
    ``generator`` (None: the input device's default; PyTorch's ``noise``)."""
    slopes = input.new_empty(input.shape).uniform_(lower, upper, generator=generator)
    return _primitives.where(input.gt(0), 1.0, slopes).to(input.dtype)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """Randomized leaky ReLU: in training each negative element is scaled by its own slope from
    U(lower, upper); in evaluation by the fixed slope (lower + upper) / 2."""
    lower, upper = _rrelu_args(input, lower, upper, "rrelu")
    if not training:
        return leaky_relu_op(input, (lower + upper) / 2)
    return input * _rrelu_noise(input, lower, upper, generator)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """In place: the backward reads the noise (training) or the result (evaluation), never the
    overwritten input."""
    lower, upper = _rrelu_args(input, lower, upper, "rrelu_")
    if not training:
        return leaky_relu_(input, (lower + upper) / 2)
    return input.mul_(_rrelu_noise(input, lower, upper, generator))


# -- prelu (hardshrink, softshrink, celu, glu, log_sigmoid: activation_nodes.py) -----------
# prelu is PyTorch's _prelu_kernel (where(x > 0, x, w x)) with its backward as an op: torch's
# double backward of it (derivatives.yaml) masks x >= 0 where the backward masked x > 0, so at
# x = 0 the second derivatives are torch's only through these formulas
def _prelu_kernel(self, weight):
    return _primitives.where(self.gt(0), self, self * weight)


def _prelu_kernel_backward(grad_output, self, weight):
    positive = self.gt(0)
    return (_primitives.where(positive, grad_output, weight * grad_output),
            _primitives.where(positive, 0.0, self * grad_output))


def _prelu_derivative(ctx, g, self, weight):
    return _prelu_kernel_backward_op(g, self, weight)


def _prelu_double_backward(ctx, grads, grad_output, self, weight):
    gg_self, gg_weight = grads
    nonneg = self.ge(0)
    g_out = g_self = g_weight = None
    if ctx.needs(0):
        if gg_self is not None:
            inner = gg_self * weight
            if gg_weight is not None:
                inner = inner + gg_weight * self
            g_out = _primitives.where(nonneg, gg_self, inner)
        elif gg_weight is not None:
            g_out = _primitives.where(nonneg, 0.0, gg_weight * self)
    if ctx.needs(1) and gg_weight is not None:
        g_self = _primitives.where(nonneg, 0.0, grad_output * gg_weight)
    if ctx.needs(2) and gg_self is not None:
        g_weight = _primitives.where(nonneg, 0.0, grad_output * gg_self)
    return g_out, g_self, g_weight


_prelu_kernel_op = define(
    "_prelu_kernel(Tensor self, Tensor weight) -> Tensor", composite=_prelu_kernel,
    derivative=Derivative(_prelu_derivative, save=("self", "weight"),
                          name="PreluKernelBackward0"),
    doc="x where x > 0, else weight * x (weight broadcast to x): prelu's op")
_prelu_kernel_backward_op = define(
    "_prelu_kernel_backward(Tensor grad_output, Tensor self, Tensor weight) -> (Tensor, Tensor)",
    composite=_prelu_kernel_backward,
    derivative=Derivative(_prelu_double_backward, save=("grad_output", "self", "weight"),
                          name="PreluKernelBackwardBackward0"),
    doc="prelu's gradients: for self, and for weight elementwise (before it is summed to the "
        "weight's shape)")


@tensor_method()
def prelu(input, weight):
    require_tensor(input, "prelu")
    require_tensor(weight, "prelu", "weight")
    n = weight.numel()
    if n != 1:
        if input.ndim < 2 or input._shape[1] != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = "
                               f"{input._shape[1] if input.ndim >= 2 else 1}.")
        weight = weight.reshape(n, *([1] * (input.ndim - 2)))
    elif weight.ndim > input.ndim:        # one weight broadcasts to the input's shape
        weight = weight.reshape(())
    return _prelu_kernel_op(input, weight)


# -- ember.func: batching rules and jvps (from the backward formulas) ---------------------------
_tangents.attach_elementwise(gelu_op, softplus_op, leaky_relu_op, elu_op, hardtanh_op)
