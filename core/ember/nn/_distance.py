"""Distance functions of ``ember.nn.functional`` (composites; ``cdist``/``pdist`` are ops in
``ember/ops/distances.py``)."""
from __future__ import annotations

from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from ..ops._util import torch_function
from ..ops.distances import pdist
from ..ops.views import broadcast_tensors

__all__ = ["pairwise_distance", "cosine_similarity", "pdist"]


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """``||x1 - x2 + eps||_p`` over the last dim (broadcast)."""
    for name, t in (("x1", x1), ("x2", x2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"pairwise_distance(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    out_dim = max(x1.ndim, x2.ndim)
    dim = -1 if out_dim else 0
    return (x1 - x2 + eps).norm(p, dim=dim, keepdim=keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``(x1 / max(|x1|, eps)) . (x2 / max(|x2|, eps))`` along ``dim`` (PyTorch's formula: the
    norms are clamped without changing their gradients)."""
    for name, t in (("x1", x1), ("x2", x2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"cosine_similarity(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if not x1.is_floating_point():
        x1 = x1.float()
    if not x2.is_floating_point():
        x2 = x2.float()
    x1, x2 = broadcast_tensors(x1, x2)
    n1 = x1.norm(2, dim=dim, keepdim=True)
    n2 = x2.norm(2, dim=dim, keepdim=True)
    with no_grad():
        c1 = n1.clamp_min(eps) - n1
        c2 = n2.clamp_min(eps) - n2
    return ((x1 / (n1 + c1)) * (x2 / (n2 + c2))).sum(dim)


# torch.cosine_similarity and torch.pairwise_distance are these functions, as in torch
torch_function("cosine_similarity")(cosine_similarity)
torch_function("pairwise_distance")(pairwise_distance)
