"""``pad`` of ``ember.nn.functional`` (negative pads crop): the padding ops of
``ops/padding.py`` (constant, reflect, replicate, each its own node as in PyTorch) and circular
padding as an ``index_select`` of source positions (PyTorch's is a composite too);
``torch.constant_pad_nd``."""
from __future__ import annotations

from ..ops._util import require_tensor, torch_function
from ..ops.padding import (constant_pad_nd_op, crop, pad_index, reflection_pad_op,
                           replication_pad_op)

__all__ = ["pad"]


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad)//2`` dims: ``pad = (left_last, right_last, left_prev, ...)``.
    Modes: constant, reflect, replicate, circular; negative pads crop."""
    require_tensor(input, "pad")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(f"pad: Padding length must be divisible by 2, got {len(pad)}")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.ndim}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    for k in range(len(pad) // 2):
        left, right = pad[2 * k], pad[2 * k + 1]
        dim = input.ndim - 1 - k
        n = input._shape[dim]
        if n + left + right < 0 or (mode != "constant" and min(left, 0) + min(right, 0) + n < 0):
            raise RuntimeError(f"pad: the input size {n} at dimension {dim}, plus negative "
                               f"padding {left} and {right}, resulted in a negative output size")
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({left}, {right}) at "
                               f"dimension {dim} of input {list(input.shape)}")
        if mode == "circular" and (left > n or right > n):
            raise RuntimeError(f"Padding value causes wrapping around more than once (padding "
                               f"({left}, {right}) for size {n} at dimension {dim}).")
    if mode == "constant":
        return constant_pad_nd_op(input, pad, 0 if value is None else value)
    if mode == "reflect":
        return reflection_pad_op(input, pad)
    if mode == "replicate":
        return replication_pad_op(input, pad)
    # circular: a negative pad crops first (PyTorch then wraps around what is left)
    out = input
    for k in range(len(pad) // 2):
        dim = input.ndim - 1 - k
        out, left, right = crop(out, dim, pad[2 * k], pad[2 * k + 1])
        if left or right:
            out = out.index_select(dim, pad_index(out._shape[dim], left, right, mode,
                                                  out.device))
    return out


_pad = pad  # for the forms whose own ``pad`` argument shadows the function


@torch_function("constant_pad_nd")
def constant_pad_nd(input, pad, value=0):
    return _pad(input, pad, "constant", value)
