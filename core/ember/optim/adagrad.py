"""``Adagrad``, following PyTorch's update: a running sum of squared gradients scales each
coordinate's step; ``lr_decay`` shrinks the rate with the step count. State is created at
construction (like PyTorch), so ``state_dict()`` is complete before the first step."""
from __future__ import annotations

from .. import _dtype
from .optimizer import (Optimizer, add_scaled_, addcmul_, as_real, bump, bump_tensor,
                        check_hparams, check_impl_flags, add_scalar, grads_of, impl_defaults,
                        lr_on, step_counter, tensor_steps)
from ..ops.factories import full_like

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    _group_defaults = {"maximize": False, **impl_defaults(None, None, False)}

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        check_hparams("Adagrad", lr, tensor_lr=True, lr_decay=lr_decay, weight_decay=weight_decay,
                      initial_accumulator_value=initial_accumulator_value, eps=eps)
        check_impl_flags(foreach, fused, differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        # every group, at construction or added later, gets its state at once
        for p in self.param_groups[-1]["params"]:
            self._init_state(p, self.param_groups[-1])

    def _init_state(self, p, group):
        state = self.state[p]
        if "sum" in state:
            return
        v = group["initial_accumulator_value"]
        state["step"] = step_counter()
        state["sum"] = full_like(p, complex(v, v) if p.dtype.category == _dtype.COMPLEX else v)

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, lr_decay, eps, wd = group["lr"], group["lr_decay"], group["eps"], \
                group["weight_decay"]
            tensors = tensor_steps(group)
            for p, grad in grads_of(group, "Adagrad"):
                state = self.state[p]
                # under ember.compile the count stays a tensor: no host read in the step
                step = bump_tensor(state["step"], p.device) if tensors else bump(state["step"])
                if group["maximize"]:
                    grad = -grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                lr_p = lr_on(lr, p.device)
                clr = lr_p / (1 + (step - 1) * lr_decay) if lr_decay else lr_p
                param, grad, state_sum = as_real(p), as_real(grad), as_real(state["sum"])
                addcmul_(state_sum, grad, grad, 1)
                std = add_scalar(state_sum.sqrt(), eps, group["differentiable"])
                add_scaled_(param, grad / std, clr)
        return loss
