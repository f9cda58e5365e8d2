"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov momentum, L2 weight
decay and maximize, following PyTorch's update (``torch.optim.SGD``). ``foreach``/``fused``
are accepted; the single-tensor path runs (see ``optimizer``'s docstring)."""
from __future__ import annotations

from .optimizer import Optimizer, check_hparams, check_impl_flags, grads_of, impl_defaults

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        check_hparams("SGD", lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        check_impl_flags(foreach, fused, differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        **impl_defaults(foreach, fused, differentiable))
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, wd = group["lr"], group["weight_decay"]
            momentum, dampening = group["momentum"], group["dampening"]
            for p, grad in grads_of(group, "SGD"):
                if group["maximize"]:
                    grad = -grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = state["momentum_buffer"] = grad.clone().detach()
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
                p.add_(grad, alpha=-lr)
        return loss
