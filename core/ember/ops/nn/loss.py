"""Losses as ops, with PyTorch's aten names and derivatives (``derivatives.yaml``), so their
gradients at the kinks — a probability of exactly 0 or 1, a logit of exactly 0 — are torch's:

* ``nll_loss_forward`` / ``nll_loss_backward``: the negative log-likelihood of class targets
  over (N, C) log-probabilities as one op each way, under ``cross_entropy`` and ``nll_loss``
  for 2-D inputs (other shapes keep the composition in ``nn/_loss.py``);
* ``binary_cross_entropy`` / ``binary_cross_entropy_backward`` and
  ``binary_cross_entropy_with_logits`` (below), which the BCE losses and the Bernoulli-family
  distributions call, as torch's do;
* ``mse_loss``, ``smooth_l1_loss`` and ``huber_loss`` with their backward ops (below), which the
  unweighted regression losses call.

``nll_loss_forward(self, target, weight, reduction, ignore_index) -> (output, total_weight)``:
``output[i] = -weight[t_i] * self[i, t_i]`` (0 where ``t_i == ignore_index``), summed
(``reduction`` 2, "sum"), divided by ``total_weight = sum of weight[t_i]`` over kept rows
(1, "mean") or per row (0, "none"). Targets outside [0, C) other than ``ignore_index`` raise
``IndexError``, naming the target. The backward op is linear in its gradient and does not read
``self``'s values, so its derivative is the forward op applied to the gradient's gradient.
Every backend without a kernel runs the composite (gather and reductions in ember ops).
"""
from __future__ import annotations

from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _grad
from ..elementwise import activation as _act
from ..elementwise.selection import where
from .._util import broadcast_shapes, every_example
from . import _rules

REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _meta(self, target, weight, reduction, ignore_index):
    _rules.tensor("nll_loss_forward", self, "self")
    if self.ndim != 2 or target._shape != self._shape[:1]:
        raise RuntimeError(f"nll_loss_forward: expected self (N, C) and target (N,), got "
                           f"{list(self._shape)} and {list(target._shape)}")
    out = self._shape[:1] if reduction == 0 else ()
    return ((out, self.dtype), ((), self.dtype))


def _backward_meta(grad_output, self, target, weight, reduction, ignore_index, total_weight):
    return self._shape, self.dtype


def _picked_weights(self, target, weight, ignore_index):
    """(safe targets, per-row weights) in ember ops: kept rows weigh weight[t] (or 1)."""
    keep = target.ne(ignore_index)
    safe = target.masked_fill(keep.logical_not(), 0)
    w = keep.to(self.dtype)
    if weight is not None:
        w = w * weight.gather(0, safe)
    return safe, w


def _check_targets(target, n_classes, ignore_index):
    target = every_example(target)   # under vmap: the check holds for the whole batch
    bad = target.ne(ignore_index).logical_and(target.lt(0).logical_or(target.ge(n_classes)))
    if target.numel() and bool(bad.any().item()):
        raise IndexError(f"Target {int(target[bad][0].item())} is out of bounds. (nll_loss: "
                         f"{n_classes} classes, ignore_index={ignore_index})")


def _forward_composite(self, target, weight, reduction, ignore_index):
    _check_targets(target, self._shape[1], ignore_index)
    safe, w = _picked_weights(self, target, weight, ignore_index)
    loss = -self.gather(1, safe.unsqueeze(1)).squeeze(1) * w
    total = w.sum()
    if reduction == 0:
        return loss, total
    if reduction == 2:
        return loss.sum(), total
    return loss.sum() / total, total


def _backward_composite(grad_output, self, target, weight, reduction, ignore_index,
                        total_weight):
    safe, w = _picked_weights(self, target, weight, ignore_index)
    g = -w * (grad_output if reduction == 0 else grad_output.expand(w._shape))
    if reduction == 1:
        g = g / total_weight
    g = g.masked_fill(target.eq(ignore_index), 0)    # ignored rows stay 0 (even over a 0 total)
    out = self.new_zeros(self._shape)
    return out.scatter(1, safe.unsqueeze(1), g.unsqueeze(1))


def _nll_backward(ctx, grads, self, target, weight, reduction, ignore_index):
    total = ctx.result[1]
    return (nll_loss_backward_op(grads[0], self, target, weight, reduction, ignore_index,
                                 total),)


def _nll_double_backward(ctx, gg, grad_output, self, target, weight, reduction, ignore_index,
                         total_weight):
    # backward(g) is linear in g: its adjoint is the forward applied to gg
    # (with "mean" the forward divides by the same total weight the backward did)
    return (nll_loss_forward_op(gg, target, weight, reduction, ignore_index)[0],)


nll_loss_forward_op = define(
    "nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, "
    "int ignore_index) -> (Tensor output, Tensor total_weight)",
    meta=_meta, composite=_forward_composite,
    derivative=Derivative(_nll_backward, save=("self", "target", "weight", "result1"),
                          diff=("self",), outputs=(True, False), name="NllLossBackward0"),
    doc="negative log-likelihood of class targets over (N, C) log-probabilities")

nll_loss_backward_op = define(
    "nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, "
    "int reduction, int ignore_index, Tensor total_weight) -> Tensor",
    meta=_backward_meta, composite=_backward_composite,
    derivative=Derivative(_nll_double_backward, save=("target", "weight"),
                          diff=("grad_output",), name="NllLossBackwardBackward0"),
    doc="the gradient of nll_loss_forward with respect to self")



# -- binary cross-entropy --------------------------------------------------------------------------
# Each op's composite is the forward in ember ops (every backend runs it); its derivative is
# PyTorch's formula (FunctionsManual.cpp), so the gradient at x = 0 or 1 (BCE) and at a logit
# of 0 (BCE with logits: sigmoid(x) - t, where the stable forward's max(x, 0) and |x| kink) is
# torch's, and the backward op's own derivative is torch's double backward. A weight or
# pos_weight that requires grad gets its gradient too (torch refuses them).
# PyTorch's binary_cross_entropy_backward divides by max(x (1 - x), EPSILON) with EPSILON the
# float 1e-12 (9.99999996e-13 as a double); its double backward's eps is the double 1e-12
_BACKWARD_EPS = 9.999999960041972e-13
_EPS = 1e-12


def _reduced(loss, reduction):
    return loss.mean() if reduction == 1 else loss.sum() if reduction == 2 else loss


def _mean_scaled(g, self, reduction):
    return g / self.numel() if reduction == 1 else g


def _weighted(g, weight):
    return g if weight is None else g * weight


def _bce_meta(self, target, weight, reduction):
    shape = broadcast_shapes(self._shape, target._shape)
    return (shape if reduction == 0 else ()), self.dtype


def _bce(self, target, weight, reduction):
    # PyTorch's kernel: each log clamped at -100, so a confident wrong answer costs 100, not inf
    loss = (target - 1) * self.neg().log1p().clamp_min(-100.0) - \
        target * self.log().clamp_min(-100.0)
    return _reduced(_weighted(loss, weight), reduction)


def _bce_backward_composite(grad_output, self, target, weight, reduction):
    g = grad_output * (self - target) / ((1 - self) * self).clamp_min(_BACKWARD_EPS)
    return _mean_scaled(_weighted(g, weight), self, reduction)


def _bce_derivative(ctx, g, self, target, weight, reduction):
    gi = gt = gw = None
    if ctx.needs(0):
        gi = binary_cross_entropy_backward_op(g, self, target, weight, reduction)
    if ctx.needs(1):   # binary_cross_entropy_target_backward: -logit(x), unclamped
        gt = _mean_scaled(_weighted(self.logit().neg() * g, weight), self, reduction)
    if ctx.needs(2):
        gw = _grad.sum_to(_mean_scaled(_bce(self, target, None, 0) * g, self, reduction),
                          weight._shape)
    return gi, gt, gw


def _bce_double_backward(ctx, gg, grad_output, self, target, weight, reduction):
    g_out = g_self = g_target = g_weight = None
    if ctx.needs(0):   # binary_cross_entropy_double_backward_grad_output
        ggo = (self - target) / ((self + _EPS) * (1 - self + _EPS)) * gg
        g_out = _grad.sum_to(_mean_scaled(_weighted(ggo, weight), self, reduction),
                             grad_output._shape)
    if ctx.needs(1):   # binary_cross_entropy_double_backward
        gi = (self * self - 2 * self * target + target) / \
            ((self + _EPS).pow(2) * (1 - self + _EPS).pow(2)) * (gg * grad_output)
        g_self = _mean_scaled(_weighted(gi, weight), self, reduction)
    if ctx.needs(2):   # binary_cross_entropy_double_backward_target
        denom = (1 - self) * self
        denom = denom + (denom.clamp_min(_EPS) - denom).detach()   # torch clamps it in no_grad
        g_target = _mean_scaled(_weighted(-gg * grad_output, weight) / denom, self, reduction)
    if ctx.needs(3):
        g_weight = _grad.sum_to(_bce_backward_composite(grad_output, self, target, None,
                                                        reduction) * gg, weight._shape)
    return g_out, g_self, g_target, g_weight


def _bce_logits(self, target, weight, pos_weight, reduction):
    # PyTorch's form: (1 - t) x - (1 + (pos_weight - 1) t) log(sigmoid(x)), with
    # -log(sigmoid(x)) = softplus(-x)
    neg_log_sigmoid = _act.softplus_exact(-self)
    if pos_weight is not None:
        neg_log_sigmoid = ((pos_weight - 1) * target + 1) * neg_log_sigmoid
    loss = (1 - target) * self + neg_log_sigmoid
    return _reduced(_weighted(loss, weight), reduction)


def _bce_logits_derivative(ctx, g, self, target, weight, pos_weight, reduction):
    gi = gt = gw = gp = None
    if ctx.needs(0):   # binary_cross_entropy_with_logits_backward
        if pos_weight is not None:
            t = pos_weight * target
            gi = (t + 1 - target) * self.sigmoid() - t
        else:
            gi = self.sigmoid() - target
        gi = _grad.sum_to(_mean_scaled(_weighted(gi * g, weight), self, reduction), self._shape)
    if ctx.needs(1):   # binary_cross_entropy_with_logits_target_backward
        if pos_weight is not None:   # log_sigmoid(-x) - log_sigmoid(x) * pos_weight
            gt = (-_act.softplus_exact(self) + _act.softplus_exact(-self) * pos_weight) * g
        else:
            gt = -self * g
        gt = _grad.sum_to(_mean_scaled(_weighted(gt, weight), self, reduction), target._shape)
    if ctx.needs(2):
        gw = _grad.sum_to(_mean_scaled(_bce_logits(self, target, None, pos_weight, 0) * g, self,
                                       reduction), weight._shape)
    if ctx.needs(3):
        gp = target * _act.softplus_exact(-self) * g
        gp = _grad.sum_to(_mean_scaled(_weighted(gp, weight), self, reduction),
                          pos_weight._shape)
    return gi, gt, gw, gp


binary_cross_entropy_op = define(
    "binary_cross_entropy(Tensor self, Tensor target, Tensor? weight, int reduction) -> Tensor",
    meta=_bce_meta, composite=_bce,
    derivative=Derivative(_bce_derivative, save=("self", "target", "weight"),
                          name="BinaryCrossEntropyBackward0"),
    doc="binary cross-entropy of probabilities; reduction 0/1/2 = none/mean/sum")

binary_cross_entropy_backward_op = define(
    "binary_cross_entropy_backward(Tensor grad_output, Tensor self, Tensor target, "
    "Tensor? weight, int reduction) -> Tensor",
    meta=lambda grad_output, self, *rest: (self._shape, self.dtype),
    composite=_bce_backward_composite,
    derivative=Derivative(_bce_double_backward,
                          save=("grad_output", "self", "target", "weight"),
                          name="BinaryCrossEntropyBackwardBackward0"),
    doc="the gradient of binary_cross_entropy with respect to self")

binary_cross_entropy_with_logits_op = define(
    "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight, "
    "Tensor? pos_weight, int reduction) -> Tensor",
    meta=lambda self, target, weight, pos_weight, reduction: _bce_meta(self, target, weight,
                                                                         reduction),
    composite=_bce_logits,
    derivative=Derivative(_bce_logits_derivative,
                          save=("self", "target", "weight", "pos_weight"),
                          name="BinaryCrossEntropyWithLogitsBackward0"),
    doc="binary cross-entropy of logits (sigmoid inside, stable for any logit); "
        "reduction 0/1/2 = none/mean/sum")


# -- regression losses ---------------------------------------------------------------------------
# mse_loss, smooth_l1_loss and huber_loss are ops in torch, each with a backward op of its own
# (FunctionsManual.cpp): one node each way, named as torch names them. ``self`` and ``target``
# share one shape and dtype (the functionals broadcast first, as torch's do). The backward ops
# scale by 1/numel for "mean" and are elementwise in ``grad_output``, which is 0-d under a
# reduction: its gradient sums back to that shape.
def _regression_meta(op):
    def meta(self, target, reduction, *params):
        _rules.tensor(op, self, "self")
        _rules.tensor(op, target, "target")
        if self._shape != target._shape or self.dtype is not target.dtype:
            raise RuntimeError(f"{op}: expected self and target of one shape and dtype, got "
                               f"{list(self._shape)} {self.dtype} and {list(target._shape)} "
                               f"{target.dtype}")
        return (self._shape if reduction == 0 else ()), self.dtype
    return meta


def _regression_backward_meta(grad_output, self, target, reduction, *params):
    return self._shape, self.dtype


def _grad_output_adjoint(backward):
    """The gradient of ``backward(grad_output, ...)`` with respect to ``grad_output``: the
    backward is linear in it, elementwise, so applied to ``gg`` and summed to its shape."""
    def adjoint(gg, grad_output, self, target, reduction, *params):
        return _grad.sum_to(backward(gg, self, target, reduction, *params), grad_output._shape)
    return adjoint


def _mse(self, target, reduction):
    d = self - target
    return _reduced(d * d, reduction)


def _mse_backward(grad_output, self, target, reduction):
    return _mean_scaled(2 * (self - target) * grad_output, self, reduction)


def _mse_derivative(ctx, g, self, target, reduction):
    # torch's target term, mse_loss_backward(g, target, self), is exactly the negated self term
    return _self_and_target(ctx, mse_loss_backward_op(g, self, target, reduction))


def _mse_double_backward(ctx, gg, grad_output, self, target, reduction):
    g_out = _grad_output_adjoint(_mse_backward)(gg, grad_output, self, target, reduction) \
        if ctx.needs(0) else None
    second = _mean_scaled(2 * gg * grad_output, self, reduction) \
        if ctx.needs(1) or ctx.needs(2) else None   # mse_loss_double_backward
    return g_out, second if ctx.needs(1) else None, -second if ctx.needs(2) else None


def smooth_l1_piece(d, beta):
    """The loss of a difference ``d``. The square of d, not of |d|: its second derivative is
    1/beta at d = 0 too (torch's smooth_l1_loss_double_backward), where |d|'s would be 0."""
    z = d.abs()
    return where(z.lt(beta), 0.5 * d * d / beta, z - 0.5 * beta)


def _smooth_l1(self, target, reduction, beta):
    return _reduced(smooth_l1_piece(self - target, beta), reduction)


def _smooth_l1_backward(grad_output, self, target, reduction, beta):
    # torch's kernel: -1 at d <= -beta, 1 at d >= beta, d / beta between
    d = self - target
    slope = (d / beta).clamp(-1.0, 1.0)
    return _mean_scaled(slope * grad_output, self, reduction)


def huber_piece(d, delta):
    """The loss of a difference ``d`` (the square of d, not of |d|, as in smooth_l1_piece)."""
    z = d.abs()
    return where(z.lt(delta), 0.5 * d * d, delta * (z - 0.5 * delta))


def _huber(self, target, reduction, delta):
    return _reduced(huber_piece(self - target, delta), reduction)


def _huber_backward(grad_output, self, target, reduction, delta):
    d = self - target
    return _mean_scaled(d.clamp(-delta, delta) * grad_output, self, reduction)


def _self_and_target(ctx, grad_self):
    """The gradients of a loss of ``self - target``: the target's is the self's negated
    (computed once for both; the backward ops are odd in that difference)."""
    return (grad_self if ctx.needs(0) else None), (-grad_self if ctx.needs(1) else None)


def _kink_loss_derivative(backward_op):
    def derivative(ctx, g, self, target, reduction, param):
        return _self_and_target(ctx, backward_op(g, self, target, reduction, param))
    return derivative


def _kink_loss_double_backward(backward, scale):
    """smooth_l1_loss_double_backward / huber_loss_double_backward: the slope's derivative is
    ``scale(param)`` inside the quadratic piece (|d| < param) and 0 outside."""
    def derivative(ctx, gg, grad_output, self, target, reduction, param):
        g_out = _grad_output_adjoint(backward)(gg, grad_output, self, target, reduction, param) \
            if ctx.needs(0) else None
        second = None
        if ctx.needs(1) or ctx.needs(2):
            inside = (self - target).abs().lt(param).to(gg.dtype)
            second = _mean_scaled(gg * grad_output * inside * scale(param), self, reduction)
        return g_out, second if ctx.needs(1) else None, -second if ctx.needs(2) else None
    return derivative


mse_loss_op = define(
    "mse_loss(Tensor self, Tensor target, int reduction) -> Tensor",
    meta=_regression_meta("mse_loss"), composite=_mse,
    derivative=Derivative(_mse_derivative, save=("self", "target"), name="MseLossBackward0"),
    doc="mean squared error; reduction 0/1/2 = none/mean/sum")

mse_loss_backward_op = define(
    "mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) -> Tensor",
    meta=_regression_backward_meta, composite=_mse_backward,
    derivative=Derivative(_mse_double_backward, save=("grad_output", "self", "target"),
                          name="MseLossBackwardBackward0"),
    doc="the gradient of mse_loss with respect to self")

smooth_l1_loss_backward_op = define(
    "smooth_l1_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction, "
    "float beta) -> Tensor",
    meta=_regression_backward_meta, composite=_smooth_l1_backward,
    derivative=Derivative(_kink_loss_double_backward(_smooth_l1_backward,
                                                     lambda b: 1.0 / b if b else 0.0),
                          save=("grad_output", "self", "target"),
                          name="SmoothL1LossBackwardBackward0"),
    doc="the gradient of smooth_l1_loss with respect to self")

smooth_l1_loss_op = define(
    "smooth_l1_loss(Tensor self, Tensor target, int reduction, float beta) -> Tensor",
    meta=_regression_meta("smooth_l1_loss"), composite=_smooth_l1,
    derivative=Derivative(_kink_loss_derivative(smooth_l1_loss_backward_op),
                          save=("self", "target"), name="SmoothL1LossBackward0"),
    doc="smooth L1 (quadratic below beta > 0, linear above); reduction 0/1/2 = none/mean/sum")

huber_loss_backward_op = define(
    "huber_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction, "
    "float delta) -> Tensor",
    meta=_regression_backward_meta, composite=_huber_backward,
    derivative=Derivative(_kink_loss_double_backward(_huber_backward, lambda d: 1.0),
                          save=("grad_output", "self", "target"),
                          name="HuberLossBackwardBackward0"),
    doc="the gradient of huber_loss with respect to self")

huber_loss_op = define(
    "huber_loss(Tensor self, Tensor target, int reduction, float delta) -> Tensor",
    meta=_regression_meta("huber_loss"), composite=_huber,
    derivative=Derivative(_kink_loss_derivative(huber_loss_backward_op),
                          save=("self", "target"), name="HuberLossBackward0"),
    doc="Huber loss (quadratic below delta > 0, delta-scaled linear above); "
        "reduction 0/1/2 = none/mean/sum")
