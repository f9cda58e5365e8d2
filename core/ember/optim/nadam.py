"""``NAdam`` (Dozat, 2016): Adam with Nesterov momentum and the momentum-decay schedule
``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))``, following PyTorch's update, with
L2 or decoupled (``decoupled_weight_decay=True``, NAdamW) weight decay.

The running product of the ``mu_t`` is a host scalar of the state (``mu_product``), kept in the
step counter's dtype like PyTorch's, so float32 runs round it as PyTorch does."""
from __future__ import annotations

from .optimizer import (Optimizer, add_scalar, addcdiv_, addcmul_, as_real, bump, check_betas,
                        check_hparams, check_impl_flags, decayed_grad, grads_of, host_value,
                        impl_defaults, lerp_, step_counter)
from .._tensor import Tensor

__all__ = ["NAdam"]


class NAdam(Optimizer):
    _host_state_keys = ("step", "mu_product")
    _group_defaults = {"maximize": False, "decoupled_weight_decay": False,
                       **impl_defaults(None, False, False, False)}

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_hparams("NAdam", lr, eps=eps)
        betas = check_betas(betas)
        check_hparams("NAdam", lr, weight_decay=weight_decay, momentum_decay=momentum_decay)
        check_impl_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            momentum_decay = group["momentum_decay"]
            for p, grad in grads_of(group, "NAdam"):
                state = self._lazy_state(p, zeros=("exp_avg", "exp_avg_sq"), mu_product=1.0)
                step = bump(state["step"])
                bias_correction2 = 1 - beta2 ** step
                grad = decayed_grad(p, grad, wd, group["maximize"],
                                    group["decoupled_weight_decay"], lr)
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
                mu_product = _mul_host(state, "mu_product", mu)
                mu_product_next = mu_product * mu_next
                param, grad = as_real(p), as_real(grad)
                exp_avg, exp_avg_sq = as_real(state["exp_avg"]), as_real(state["exp_avg_sq"])
                lerp_(exp_avg, grad, 1 - beta1)
                addcmul_(exp_avg_sq.mul_(beta2), grad, grad, 1 - beta2)
                denom = add_scalar(exp_avg_sq.div(bias_correction2).sqrt(), eps,
                                   group["differentiable"])
                addcdiv_(param, grad, denom, -lr * (1.0 - mu) / (1.0 - mu_product))
                addcdiv_(param, exp_avg, denom, -lr * mu_next / (1.0 - mu_product_next))
        return loss


def _mul_host(state, key, factor):
    """Multiply a host scalar of the state in place (a plain number from an old state dict is
    made a tensor first); return the new value as a float."""
    if not isinstance(state[key], Tensor):
        state[key] = step_counter(host_value(state[key]))
    state[key].mul_(factor)
    return host_value(state[key])
