"""Activations of ``ember.nn.functional`` beyond ``functional.py``: the shrinks and
gumbel-softmax, and the channel softmax behind ``nn.Softmax2d``; compositions of ember ops."""
from __future__ import annotations

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops import elementwise as _ew

__all__ = ["hardshrink", "softshrink", "gumbel_softmax"]


def _tensor(x, fn):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0."""
    _tensor(input, "hardshrink")
    return _ew.where(input.abs() > lambd, input, 0.0)


def softshrink(input, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0."""
    _tensor(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _ew.where(input > lambd, input - lambd, _ew.where(input < -lambd, input + lambd, 0.0))


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-softmax distribution; ``hard`` returns one-hot vectors whose
    gradient is the soft sample's (straight-through)."""
    _tensor(logits, "gumbel_softmax")
    with no_grad():
        gumbels = -logits.new_empty(logits.shape).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = y_soft.new_zeros(y_soft.shape).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def _softmax2d(input):
    """Softmax over the channel dim of (N, C, H, W) or (C, H, W)."""
    if input.ndim not in (3, 4):
        raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
    return input.softmax(-3)
