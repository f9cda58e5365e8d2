"""``RAdam`` (Liu et al., 2019): Adam whose adaptive step is switched on only once the variance
of the adaptive learning rate is tractable (the rectification term), following PyTorch's update,
with L2 or decoupled (``decoupled_weight_decay=True``, RAdamW) weight decay."""
from __future__ import annotations

from .optimizer import (Optimizer, adam_moments_, check_betas, check_hparams, check_impl_flags,
                        check_state_steps, impl_defaults)

__all__ = ["RAdam", "radam"]


class RAdam(Optimizer):
    _group_defaults = {"maximize": False, "decoupled_weight_decay": False,
                       **impl_defaults(None, False, False, False)}

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_hparams("RAdam", lr, eps=eps)
        betas = check_betas(betas)
        check_hparams("RAdam", lr, weight_decay=weight_decay)
        check_impl_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _step_group(self, group, params, grads):
        states = [self._lazy_state(p, zeros=("exp_avg", "exp_avg_sq")) for p in params]
        beta1, beta2 = group["betas"]
        radam(params, grads, [s["exp_avg"] for s in states],
              [s["exp_avg_sq"] for s in states], [s["step"] for s in states],
              decoupled_weight_decay=group["decoupled_weight_decay"],
              foreach=group["foreach"], differentiable=group["differentiable"],
              capturable=group["capturable"], maximize=group["maximize"], beta1=beta1,
              beta2=beta2, lr=group["lr"], weight_decay=group["weight_decay"],
              eps=group["eps"])


def radam(params, grads, exp_avgs, exp_avg_sqs, state_steps, decoupled_weight_decay=False,
          foreach=None, differentiable=False, capturable=False, has_complex=False,
          maximize=False, *, beta1, beta2, lr, weight_decay, eps):
    """``torch.optim.radam.radam``: one RAdam step over lists, in place, step counts included.
    ``RAdam.step`` calls this. ember has one (single-tensor) implementation: the ``foreach``
    flag is accepted and gives the same results."""
    check_state_steps(state_steps)
    # the maximum length of the approximated simple moving average
    rho_inf = 2 / (1 - beta2) - 1
    for i, p in enumerate(params):
        step, param, grad, exp_avg, exp_avg_sq = adam_moments_(
            p, grads[i], exp_avgs[i], exp_avg_sqs[i], state_steps[i], beta1=beta1,
            beta2=beta2, weight_decay=weight_decay, maximize=maximize,
            decoupled=decoupled_weight_decay, lr=lr)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        bias_corrected_exp_avg = exp_avg / bias_correction1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        if rho_t > 5.0:
            rect = ((rho_t - 4) * (rho_t - 2) * rho_inf /
                    ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
            adaptive_lr = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
            param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
        else:
            param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
