"""``SparseAdam``: PyTorch's lazy Adam for sparse gradients (only the moments of the rows a
sparse gradient touches are updated).

Like PyTorch's, ``step`` takes sparse COO gradients only and refuses a dense one. ember's
backward gives dense gradients everywhere (``nn.Embedding`` and ``F.embedding`` with
``sparse=True`` included), so the sparse gradient is one the caller sets (``p.grad =
ember.sparse_coo_tensor(...)``); the refusal of a dense gradient says so.
"""
from __future__ import annotations

import math

from .optimizer import Optimizer, bump, check_betas, check_hparams, host_lr, step_counter, \
    zeros_state

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        check_hparams("SparseAdam", lr, tensor_lr=True)
        if not 0.0 < (float(lr.item()) if hasattr(lr, "item") else lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        betas = check_betas(betas)
        defaults = dict(lr=lr, betas=betas, eps=eps, maximize=maximize)
        super().__init__(params, defaults)
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not "
                             f"support complex parameters")

    def step(self, closure=None):
        """One lazy Adam step per parameter with a (sparse COO) gradient: PyTorch's update of
        the moments and the parameter at the gradient's coalesced indices only."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps = host_lr(group), group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if not grad.is_sparse:
                    raise RuntimeError(
                        f"SparseAdam does not support dense gradients, please consider Adam "
                        f"instead (ember's backward gives dense gradients, nn.Embedding("
                        f"sparse=True)'s included: set a sparse COO p.grad to use SparseAdam; "
                        f"got a dense gradient of shape {list(grad.shape)} for a parameter of "
                        f"shape {list(p.shape)})")
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = step_counter()
                    state["exp_avg"] = zeros_state(p)
                    state["exp_avg_sq"] = zeros_state(p)
                _sparse_adam(p, grad, state, beta1, beta2, lr, eps, group["maximize"])
        return loss


def _sparse_adam(param, grad, state, beta1, beta2, lr, eps, maximize):
    grad = grad.coalesce()
    if maximize:
        grad = -grad
    step = bump(state["step"])
    values = grad.values()
    if values.numel() == 0:
        return
    at = tuple(grad.indices().to(param.device))            # one index tensor per sparse dim
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    values = values.to(param.device)
    # old <- b * old + (1 - b) * new, written old += (1 - b) * (new - old) as PyTorch does
    old_avg, old_sq = exp_avg[at], exp_avg_sq[at]
    numer = (values - old_avg) * (1 - beta1) + old_avg
    second = (values.pow(2) - old_sq) * (1 - beta2) + old_sq
    exp_avg[at] = numer
    exp_avg_sq[at] = second
    denom = second.sqrt() + eps
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    param[at] = param[at] + (-step_size) * (numer / denom)       # step runs under no_grad

