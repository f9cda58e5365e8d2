"""The activation modules over ``nn/_activations_more.py``: the shrinks and ``Softmax2d``."""
from __future__ import annotations

from .. import _activations_more as A
from .module import Module

__all__ = ["Hardshrink", "Softshrink", "Softmax2d"]


class Hardshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return A.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Module):
    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return A.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Softmax2d(Module):
    """Softmax over the channels of every spatial location."""

    def forward(self, input):
        return A._softmax2d(input)
