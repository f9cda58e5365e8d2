"""``Adafactor`` (Shazeer & Stern, 2018): Adam's second moment kept as row and column factors for
matrices (and a plain variance for vectors), with relative step sizes and update clipping —
torch's ``torch.optim.Adafactor`` update, step by step."""
from __future__ import annotations

import math

from .. import _type_info
from .optimizer import Optimizer, bump, grads_of, neg_if, step_counter

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    _group_defaults = {"foreach": None}

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def _state(self, p, grad):
        state = self.state[p]
        if len(state) == 0:
            state["step"] = step_counter()
            if grad.ndim > 1:
                state["row_var"] = grad.new_zeros(grad.shape[:-1] + (1,))
                state["col_var"] = grad.new_zeros(grad.shape[:-2] + (1, grad.shape[-1]))
            else:
                state["variance"] = grad.new_zeros(grad.shape)
        return state

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            eps1, eps2 = group["eps"]
            for p, grad in grads_of(group, "Adafactor"):
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                state = self._state(p, grad)
                grad = neg_if(grad, group["maximize"])
                e1 = _type_info.finfo(p.dtype).eps if eps1 is None else eps1
                step = bump(state["step"])
                one_minus_beta2 = step ** group["beta2_decay"]
                rho = min(lr, 1 / math.sqrt(step))
                alpha = max(eps2, p.norm(2).item() / math.sqrt(p.numel())) * rho
                if group["weight_decay"] != 0:
                    p.mul_(1 - lr * group["weight_decay"])
                if grad.ndim > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_mean = grad.norm(dim=-1, keepdim=True).square_().div_(grad.shape[-1])
                    row_var.lerp_(row_mean, one_minus_beta2)
                    col_mean = grad.norm(dim=-2, keepdim=True).square_().div_(grad.shape[-2])
                    col_var.lerp_(col_mean, one_minus_beta2)
                    estimate = row_var @ col_var
                    estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=e1))
                else:
                    variance = state["variance"]
                    variance.lerp_(grad * grad, one_minus_beta2)
                    estimate = variance.clone()
                update = estimate.clamp_(min=e1 * e1).rsqrt_().mul_(grad)
                denom = max(1.0, update.norm(2).item() / (math.sqrt(update.numel()) * group["d"]))
                p.add_(update, alpha=-alpha / denom)
        return loss
