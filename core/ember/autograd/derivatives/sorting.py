"""Derivatives of sorting (``ops/sorting.py``): values carry the gradient back to where they
came from; indices are not differentiable. topk is a sort, a narrow and a copy."""
from __future__ import annotations

from . import derivative
from .indexing import scatter_into_zeros
from .reduction import _selected


@derivative("sort", save=("result",), outputs=(True, False), complex_ok=True)
def _sort(ctx, g, self, dim, descending, stable):
    shape = ctx.meta(0)[0]
    if not shape:
        return (g[0],)
    return (scatter_into_zeros(g[0], shape, dim, ctx.result[1]),)


# unique has no derivative (as in PyTorch): its outputs get a node that raises in backward
derivative("mode", save=("result",), outputs=(True, False))(_selected)
