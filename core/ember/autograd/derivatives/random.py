"""Derivatives of random ops (``ops/random.py``). Samples are not reparameterized (PyTorch's
choice): gradients through them are zero; in-place fills overwrite their target."""
from __future__ import annotations

from . import derivative, nondifferentiable
from ._common import zeros_like

nondifferentiable("multinomial", "randint", "randperm")


@derivative("normal")
def _normal(ctx, g, mean, std, size, generator, dtype, device):
    return (zeros_like(g) if ctx.needs(0) else None, zeros_like(g) if ctx.needs(1) else None)


def _overwrite(ctx, g, self, *rest):
    return (zeros_like(g),)


for _name in ("uniform_", "normal_", "random_", "exponential_", "bernoulli_", "fill_"):
    derivative(_name, diff=("self",),
               name=f"{''.join(p.title() for p in _name.strip('_').split('_'))}Backward0"
               )(_overwrite)
