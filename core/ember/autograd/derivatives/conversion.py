"""Derivatives of copies and conversions: the node casts and moves gradients back to each
input's dtype and device, so the formulas pass the gradient through."""
from __future__ import annotations

from . import derivative
from ._common import zeros_like


@derivative("_to_copy", complex_ok=True,
            name=lambda self, dtype: "CloneBackward0" if dtype is self.dtype else
            "ToCopyBackward0")
def _to_copy(ctx, g, self, dtype):
    return (g,)


@derivative("_to_device", complex_ok=True, name="ToCopyBackward0")
def _to_device(ctx, g, self, device, non_blocking):
    return (g,)


@derivative("copy_", complex_ok=True, name="CopyBackwards")
def _copy(ctx, g, self, src):
    # the old value of self is overwritten: no gradient reaches it
    return (zeros_like(g) if ctx.needs(0) else None, g if ctx.needs(1) else None)
