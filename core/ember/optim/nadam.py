"""``NAdam`` (Dozat, 2016): Adam with Nesterov momentum and the momentum-decay schedule
``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))``, following PyTorch's update, with
L2 or decoupled (``decoupled_weight_decay=True``, NAdamW) weight decay.

The running product of the ``mu_t`` is a host scalar of the state (``mu_product``), kept in the
step counter's dtype like PyTorch's, so float32 runs round it as PyTorch does."""
from __future__ import annotations

from .optimizer import (Optimizer, adam_moments_, add_scalar, addcdiv_, check_betas, check_hparams,
                        check_impl_flags, check_state_steps, host_value, impl_defaults,
                        step_counter)
from .._tensor import Tensor

__all__ = ["NAdam", "nadam"]


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

    def _step_group(self, group, params, grads):
        states = [self._lazy_state(p, zeros=("exp_avg", "exp_avg_sq"), mu_product=1.0)
                  for p in params]
        for state in states:         # a plain number from an old state dict
            if not isinstance(state["mu_product"], Tensor):
                state["mu_product"] = step_counter(host_value(state["mu_product"]))
        beta1, beta2 = group["betas"]
        nadam(params, grads, [s["exp_avg"] for s in states],
              [s["exp_avg_sq"] for s in states], [s["mu_product"] for s in states],
              [s["step"] for s in states],
              decoupled_weight_decay=group["decoupled_weight_decay"],
              foreach=group["foreach"], capturable=group["capturable"],
              differentiable=group["differentiable"], maximize=group["maximize"],
              beta1=beta1, beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
              momentum_decay=group["momentum_decay"], eps=group["eps"])


def nadam(params, grads, exp_avgs, exp_avg_sqs, mu_products, state_steps,
          decoupled_weight_decay=False, foreach=None, capturable=False, differentiable=False,
          has_complex=False, maximize=False, *, beta1, beta2, lr, weight_decay, momentum_decay,
          eps):
    """``torch.optim.nadam.nadam``: one NAdam step over lists, in place (``mu_products`` and
    step counts included). ``NAdam.step`` calls this. ember has one (single-tensor)
    implementation: the ``foreach`` flag is accepted and gives the same results."""
    check_state_steps(state_steps)
    for i, p in enumerate(params):
        step, param, grad, exp_avg, exp_avg_sq = adam_moments_(
            p, grads[i], exp_avgs[i], exp_avg_sqs[i], state_steps[i], beta1=beta1,
            beta2=beta2, weight_decay=weight_decay, maximize=maximize,
            decoupled=decoupled_weight_decay, lr=lr)
        bias_correction2 = 1 - beta2 ** step
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
        mu_product = host_value(mu_products[i].mul_(mu))
        mu_product_next = mu_product * mu_next
        denom = add_scalar(exp_avg_sq.div(bias_correction2).sqrt(), eps, differentiable)
        addcdiv_(param, grad, denom, -lr * (1.0 - mu) / (1.0 - mu_product))
        addcdiv_(param, exp_avg, denom, -lr * mu_next / (1.0 - mu_product_next))

