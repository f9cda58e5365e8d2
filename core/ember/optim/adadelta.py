"""``Adadelta`` (Zeiler, 2012), following PyTorch's update: running averages of squared
gradients and of squared updates set each coordinate's step size; ``lr`` scales the update."""
from __future__ import annotations

from .optimizer import (Optimizer, addcmul_, as_real, check_hparams, check_impl_flags,
                        check_state_steps, decayed_grad, grads_of, impl_defaults)

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

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            pairs = grads_of(group, "Adadelta")
            states = [self._lazy_state(p, zeros=("square_avg", "acc_delta")) for p, _ in pairs]
            adadelta([p for p, _ in pairs], [g for _, g in pairs],
                     [s["square_avg"] for s in states], [s["acc_delta"] for s in states],
                     [s["step"] for s in states], capturable=group["capturable"],
                     foreach=group["foreach"], differentiable=group["differentiable"],
                     lr=group["lr"], rho=group["rho"], eps=group["eps"],
                     weight_decay=group["weight_decay"], maximize=group["maximize"])
        return loss


def adadelta(params, grads, square_avgs, acc_deltas, state_steps, capturable=False,
             foreach=None, differentiable=False, has_complex=False, *, lr, rho, eps,
             weight_decay, maximize):
    """``torch.optim.adadelta.adadelta``: one Adadelta step over lists, in place, step counts
    included. ``Adadelta.step`` calls this. ember has one (single-tensor) implementation: the
    ``foreach`` flag is accepted and gives the same results."""
    check_state_steps(state_steps)
    for i, p in enumerate(params):
        state_steps[i].add_(1)
        grad = decayed_grad(p, grads[i], weight_decay, maximize)
        param, grad = as_real(p), as_real(grad)
        square_avg, acc_delta = as_real(square_avgs[i]), as_real(acc_deltas[i])
        addcmul_(square_avg.mul_(rho), grad, grad, 1 - rho)
        std = square_avg.add(eps).sqrt()
        delta = acc_delta.add(eps).sqrt() / std * grad
        addcmul_(acc_delta.mul_(rho), delta, delta, 1 - rho)
        param.add_(delta, alpha=-lr)
