"""Fold and Unfold: sliding local blocks (``F.fold`` / ``F.unfold``)."""
from __future__ import annotations

from .. import functional as F
from ._functional_module import _FunctionalModule

__all__ = ["Fold", "Unfold"]


class Fold(_FunctionalModule):
    """Combine an array of sliding local blocks (N, C*prod(kernel_size), L) into a
    (N, C, *output_size) tensor, summing overlapping values."""
    _fn = staticmethod(F.fold)
    _options = ("output_size", "kernel_size", "dilation", "padding", "stride")

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(output_size=output_size, kernel_size=kernel_size, dilation=dilation,
                         padding=padding, stride=stride)


class Unfold(_FunctionalModule):
    """Extract sliding local blocks from a batched input (N, C, H, W) -> (N, C*kh*kw, L)."""
    _fn = staticmethod(F.unfold)
    _options = ("kernel_size", "dilation", "padding", "stride")

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size=kernel_size, dilation=dilation, padding=padding,
                         stride=stride)
