"""``SparseAdam``: PyTorch's lazy Adam for sparse gradients (only the moments of the rows a
sparse gradient touches are updated).

ember's parameters always get dense gradients (its sparse COO tensors are not produced by
any backward: ``nn.Embedding`` and ``F.embedding`` with ``sparse=True`` give dense ones), so
there is no sparse gradient to consume. The optimizer is constructed
with PyTorch's argument checks (so scripts that build it fail where they step), and ``step``
raises PyTorch's error for a dense gradient, saying what ember lacks and what to use instead.
"""
from __future__ import annotations

from .optimizer import Optimizer, check_betas, check_hparams

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        check_hparams("SparseAdam", lr)
        if not 0.0 < lr:
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
        """Raise for any parameter that has a gradient: every ember gradient is dense."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    raise RuntimeError(
                        f"SparseAdam does not support dense gradients, please consider Adam "
                        f"instead (every ember parameter gradient is dense, including those of "
                        f"nn.Embedding(sparse=True); got a dense gradient of "
                        f"shape {list(p.grad.shape)} for a parameter of shape "
                        f"{list(p.shape)})")
        return loss
