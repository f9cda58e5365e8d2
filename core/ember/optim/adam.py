"""``Adam`` and ``AdamW`` (decoupled weight decay), following PyTorch's update: bias-corrected
first and second moments, optional AMSGrad and maximize. Complex parameters are updated as pairs
of reals, like PyTorch. ``fused=True`` runs one ``_fused_adam_``/``_fused_adamw_`` op per group
(and step count), the default a few ``_foreach_*`` ops per group, ``foreach=False`` or
``differentiable=True`` the single-tensor loop (``optimizer.implementation``)."""
from __future__ import annotations

from collections import defaultdict

from ..ops import foreach as _fe
from .optimizer import (Optimizer, addcmul_, as_real, bump, bump_tensor, check_betas,
                        check_hparams, check_impl_flags, decayed_grad, grads_of, host_lr,
                        impl_defaults, implementation, lerp_, lr_on, step_counter, tensor_steps,
                        zeros_state)

__all__ = ["Adam", "AdamW"]


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

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            pairs = grads_of(group, type(self).__name__)
            impl = implementation(group)
            if tensor_steps(group) and impl != "fused":
                if impl == "single" or not self._multi_capturable(group, pairs):
                    self._capturable(group, pairs)
            elif impl == "single":
                self._single(group, pairs)
            elif pairs:
                self._multi(group, pairs, fused=impl == "fused")
        return loss

    def _capturable(self, group, pairs):
        """PyTorch's capturable update, one parameter at a time: the step count stays a tensor
        and the bias corrections are tensor ops (``foreach.adam_capturable_one``), so nothing
        is read on the host."""
        beta1, beta2 = group["betas"]
        amsgrad = group["amsgrad"]
        for p, grad in pairs:
            state = self._state_of(p, amsgrad, capturable=bool(group["capturable"]))
            step = bump_tensor(state["step"], p.device)
            _fe.adam_capturable_one(
                as_real(p), as_real(grad), as_real(state["exp_avg"]),
                as_real(state["exp_avg_sq"]),
                as_real(state["max_exp_avg_sq"]) if amsgrad else None, step,
                lr_on(group["lr"], p.device), beta1, beta2, group["weight_decay"],
                group["eps"], amsgrad, group["maximize"], group["decoupled_weight_decay"])

    def _multi_capturable(self, group, pairs):
        """The capturable update of a whole group as one ``_fused_adam_capturable_`` op (one
        graph node under ``ember.compile``); False when the group doesn't fit it (step counts
        on another device than their parameters, complex parameters, several devices)."""
        if not pairs:
            return True
        amsgrad = group["amsgrad"]
        device = pairs[0][0].device
        rows = []
        for p, g in pairs:
            state = self._state_of(p, amsgrad, capturable=bool(group["capturable"]))
            step = state["step"]
            if p.device is not device or step.device is not device or p.is_complex():
                return False
            rows.append((p, g, state["exp_avg"], state["exp_avg_sq"],
                         state["max_exp_avg_sq"] if amsgrad else None, step))
        params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps = (list(x) for x in zip(*rows))
        beta1, beta2 = group["betas"]
        _fe._fused_adam_capturable_(
            params, grads, exp_avgs, exp_avg_sqs, max_sqs if amsgrad else [], steps,
            lr=lr_on(group["lr"], device), beta1=beta1, beta2=beta2,
            weight_decay=group["weight_decay"], eps=group["eps"], amsgrad=amsgrad,
            maximize=group["maximize"], decoupled=group["decoupled_weight_decay"])
        return True

    def _single(self, group, pairs):
        lr, eps, wd = host_lr(group), group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        amsgrad, decoupled = group["amsgrad"], group["decoupled_weight_decay"]
        for p, grad in pairs:
            state = self._state_of(p, amsgrad)
            step = bump(state["step"])
            grad = decayed_grad(p, grad, wd, group["maximize"], decoupled, lr)
            param, grad = as_real(p), as_real(grad)
            exp_avg, exp_avg_sq = as_real(state["exp_avg"]), as_real(state["exp_avg_sq"])
            lerp_(exp_avg, grad, 1 - beta1)
            addcmul_(exp_avg_sq.mul_(beta2), grad, grad, 1 - beta2)
            bias_correction1 = 1 - beta1 ** step
            bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
            if amsgrad:
                max_sq = as_real(state["max_exp_avg_sq"])
                # (differentiable: maximum must not save the tensor copy_ overwrites)
                prev_max = max_sq.clone() if group["differentiable"] else max_sq
                max_sq.copy_(prev_max.maximum(exp_avg_sq))
                denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            param.add_(exp_avg / denom, alpha=-(lr / bias_correction1))

    def _multi(self, group, pairs, fused):
        """The group's update in multi-tensor ops; parameters are grouped by step count (the
        bias corrections depend on it: usually one group)."""
        amsgrad = group["amsgrad"]
        by_step = defaultdict(list)
        for p, g in pairs:
            state = self._state_of(p, amsgrad)
            step = bump(state["step"])
            by_step[step].append((as_real(p), as_real(g), as_real(state["exp_avg"]),
                                  as_real(state["exp_avg_sq"]),
                                  as_real(state["max_exp_avg_sq"]) if amsgrad else None))
        for step, items in by_step.items():
            params, grads, exp_avgs, exp_avg_sqs, max_sqs = (list(x) for x in zip(*items))
            if fused:
                op = _fe._fused_adamw_ if group["decoupled_weight_decay"] else _fe._fused_adam_
                beta1, beta2 = group["betas"]
                op(params, grads, exp_avgs, exp_avg_sqs, max_sqs if amsgrad else [],
                   [step] * len(params), lr=host_lr(group), beta1=beta1, beta2=beta2,
                   weight_decay=group["weight_decay"], eps=group["eps"], amsgrad=amsgrad,
                   maximize=group["maximize"])
            else:
                self._foreach(group, step, params, grads, exp_avgs, exp_avg_sqs, max_sqs)

    @staticmethod
    def _foreach(group, step, params, grads, exp_avgs, exp_avg_sqs, max_sqs):
        lr, eps, wd = host_lr(group), group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            grads = _fe._foreach_mul(grads, -1)
        if wd != 0:
            if group["decoupled_weight_decay"]:
                _fe._foreach_mul_(params, 1 - lr * wd)
            else:
                grads = _fe._foreach_add(grads, params, alpha=wd)
        _fe._foreach_lerp_(exp_avgs, grads, 1 - beta1)
        _fe._foreach_mul_(exp_avg_sqs, beta2)
        _fe._foreach_addcmul_(exp_avg_sqs, grads, grads, 1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if group["amsgrad"]:
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
