"""Derivatives of the copying shape ops (``ops/shape.py``)."""
from __future__ import annotations

from ...ops.views import slice_op, view_op
from . import derivative


def _shapes(tensors, dim, dtype):
    return [t._shape for t in tensors]


@derivative("cat", complex_ok=True, setup=_shapes)
def _cat(ctx, g, tensors, dim, dtype):
    grads = []
    start = 0
    for meta, shape in zip(ctx.metas_of(0), ctx.info):
        if len(shape) != g.ndim:  # a skipped 1-D empty tensor (PyTorch's legacy cat rule)
            grads.append(None)
            continue
        n = shape[dim]
        grads.append(slice_op(g, dim, start, start + n, 1) if meta is not None else None)
        start += n
    return (grads,)


@derivative("flip", complex_ok=True)
def _flip(ctx, g, self, dims):
    from ...ops.shape import flip_op
    return (flip_op(g, tuple(dims)),)


@derivative("roll", complex_ok=True)
def _roll(ctx, g, self, shifts, dims):
    from ...ops.shape import roll_op
    return (roll_op(g, tuple(-s for s in shifts), tuple(dims)),)


@derivative("tile", complex_ok=True, name="RepeatBackward0")
def _tile(ctx, g, self, reps):
    shape = ctx.meta(0)[0]
    padded = (1,) * (len(reps) - len(shape)) + tuple(shape)
    # out dim i = reps[i] copies of padded[i]: split each into (reps, size) and sum the copies
    split = []
    for r, s in zip(reps, padded):
        split += [r, s]
    if 0 in split:
        from ._common import zeros
        return (zeros(shape, g),)
    from ...ops.reduction import sum_op
    r = sum_op(g.reshape(split), tuple(range(0, 2 * len(reps), 2)), False, g.dtype)
    return (view_op(r, tuple(shape)) if r._shape != tuple(shape) else r,)


@derivative("tril", complex_ok=True)
def _tril(ctx, g, self, diagonal):
    from ...ops.shape import tril_op
    return (tril_op(g, diagonal),)


@derivative("triu", complex_ok=True)
def _triu(ctx, g, self, diagonal):
    from ...ops.shape import triu_op
    return (triu_op(g, diagonal),)
