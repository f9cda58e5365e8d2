"""``RMSprop``, following PyTorch's update: a running average of squared gradients (``alpha``),
optionally centered (minus the squared running mean of gradients), with momentum, L2 weight decay
and maximize. Complex parameters are updated as pairs of reals, like PyTorch."""
from __future__ import annotations

from .optimizer import (Optimizer, add_scaled_, addcmul_, as_real, bump, check_hparams,
                        grads_of, impl_defaults, lerp_, lr_on, step_counter, tensor_steps)
from ..ops.factories import zeros_like

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    _group_defaults = {"momentum": 0, "centered": False, "maximize": False,
                       **impl_defaults(None, False, False, False)}

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_hparams("RMSprop", lr, tensor_lr=True, eps=eps, momentum=momentum,
                      weight_decay=weight_decay,
                      alpha=alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _state_of(self, p, group):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = step_counter(param=p if group["capturable"] else None)
            state["square_avg"] = zeros_like(p)
        if group["momentum"] > 0 and "momentum_buffer" not in state:
            state["momentum_buffer"] = zeros_like(p)
        if group["centered"] and "grad_avg" not in state:
            state["grad_avg"] = zeros_like(p)
        return state

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
            wd, momentum = group["weight_decay"], group["momentum"]
            tensors = tensor_steps(group)
            for p, grad in grads_of(group, "RMSprop"):
                state = self._state_of(p, group)
                if group["maximize"]:
                    grad = -grad
                if tensors:              # capturable: the count is never read on the host
                    state["step"].add_(1)
                else:
                    bump(state["step"])
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                param, grad = as_real(p), as_real(grad)
                square_avg = as_real(state["square_avg"])
                addcmul_(square_avg.mul_(alpha), grad, grad, 1 - alpha)
                if group["centered"]:
                    grad_avg = lerp_(as_real(state["grad_avg"]), grad, 1 - alpha)
                    avg = square_avg.sub(grad_avg * grad_avg).sqrt_()
                else:
                    avg = square_avg.sqrt()
                avg = avg.add_(eps)
                if momentum > 0:
                    buf = as_real(state["momentum_buffer"])
                    buf.mul_(momentum).add_(grad / avg)
                    add_scaled_(param, buf, lr_on(lr, p.device))
                else:
                    add_scaled_(param, grad / avg, lr_on(lr, p.device))
        return loss
