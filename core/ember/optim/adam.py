"""``Adam`` and ``AdamW`` (decoupled weight decay), following PyTorch's update: bias-corrected
first and second moments, optional AMSGrad and maximize. Complex parameters are updated as pairs
of reals, like PyTorch. ``fused=True`` runs one ``_fused_adam_``/``_fused_adamw_`` op per group
(and step count), the default a few ``_foreach_*`` ops per group, ``foreach=False`` or
``differentiable=True`` the single-tensor loop (``optimizer.implementation``)."""
from __future__ import annotations

from collections import defaultdict

from ..ops import foreach as _fe
from .._tensor import Tensor
from ..compiler import is_compiling
from .optimizer import (Optimizer, adam_moments_, as_real, bump, bump_tensor, check_betas,
                        check_hparams, check_impl_flags, check_no_grad_scaling, check_state_steps,
                        functional_implementation, impl_defaults, implementation, lr_on,
                        step_counter, zeros_state)

__all__ = ["Adam", "AdamW", "adam", "adamw"]


class Adam(Optimizer):
    _group_defaults = {"amsgrad": False, "maximize": False, "decoupled_weight_decay": False,
                       **impl_defaults(None, None, False, False)}

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_hparams(type(self).__name__, lr, tensor_lr=True, eps=eps, weight_decay=weight_decay)
        betas = check_betas(betas)
        check_impl_flags(foreach, fused, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _state_of(self, p, amsgrad, capturable=False):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = step_counter(param=p if capturable else None)
            state["exp_avg"] = zeros_state(p)
            state["exp_avg_sq"] = zeros_state(p)
            if amsgrad:
                state["max_exp_avg_sq"] = zeros_state(p)
        elif amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = zeros_state(p)
        return state

    def _step_group(self, group, params, grads):
        amsgrad = group["amsgrad"]
        capturable = bool(group["capturable"])
        states = [self._state_of(p, amsgrad, capturable) for p in params]
        impl = implementation(group)
        beta1, beta2 = group["betas"]
        adam(params, grads,
             [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states],
             [s["max_exp_avg_sq"] for s in states] if amsgrad else [],
             [s["step"] for s in states], foreach=impl == "foreach",
             capturable=capturable, differentiable=group["differentiable"],
             fused=impl == "fused", decoupled_weight_decay=group["decoupled_weight_decay"],
             amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=group["lr"],
             weight_decay=group["weight_decay"], eps=group["eps"],
             maximize=group["maximize"])


def adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
         capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
         has_complex=False, decoupled_weight_decay=False, *, amsgrad, beta1, beta2, lr,
         weight_decay, eps, maximize):
    """``torch.optim.adam.adam``: one Adam (``decoupled_weight_decay``: AdamW) step over lists,
    in place, step counts included. ``Adam.step`` calls this. With ``capturable`` (and inside
    an ``ember.compile`` capture) the step counts stay tensors; ``has_complex`` is accepted
    for PyTorch's signature (complex tensors are always updated as real pairs)."""
    check_state_steps(state_steps)
    check_no_grad_scaling("adam", grad_scale, found_inf)
    impl = functional_implementation(foreach, fused, differentiable)
    hp = dict(amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr, weight_decay=weight_decay,
              eps=eps, maximize=maximize, decoupled=decoupled_weight_decay)
    lists = (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps)
    if (capturable or is_compiling()) and impl != "fused":
        if impl == "single" or not _multi_capturable_adam(*lists, **hp):
            _capturable_adam(*lists, **hp)
    elif impl == "single":
        _single_tensor_adam(*lists, differentiable=differentiable, **hp)
    elif params:
        _multi_tensor_adam(*lists, fused=impl == "fused", **hp)


def _capturable_adam(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, *, amsgrad, beta1,
                     beta2, lr, weight_decay, eps, maximize, decoupled):
    """PyTorch's capturable update, one parameter at a time: the step count stays a tensor
    and the bias corrections are tensor ops (``foreach.adam_capturable_one``), so nothing
    is read on the host."""
    for i, p in enumerate(params):
        step = bump_tensor(steps[i], p.device)
        _fe.adam_capturable_one(
            as_real(p), as_real(grads[i]), as_real(exp_avgs[i]), as_real(exp_avg_sqs[i]),
            as_real(max_sqs[i]) if amsgrad else None, step, lr_on(lr, p.device), beta1, beta2,
            weight_decay, eps, amsgrad, maximize, decoupled)


def _multi_capturable_adam(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, *, amsgrad,
                           beta1, beta2, lr, weight_decay, eps, maximize, decoupled):
    """The capturable update of all the lists as one ``_fused_adam_capturable_`` op (one
    graph node under ``ember.compile``); False when they don't fit it (step counts on another
    device than their parameters, complex parameters, several devices)."""
    if not params:
        return True
    device = params[0].device
    for p, step in zip(params, steps):
        if p.device is not device or step.device is not device or p.is_complex():
            return False
    _fe._fused_adam_capturable_(
        list(params), list(grads), list(exp_avgs), list(exp_avg_sqs),
        list(max_sqs) if amsgrad else [], list(steps), lr=lr_on(lr, device), beta1=beta1,
        beta2=beta2, weight_decay=weight_decay, eps=eps, amsgrad=amsgrad, maximize=maximize,
        decoupled=decoupled)
    return True


def _single_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, *, amsgrad,
                        beta1, beta2, lr, weight_decay, eps, maximize, decoupled,
                        differentiable):
    lr = float(lr.item()) if isinstance(lr, Tensor) else lr
    for i, p in enumerate(params):
        step, param, grad, exp_avg, exp_avg_sq = adam_moments_(
            p, grads[i], exp_avgs[i], exp_avg_sqs[i], steps[i], beta1=beta1, beta2=beta2,
            weight_decay=weight_decay, maximize=maximize, decoupled=decoupled, lr=lr)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if amsgrad:
            max_sq = as_real(max_sqs[i])
            # (differentiable: maximum must not save the tensor copy_ overwrites)
            prev_max = max_sq.clone() if differentiable else max_sq
            max_sq.copy_(prev_max.maximum(exp_avg_sq))
            denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.add_(exp_avg / denom, alpha=-(lr / bias_correction1))


def _multi_tensor_adam(params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps, *, fused,
                       amsgrad, beta1, beta2, lr, weight_decay, eps, maximize, decoupled):
    """The update in multi-tensor ops; parameters are grouped by step count (the bias
    corrections depend on it: usually one group)."""
    lr = float(lr.item()) if isinstance(lr, Tensor) else lr
    by_step = defaultdict(list)
    for i, p in enumerate(params):
        by_step[bump(steps[i])].append(
            (as_real(p), as_real(grads[i]), as_real(exp_avgs[i]), as_real(exp_avg_sqs[i]),
             as_real(max_sqs[i]) if amsgrad else None))
    hp = dict(lr=lr, beta1=beta1, beta2=beta2, weight_decay=weight_decay, eps=eps,
              amsgrad=amsgrad, maximize=maximize)
    for step, items in by_step.items():
        ps, gs, avgs, avg_sqs, maxes = (list(x) for x in zip(*items))
        if fused:
            op = _fe._fused_adamw_ if decoupled else _fe._fused_adam_
            op(ps, gs, avgs, avg_sqs, maxes if amsgrad else [], [step] * len(ps), **hp)
        else:
            _foreach_adam(step, ps, gs, avgs, avg_sqs, maxes, decoupled=decoupled, **hp)


def _foreach_adam(step, params, grads, exp_avgs, exp_avg_sqs, max_sqs, *, lr, beta1, beta2,
                  weight_decay, eps, amsgrad, maximize, decoupled):
    if maximize:
        grads = _fe._foreach_mul(grads, -1)
    if weight_decay != 0:
        if decoupled:
            _fe._foreach_mul_(params, 1 - lr * weight_decay)
        else:
            grads = _fe._foreach_add(grads, params, alpha=weight_decay)
    _fe._foreach_lerp_(exp_avgs, grads, 1 - beta1)
    _fe._foreach_mul_(exp_avg_sqs, beta2)
    _fe._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    if amsgrad:
        _fe._foreach_maximum_(max_sqs, exp_avg_sqs)
        denom = _fe._foreach_sqrt(max_sqs)
    else:
        denom = _fe._foreach_sqrt(exp_avg_sqs)
    _fe._foreach_div_(denom, bias_correction2_sqrt)
    _fe._foreach_add_(denom, eps)
    _fe._foreach_addcdiv_(params, exp_avgs, denom, -(lr / bias_correction1))


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): ``p *= 1 - lr * weight_decay``
    before the Adam update instead of adding ``weight_decay * p`` to the gradient."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)

    def __setstate__(self, state):
        # any loaded state stays AdamW (PyTorch's rule since AdamW became an Adam option)
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True


def adamw(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=None,
          capturable=False, differentiable=False, fused=None, grad_scale=None, found_inf=None,
          has_complex=False, *, amsgrad, beta1, beta2, lr, weight_decay, eps, maximize):
    """``torch.optim.adamw.adamw``: ``adam`` with decoupled weight decay."""
    adam(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, foreach=foreach,
         capturable=capturable, differentiable=differentiable, fused=fused,
         grad_scale=grad_scale, found_inf=found_inf, has_complex=has_complex,
         decoupled_weight_decay=True, amsgrad=amsgrad, beta1=beta1, beta2=beta2, lr=lr,
         weight_decay=weight_decay, eps=eps, maximize=maximize)
