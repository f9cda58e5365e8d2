"""``ember.memory_format``: how a new tensor lays out its elements (PyTorch's names).

``preserve_format`` (the default of ``clone`` and the ``*_like`` factories) keeps the source's
layout when it is non-overlapping and dense (a permuted contiguous tensor stays permuted) and
is row-major otherwise; ``contiguous_format`` is row-major; ``channels_last`` (NHWC) and
``channels_last_3d`` (NDHWC) order a 4-d / 5-d tensor's channels innermost.
"""
from __future__ import annotations

from ._layout import NamedConstant


class memory_format(NamedConstant):
    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")


def dense_order(shape, stride):
    """The dims of a non-overlapping, dense layout from outermost to innermost (its strides
    are those of a contiguous tensor of the permuted shape), or None when the layout has gaps
    or overlaps. Size-1 dims take their row-major place."""
    dims = sorted(range(len(shape)), key=lambda d: (-stride[d] if shape[d] != 1 else 0, d))
    big = [d for d in dims if shape[d] != 1]
    expected = 1
    for d in reversed(big):
        if stride[d] != expected:
            return None
        expected *= shape[d]
    # size-1 dims go where row-major order puts them, relative to the dims around them
    order = big[:]
    for d in sorted(d for d in range(len(shape)) if shape[d] == 1):
        order.insert(sum(1 for b in order if b < d), d)
    return order


def channels_last_order(ndim: int, fmt) -> list:
    if fmt is channels_last and ndim == 4:
        return [0, 2, 3, 1]
    if fmt is channels_last_3d and ndim == 5:
        return [0, 2, 3, 4, 1]
    raise RuntimeError(f"required rank {4 if fmt is channels_last else 5} tensor to use "
                       f"{fmt.name} format")
