"""``Adam`` and ``AdamW`` (decoupled weight decay), following PyTorch's update: bias-corrected
first and second moments, optional AMSGrad and maximize. Complex parameters are updated as pairs
of reals, like PyTorch."""
from __future__ import annotations

from .optimizer import Optimizer, as_real, bump, check_hparams, grads_of, lerp_, step_counter

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, maximize=False, decoupled_weight_decay=False):
        check_hparams(type(self).__name__, lr, eps=eps, weight_decay=weight_decay)
        betas = tuple(betas)
        if len(betas) != 2:
            raise ValueError(f"betas must be a pair (beta1, beta2), got {betas}")
        for i, b in enumerate(betas):
            if not 0.0 <= b < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {b}")
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("decoupled_weight_decay", False)

    def _state_of(self, p, amsgrad):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = step_counter()
            state["exp_avg"] = _zeros_like(p)
            state["exp_avg_sq"] = _zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = _zeros_like(p)
        elif amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = _zeros_like(p)
        return state

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            amsgrad, decoupled = group["amsgrad"], group["decoupled_weight_decay"]
            for p, grad in grads_of(group, type(self).__name__):
                state = self._state_of(p, amsgrad)
                if group["maximize"]:
                    grad = -grad
                step = bump(state["step"])
                if wd != 0:
                    if decoupled:
                        p.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(p, alpha=wd)
                param, grad = as_real(p), as_real(grad)
                exp_avg, exp_avg_sq = as_real(state["exp_avg"]), as_real(state["exp_avg_sq"])
                lerp_(exp_avg, grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                if amsgrad:
                    max_sq = as_real(state["max_exp_avg_sq"])
                    max_sq.copy_(max_sq.maximum(exp_avg_sq))
                    denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                else:
                    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                param.add_(exp_avg / denom, alpha=-(lr / bias_correction1))
        return loss


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay``
    before the Adam update instead of adding ``weight_decay * p`` to the gradient."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         decoupled_weight_decay=True)


def _zeros_like(p):
    from ..ops.factories import zeros_like
    return zeros_like(p)
