"""``Adadelta`` (Zeiler, 2012), following PyTorch's update: running averages of squared
gradients and of squared updates set each coordinate's step size; ``lr`` scales the update."""
from __future__ import annotations

from .optimizer import (Optimizer, addcmul_, as_real, bump, check_hparams, check_impl_flags,
                        grads_of, impl_defaults, neg_if, step_counter, zeros_state)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_hparams("Adadelta", lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_impl_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("maximize", False)
            for key, default in impl_defaults(None, False, False, False).items():
                group.setdefault(key, default)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, rho, eps, wd = group["lr"], group["rho"], group["eps"], group["weight_decay"]
            for p, grad in grads_of(group, "Adadelta"):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = step_counter()
                    state["square_avg"] = zeros_state(p)
                    state["acc_delta"] = zeros_state(p)
                bump(state["step"])
                grad = neg_if(grad, group["maximize"])
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                param, grad = as_real(p), as_real(grad)
                square_avg, acc_delta = as_real(state["square_avg"]), as_real(state["acc_delta"])
                addcmul_(square_avg.mul_(rho), grad, grad, 1 - rho)
                std = square_avg.add(eps).sqrt()
                delta = acc_delta.add(eps).sqrt() / std * grad
                addcmul_(acc_delta.mul_(rho), delta, delta, 1 - rho)
                param.add_(delta, alpha=-lr)
        return loss
