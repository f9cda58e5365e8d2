"""``Adadelta`` (Zeiler, 2012), following PyTorch's update: running averages of squared
gradients and of squared updates set each coordinate's step size; ``lr`` scales the update."""
from __future__ import annotations

from .._tensor import Tensor
from ..ops import foreach as _fe
from .optimizer import (Optimizer, addcmul_, as_real, check_hparams, check_impl_flags,
                        check_state_steps, decayed_grad, functional_implementation, impl_defaults)

__all__ = ["Adadelta", "adadelta"]


class Adadelta(Optimizer):
    _group_defaults = {"maximize": False, **impl_defaults(None, False, False, False)}

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_hparams("Adadelta", lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_impl_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group, params, grads):
        states = [self._lazy_state(p, zeros=("square_avg", "acc_delta")) for p in params]
        adadelta(params, grads,
                 [s["square_avg"] for s in states], [s["acc_delta"] for s in states],
                 [s["step"] for s in states], capturable=group["capturable"],
                 foreach=group["foreach"], differentiable=group["differentiable"],
                 lr=group["lr"], rho=group["rho"], eps=group["eps"],
                 weight_decay=group["weight_decay"], maximize=group["maximize"])


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False,
             foreach=None, differentiable=False, has_complex=False, *, lr, rho, eps,
             weight_decay, maximize):
    """``torch.optim.adadelta.adadelta``: one Adadelta step over lists, in place, step counts
    included. ``Adadelta.step`` calls this. The default (foreach) runs each elementwise step
    as one multi-tensor op over all the parameters, like PyTorch's ``_multi_tensor_adadelta``
    (same operations in the same order, so the same results as the single-tensor loop);
    ``foreach=False``, ``differentiable`` or a tensor ``lr`` take that loop."""
    check_state_steps(state_steps)
    lists = [[as_real(t) for t in ts] for ts in (params, grads, square_avgs, acc_deltas)]
    hp = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
    if functional_implementation(foreach, None, differentiable) == "single" or \
            isinstance(lr, Tensor) or not params:
        _single_tensor_adadelta(*lists, state_steps, **hp)
    else:
        _multi_tensor_adadelta(*lists, state_steps, **hp)


def _single_tensor_adadelta(params, grads, square_avgs, acc_deltas, state_steps, *, lr, rho,
                            eps, weight_decay, maximize):
    for i, param in enumerate(params):
        state_steps[i].add_(1)
        grad = decayed_grad(param, grads[i], weight_decay, maximize)
        square_avg, acc_delta = square_avgs[i], acc_deltas[i]
        addcmul_(square_avg.mul_(rho), grad, grad, 1 - rho)
        std = square_avg.add(eps).sqrt()
        delta = acc_delta.add(eps).sqrt() / std * grad
        addcmul_(acc_delta.mul_(rho), delta, delta, 1 - rho)
        param.add_(delta, alpha=-lr)


def _multi_tensor_adadelta(params, grads, square_avgs, acc_deltas, state_steps, *, lr, rho,
                           eps, weight_decay, maximize):
    _fe._foreach_add_(state_steps, 1)
    if maximize or weight_decay != 0:
        grads = [decayed_grad(p, g, weight_decay, maximize) for p, g in zip(params, grads)]
    _fe._foreach_mul_(square_avgs, rho)
    _fe._foreach_addcmul_(square_avgs, grads, grads, 1 - rho)
    std = _fe._foreach_sqrt(_fe._foreach_add(square_avgs, eps))
    deltas = _fe._foreach_sqrt(_fe._foreach_add(acc_deltas, eps))
    _fe._foreach_div_(deltas, std)
    _fe._foreach_mul_(deltas, grads)
    _fe._foreach_mul_(acc_deltas, rho)
    _fe._foreach_addcmul_(acc_deltas, deltas, deltas, 1 - rho)
    _fe._foreach_add_(params, deltas, alpha=-lr)
