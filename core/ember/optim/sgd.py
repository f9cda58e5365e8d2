"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov momentum, L2 weight
decay and maximize, following PyTorch's update (``torch.optim.SGD``). Three implementations
with the same results (``optimizer.implementation``): ``fused=True`` runs one ``_fused_sgd_``
op per parameter group, ``foreach`` (the default) a few ``_foreach_*`` ops per group, and
``foreach=False`` (or ``differentiable=True``) the single-tensor loop."""
from __future__ import annotations

from ..ops import foreach as _fe
from .optimizer import (Optimizer, add_scaled_, check_hparams, check_impl_flags, grads_of,
                        host_lr, impl_defaults, implementation, lr_on)
from ..ops.factories import zeros_like

__all__ = ["SGD"]


class SGD(Optimizer):
    _group_defaults = {"nesterov": False, "maximize": False, "foreach": None,
                       "differentiable": False, "fused": None}

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        check_hparams("SGD", lr, tensor_lr=True, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        check_impl_flags(foreach, fused, differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        **impl_defaults(foreach, fused, differentiable))
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            pairs = grads_of(group, "SGD")
            impl = implementation(group)
            if impl == "single":
                self._single(group, pairs)
            elif pairs:
                self._multi(group, pairs, fused=impl == "fused")
        return loss

    def _single(self, group, pairs):
        lr, wd = group["lr"], group["weight_decay"]
        momentum, dampening = group["momentum"], group["dampening"]
        for p, grad in pairs:
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
            add_scaled_(p, grad, lr_on(lr, p.device))

    def _multi(self, group, pairs, fused):
        """The whole group's update in a few multi-tensor ops: parameters whose momentum buffer
        is new (first step: the buffer becomes the gradient) and the others, separately."""
        momentum = group["momentum"]
        first, later = [], []
        for p, g in pairs:
            if momentum == 0:
                later.append((p, g, None))
                continue
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = zeros_like(p)
                first.append((p, g, buf))
            else:
                later.append((p, g, buf))
        for items, is_first in ((first, True), (later, False)):
            if not items:
                continue
            params, grads, bufs = (list(x) for x in zip(*items))
            bufs = bufs if momentum != 0 else []
            if fused:
                _fe._fused_sgd_(params, grads, bufs, weight_decay=group["weight_decay"],
                                momentum=momentum, lr=host_lr(group),
                                dampening=group["dampening"], nesterov=group["nesterov"],
                                maximize=group["maximize"], is_first_step=is_first)
            else:
                self._foreach(group, params, grads, bufs, is_first)

    @staticmethod
    def _foreach(group, params, grads, bufs, is_first):
        lr, wd, momentum = group["lr"], group["weight_decay"], group["momentum"]
        if group["maximize"]:
            grads = _fe._foreach_mul(grads, -1)
        if wd != 0:
            grads = _fe._foreach_add(grads, params, alpha=wd)
        if momentum != 0:
            if is_first:
                _fe._foreach_add_(bufs, grads)  # the zero buffers become the gradients
            else:
                _fe._foreach_mul_(bufs, momentum)
                _fe._foreach_add_(bufs, grads, alpha=1 - group["dampening"])
            grads = _fe._foreach_add(grads, bufs, alpha=momentum) if group["nesterov"] else bufs
        if isinstance(lr, (int, float)):
            _fe._foreach_add_(params, grads, alpha=-lr)
        else:                            # a tensor lr (updated in place by a scheduler)
            for p, g in zip(params, grads):
                add_scaled_(p, g, lr_on(lr, p.device))
