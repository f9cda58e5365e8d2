"""``RMSprop``, following PyTorch's update: a running average of squared gradients (``alpha``),
optionally centered (minus the squared running mean of gradients), with momentum, L2 weight decay
and maximize. Complex parameters are updated as pairs of reals, like PyTorch."""
from __future__ import annotations

from ..compiler import is_compiling
from .optimizer import (Optimizer, add_scaled_, addcmul_, as_real, bump, check_hparams,
                        check_state_steps, impl_defaults, lerp_, lr_on, step_counter)
from ..ops.factories import zeros_like

__all__ = ["RMSprop", "rmsprop"]


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

    def _step_group(self, group, params, grads):
        states = [self._state_of(p, group) for p in params]
        rmsprop(params, grads,
                [s["square_avg"] for s in states],
                [s["grad_avg"] for s in states] if group["centered"] else [],
                [s["momentum_buffer"] for s in states] if group["momentum"] > 0 else [],
                [s["step"] for s in states], foreach=group["foreach"],
                maximize=group["maximize"], differentiable=group["differentiable"],
                capturable=group["capturable"], lr=group["lr"], alpha=group["alpha"],
                eps=group["eps"], weight_decay=group["weight_decay"],
                momentum=group["momentum"], centered=group["centered"])


def rmsprop(params, grads, square_avgs, grad_avgs, momentum_buffer_list, state_steps,
            foreach=None, maximize=False, differentiable=False, capturable=False,
            has_complex=False, *, lr, alpha, eps, weight_decay, momentum, centered):
    """``torch.optim.rmsprop.rmsprop``: one RMSprop step over lists, in place, step counts
    included (``grad_avgs`` only when ``centered``, ``momentum_buffer_list`` only with
    momentum). ``RMSprop.step`` calls this. ember has one (single-tensor) implementation: the
    ``foreach`` flag is accepted and gives the same results."""
    check_state_steps(state_steps)
    tensors = capturable or is_compiling()
    for i, p in enumerate(params):
        grad = -grads[i] if maximize else grads[i]
        if tensors:                      # capturable: the count is never read on the host
            state_steps[i].add_(1)
        else:
            bump(state_steps[i])
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        param, grad = as_real(p), as_real(grad)
        square_avg = as_real(square_avgs[i])
        addcmul_(square_avg.mul_(alpha), grad, grad, 1 - alpha)
        if centered:
            grad_avg = lerp_(as_real(grad_avgs[i]), grad, 1 - alpha)
            avg = square_avg.sub(grad_avg * grad_avg).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            buf = as_real(momentum_buffer_list[i])
            buf.mul_(momentum).add_(grad / avg)
            add_scaled_(param, buf, lr_on(lr, p.device))
        else:
            add_scaled_(param, grad / avg, lr_on(lr, p.device))
