"""``nll_loss_forward`` / ``nll_loss_backward`` (PyTorch's aten names): the negative
log-likelihood of class targets over (N, C) log-probabilities as one op each way, under
``cross_entropy`` and ``nll_loss`` for 2-D inputs (other shapes keep the composition in
``nn/_loss.py``).

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
from .._util import every_example
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

