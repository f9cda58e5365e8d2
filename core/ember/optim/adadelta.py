"""``Adadelta`` (Zeiler, 2012), following PyTorch's update: running averages of squared
gradients and of squared updates set each coordinate's step size; ``lr`` scales the update."""
from __future__ import annotations

from .optimizer import (Optimizer, addcmul_, as_real, bump, check_hparams, check_impl_flags,
                        decayed_grad, grads_of, impl_defaults)

__all__ = ["Adadelta"]


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
            lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p, grad in grads_of(group, "Adadelta"):
                state = self._lazy_state(p, zeros=("square_avg", "acc_delta"))
                bump(state["step"])
                grad = decayed_grad(p, grad, wd, group["maximize"])
                param, grad = as_real(p), as_real(grad)
                square_avg, acc_delta = as_real(state["square_avg"]), as_real(state["acc_delta"])
                addcmul_(square_avg.mul_(rho), grad, grad, 1 - rho)
                std = square_avg.add(eps).sqrt()
                delta = acc_delta.add(eps).sqrt() / std * grad
                addcmul_(acc_delta.mul_(rho), delta, delta, 1 - rho)
                param.add_(delta, alpha=-lr)
        return loss
