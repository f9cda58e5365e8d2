"""``Adagrad``, following PyTorch's update: a running sum of squared gradients scales each
coordinate's step; ``lr_decay`` shrinks the rate with the step count. State is created at
construction (like PyTorch), so ``state_dict()`` is complete before the first step."""
from __future__ import annotations

from .. import _dtype
from ..compiler import is_compiling
from .optimizer import (Optimizer, add_scaled_, addcmul_, as_real, bump, bump_tensor,
                        check_hparams, check_impl_flags, check_no_grad_scaling, check_state_steps,
                        add_scalar, impl_defaults, lr_on, step_counter)
from ..ops.factories import full_like

__all__ = ["Adagrad", "adagrad"]


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

    def _step_group(self, group, params, grads):
        states = [self.state[p] for p in params]
        adagrad(params, grads, [s["sum"] for s in states],
                [s["step"] for s in states], fused=group["fused"],
                foreach=group["foreach"], differentiable=group["differentiable"],
                lr=group["lr"], weight_decay=group["weight_decay"],
                lr_decay=group["lr_decay"], eps=group["eps"], maximize=group["maximize"])


def adagrad(params, grads, state_sums, state_steps, fused=None, grad_scale=None,
            found_inf=None, has_sparse_grad=False, foreach=None, differentiable=False,
            has_complex=False, *, lr, weight_decay, lr_decay, eps, maximize):
    """``torch.optim.adagrad.adagrad``: one Adagrad step over lists, in place, step counts
    included. ``Adagrad.step`` calls this. ember has one (single-tensor) implementation: the
    ``foreach``/``fused`` flags are accepted and give the same results; gradients are dense
    (``has_sparse_grad`` is accepted for the signature)."""
    check_state_steps(state_steps)
    check_no_grad_scaling("adagrad", grad_scale, found_inf)
    tensors = is_compiling()
    for i, p in enumerate(params):
        # under ember.compile the count stays a tensor: no host read in the step
        step = bump_tensor(state_steps[i], p.device) if tensors else bump(state_steps[i])
        grad = -grads[i] if maximize else grads[i]
        if weight_decay != 0:
            grad = grad.add(p, alpha=weight_decay)
        lr_p = lr_on(lr, p.device)
        clr = lr_p / (1 + (step - 1) * lr_decay) if lr_decay else lr_p
        param, grad, state_sum = as_real(p), as_real(grad), as_real(state_sums[i])
        addcmul_(state_sum, grad, grad, 1)
        std = add_scalar(state_sum.sqrt(), eps, differentiable)
        add_scaled_(param, grad / std, clr)
