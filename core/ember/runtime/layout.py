"""Shape and stride arithmetic every backend needs (strides and offsets are in elements)."""
from __future__ import annotations

from functools import lru_cache


def contiguous_strides(shape) -> tuple:
    """The strides of a C-contiguous tensor of ``shape``: ``(2, 3, 4) -> (12, 4, 1)``. A
    dimension of size 0 counts as 1, as in PyTorch."""
    stride = []
    acc = 1
    for s in reversed(shape):
        stride.append(acc)
        acc *= max(s, 1)
    return tuple(reversed(stride))


@lru_cache(maxsize=4096)
def broadcast_pair(a: tuple, b: tuple) -> tuple:
    """The broadcast shape of two shape tuples (cached: a program meets few distinct pairs)."""
    na, nb = len(a), len(b)
    n = max(na, nb)
    out = []
    for i in range(n):
        x = a[i - n + na] if i - n + na >= 0 else 1
        y = b[i - n + nb] if i - n + nb >= 0 else 1
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                               f"at non-singleton dimension {i}")
    return tuple(out)


def broadcast_shapes(*shapes) -> tuple:
    """The shape the given shapes broadcast to (PyTorch's rules); RuntimeError with PyTorch's
    message when they don't."""
    out = ()
    for s in shapes:
        if s.__class__ is not tuple:
            s = tuple(s)
        if not out:
            out = s
        elif out != s:
            out = broadcast_pair(out, s)
    return out
