"""``Adamax`` (Kingma & Ba, 2014, section 7): Adam with the infinity norm of past gradients in
place of the root mean square, following PyTorch's update."""
from __future__ import annotations

from .optimizer import (Optimizer, addcdiv_, as_real, bump, check_betas, check_hparams,
                        check_impl_flags, check_state_steps, decayed_grad, impl_defaults, lerp_)

__all__ = ["Adamax", "adamax"]


class Adamax(Optimizer):
    _group_defaults = {"maximize": False, **impl_defaults(None, False, False, False)}

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_hparams("Adamax", lr, eps=eps, weight_decay=weight_decay)
        betas = check_betas(betas)
        check_impl_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    def _step_group(self, group, params, grads):
        states = [self._lazy_state(p, zeros=("exp_avg", "exp_inf")) for p in params]
        beta1, beta2 = group["betas"]
        adamax(params, grads, [s["exp_avg"] for s in states],
               [s["exp_inf"] for s in states], [s["step"] for s in states],
               foreach=group["foreach"], maximize=group["maximize"],
               differentiable=group["differentiable"], capturable=group["capturable"],
               eps=group["eps"], beta1=beta1, beta2=beta2, lr=group["lr"],
               weight_decay=group["weight_decay"])


def adamax(params, grads, exp_avgs, exp_infs, state_steps, foreach=None, maximize=False,
           differentiable=False, capturable=False, has_complex=False, *, eps, beta1, beta2, lr,
           weight_decay):
    """``torch.optim.adamax.adamax``: one Adamax step over lists, in place, step counts
    included. ``Adamax.step`` calls this. ember has one (single-tensor) implementation: the
    ``foreach`` flag is accepted and gives the same results."""
    check_state_steps(state_steps)
    for i, p in enumerate(params):
        step = bump(state_steps[i])
        grad = decayed_grad(p, grads[i], weight_decay, maximize)
        param, grad = as_real(p), as_real(grad)
        exp_avg, exp_inf = as_real(exp_avgs[i]), as_real(exp_infs[i])
        lerp_(exp_avg, grad, 1 - beta1)
        # the weighted infinity norm: max(beta2 * u, |g| + eps)
        exp_inf.copy_(exp_inf.mul(beta2).maximum(grad.abs().add_(eps)))
        clr = lr / (1 - beta1 ** step)
        addcdiv_(param, exp_avg, exp_inf, -clr)
