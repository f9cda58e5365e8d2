"""Activations PyTorch records as one node of their own: ``glu`` (GluBackward0), ``log_sigmoid``
(LogSigmoidBackward0), ``hardshrink``, ``softshrink`` and ``celu`` (CeluBackward0/1, where
ember's elu with ``input_scale = 1/alpha`` could not tell ``celu(x, 1)`` from ``elu(x)``).

Each op keeps the composition it replaced as its ``composite`` (what a backend without a
kernel runs; vmap and jvp decompose through it) and has torch's backward formula
(``derivatives.yaml``) written in ember ops, so double backward differentiates it. The CPU
kernels are in ``ember.kit.activation``.
"""
from __future__ import annotations

from ..._dtype import FLOATING
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _grad, _meta, _primitives
from .. import conversion as _conv
from .._util import tensor_method
from . import activation as _act
from ._rules import write_in_place


# -- glu ----------------------------------------------------------------------------------------
def _glu(self, dim):
    a, b = self.chunk(2, dim)
    return a * b.sigmoid()


def _glu_meta(self, dim):
    shape = list(_meta.shape_of(_meta.tensor_arg("glu", self)))
    shape[dim % len(shape)] //= 2
    return tuple(shape), self.dtype


def _glu_backward(ctx, g, self, dim):
    # torch's glu_backward: [g * sigmoid(b), g * a * sigmoid(b) * (1 - sigmoid(b))] along dim
    a, b = self.chunk(2, dim)
    s = b.sigmoid()
    ga = g * s
    return (_shape_ops.cat([ga, ga * a * (1 - s)], dim),)


glu_op = define("glu(Tensor self, int dim) -> Tensor", meta=_glu_meta, composite=_glu,
                derivative=Derivative(_glu_backward, save=("self",)),
                doc="a * sigmoid(b) for the halves a, b of self along dim")


# -- log_sigmoid --------------------------------------------------------------------------------
def _log_sigmoid(self):
    return -_act.softplus_exact(-self)


def _log_sigmoid_backward(ctx, g, self):
    return (g * (-self).sigmoid(),)


log_sigmoid_op = define("log_sigmoid(Tensor self) -> Tensor", meta=_meta.same("log_sigmoid"),
                        composite=_log_sigmoid,
                        derivative=Derivative(_log_sigmoid_backward, save=("self",),
                                              name="LogSigmoidBackward0"),
                        doc="log(sigmoid(x)), as min(x, 0) - log1p(exp(-|x|))")


# -- the shrinks --------------------------------------------------------------------------------
def _inside(x, lambd):
    # torch's shrink backward masks -lambd <= x <= lambd: a NaN x keeps its gradient
    return x.ge(-lambd).logical_and(x.le(lambd))


def _shrink_backward(ctx, g, self, lambd):
    return (_grad.mask_fill_zero(g, _inside(self, lambd)),)


def _hardshrink(self, lambd):
    return _primitives.where(_inside(self, lambd), 0.0, self)


def _softshrink(self, lambd):
    # +0 inside (torch's kernel), x -+ lambd outside; a NaN stays NaN
    return _primitives.where(_inside(self, lambd), 0.0, self - lambd * self.sign())


hardshrink_op = define("hardshrink(Tensor self, float lambd) -> Tensor",
                       meta=_meta.same("hardshrink"), composite=_hardshrink,
                       derivative=Derivative(_shrink_backward, save=("self",)),
                       doc="0 where -lambd <= x <= lambd, else x")
softshrink_op = define("softshrink(Tensor self, float lambd) -> Tensor",
                       meta=_meta.same("softshrink"), composite=_softshrink,
                       derivative=Derivative(_shrink_backward, save=("self",)),
                       doc="x - lambd above lambd, x + lambd below -lambd, else 0")


# -- celu ---------------------------------------------------------------------------------------
def _celu(self, alpha):
    return _act.elu_op(self, alpha, 1.0, 1.0 / alpha)


def _celu_backward(ctx, g, self, alpha):
    return _act._elu_backward(ctx, g, self, alpha, 1.0, 1.0 / alpha)


def _celu_result_backward(ctx, g, self, alpha):
    return _act._elu_result_backward(ctx, g, self, alpha, 1.0, 1.0 / alpha)


celu_op = define("celu(Tensor self, float alpha) -> Tensor", meta=_meta.same("celu"),
                 composite=_celu, derivative=Derivative(_celu_backward, save=("self",)),
                 doc="elu with input_scale 1/alpha: max(0, x) + min(0, alpha (exp(x/alpha) - 1))")
celu__op = define("celu_(Tensor(a!) self, float alpha) -> Tensor(a!)",
                  meta=_meta.inplace("celu_"), composite=_conv.written_back(celu_op),
                  functional=celu_op,
                  derivative=Derivative(_celu_result_backward, save=("result",),
                                        name="CeluBackward1"))


# -- lowering -----------------------------------------------------------------------------------
@log_sigmoid_op.def_pointwise
def _log_sigmoid_expr(e, x, *_):
    v = e(x)
    tail = e.fn("log1p", e.fn("exp", "-" + e.fn("fabs", v)))
    return f"(({v} < {e.lit(0)} ? {v} : {e.lit(0)}) - {tail})"


@log_sigmoid_op.def_onnx
def _log_sigmoid_onnx(b, c, x, *rest):
    return b.op("Neg", [b.op("Softplus", [b.op("Neg", [x])])])


@hardshrink_op.def_pointwise
def _hardshrink_expr(e, x, lambd, *_):
    v = e(x)
    return f"({v} >= {e.lit(-lambd)} && {v} <= {e.lit(lambd)} ? {e.lit(0)} : {v})"


@softshrink_op.def_pointwise
def _softshrink_expr(e, x, lambd, *_):
    v = e(x)
    return (f"({v} > {e.lit(lambd)} ? {v} - {e.lit(lambd)} : "
            f"({v} < {e.lit(-lambd)} ? {v} + {e.lit(lambd)} : {e.lit(0)}))")


@hardshrink_op.def_onnx
def _hardshrink_onnx(b, c, x, lambd=0.5, *rest):
    return b.op("Shrink", [x], bias=0.0, lambd=float(lambd))


@softshrink_op.def_onnx
def _softshrink_onnx(b, c, x, lambd=0.5, *rest):
    return b.op("Shrink", [x], bias=float(lambd), lambd=float(lambd))


@celu_op.def_pointwise
def _celu_expr(e, x, alpha, *_):
    return _act._elu_expr(e, x, alpha, 1.0, 1.0 / alpha)


@celu_op.def_onnx
def _celu_onnx(b, c, x, alpha=1.0, *rest):
    return b.op("Celu", [x], alpha=float(alpha))


@glu_op.def_onnx
def _glu_onnx(b, c, x, dim, *rest):
    a, gate = b.op("Split", [x], n_out=2, axis=int(dim))
    return b.op("Mul", [a, b.op("Sigmoid", [gate])])


# -- the Python API -----------------------------------------------------------------------------
def _floating(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype.category != FLOATING:
        raise RuntimeError(f"\"{name}_cpu\" not implemented for '{input.dtype}': {name} takes "
                           f"floating-point tensors")


def glu(input, dim=-1):
    if not isinstance(input, Tensor):
        raise TypeError(f"glu(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    n = input.ndim
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    if input._shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % n} is size "
                           f"{input._shape[dim]}")
    _floating(input, "glu")
    return glu_op(input, dim % n)


def log_sigmoid(input):
    _floating(input, "log_sigmoid")
    return log_sigmoid_op(input)


@tensor_method()
def hardshrink(input, lambd=0.5):
    """0 where ``|x| <= lambd``, else ``x`` (NaN stays NaN, as in torch)."""
    _floating(input, "hardshrink")
    return hardshrink_op(input, float(lambd))


def softshrink(input, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    _floating(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return softshrink_op(input, float(lambd))


def celu(input, alpha=1.0):
    return celu_op(input, _act._celu_alpha(input, alpha, "celu"))


def celu_(input, alpha=1.0):
    a = _act._celu_alpha(input, alpha, "celu_")
    return write_in_place(celu__op, "celu_", input, a)


from .. import shape as _shape_ops  # noqa: E402 - formulas only; shape imports this family
