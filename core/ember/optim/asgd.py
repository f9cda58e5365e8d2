"""``ASGD``: averaged stochastic gradient descent (Polyak & Juditsky, 1992), following PyTorch's
update: SGD with a decaying step size ``eta`` and a running average ``ax`` of the iterates that
starts at step ``t0``.

``eta`` and ``mu`` are host scalars of the state (0-d CPU tensors in the step counter's dtype,
like PyTorch's non-capturable ones), so reading them never synchronizes a device."""
from __future__ import annotations

from .optimizer import (Optimizer, as_real, bump, check_hparams, check_impl_flags, decayed_grad,
                        grads_of, host_value, impl_defaults, step_counter)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    _host_state_keys = ("step", "eta", "mu")
    _group_defaults = {"maximize": False, **impl_defaults(None, False, False, False)}

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_hparams("ASGD", lr, weight_decay=weight_decay)
        check_impl_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
            wd = group["weight_decay"]
            for p, grad in grads_of(group, "ASGD"):
                state = self._lazy_state(p, zeros=("ax",), eta=lr, mu=1.0)
                step = bump(state["step"])
                grad = decayed_grad(p, grad, wd, group["maximize"])
                param, grad, ax = as_real(p), as_real(grad), as_real(state["ax"])
                eta = host_value(state["eta"])
                param.mul_(1 - lambd * eta)
                param.add_(grad, alpha=-eta)
                if host_value(state["mu"]) != 1:
                    ax.add_(param.sub(ax).mul_(host_value(state["mu"])))
                else:
                    ax.copy_(param)
                # stored in the counter's dtype, so float32 state rounds as PyTorch's does
                state["eta"] = step_counter(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"] = step_counter(1 / max(1, step - t0))
        return loss
