"""Shape rules the convolution, pooling and normalisation ops share: output sizes, argument
checks of the ops themselves (the ``nn.functional`` API checks user input first, with PyTorch's
messages; these catch direct calls with errors naming the op)."""
from __future__ import annotations

import math

from ..._tensor import Tensor


def tensor(op, x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: argument '{name}' must be a Tensor, got {type(x).__name__}")
    return x


def spatial(op, x, nsp, name="input"):
    """Check ``x`` is (N, C, *spatial) with ``nsp`` spatial dims; returns its spatial sizes."""
    tensor(op, x, name)
    if x.ndim != nsp + 2:
        raise RuntimeError(f"{op}: expected {name} of {nsp + 2} dims (N, C, {nsp} spatial), got "
                           f"shape {list(x._shape)}")
    return tuple(x._shape[2:])


def ints(op, name, values, n):
    values = tuple(values)
    if len(values) != n or not all(isinstance(v, int) for v in values):
        raise RuntimeError(f"{op}: expected {name} to be {n} ints, got {list(values)}")
    return values


def conv_out_size(size, k, s, p, d):
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def conv_transpose_out_size(size, k, s, p, d, op_):
    return (size - 1) * s - 2 * p + d * (k - 1) + 1 + op_


def pool_out_size(length, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape: windows may start in the left padding, never past it on
    the right, and with ceil_mode one partial window at the end is kept."""
    num = length + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= length + p:
        out -= 1
    return out


def adaptive_bounds(length, out, i):
    """[start, end) of window ``i`` of ``out`` over ``length`` (PyTorch's floor/ceil rule)."""
    return (i * length) // out, -((-(i + 1) * length) // out)


def numel(shape):
    return math.prod(shape)
