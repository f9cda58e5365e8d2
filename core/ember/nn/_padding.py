"""``pad`` of ``ember.nn.functional`` (negative pads crop): constant padding as a ``cat`` with
filled blocks; reflect, replicate and circular padding as an ``index_select`` of source
positions (so autograd and every backend see ordinary ops); ``torch.constant_pad_nd``."""
from __future__ import annotations

import numpy as np

from ..ops._util import require_tensor, torch_function
from ..ops.factories import from_numpy
from ..ops.shape import cat

__all__ = ["pad"]


def _pad_index(n, left, right, mode, device):
    """Source index of each padded position along a dim of size ``n``."""
    pos = np.arange(-left, n + right)
    if mode == "reflect":
        period = 2 * (n - 1)
        pos = np.abs(pos) % period if period else np.zeros_like(pos)
        pos = np.where(pos >= n, period - pos, pos)
    elif mode == "replicate":
        pos = np.clip(pos, 0, n - 1)
    else:  # circular
        pos = pos % n
    return from_numpy(pos.astype(np.int64)).to(device)


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
    out = input
    for k in range(len(pad) // 2):
        left, right = pad[2 * k], pad[2 * k + 1]
        dim = input.ndim - 1 - k
        n = out._shape[dim]
        # a negative pad crops. PyTorch's circular mode then wraps around what is left;
        # reflect and replicate read the positions -left .. n+right of the uncropped input
        if mode in ("constant", "circular"):
            if left < 0:
                out, n, left = out.narrow(dim, -left, n + left), n + left, 0
            if right < 0:
                out, n, right = out.narrow(dim, 0, n + right), n + right, 0
        if mode == "constant":
            if left or right:
                parts = []
                fill = 0 if value is None else value
                for m in (left, None, right):
                    if m is None:
                        parts.append(out)
                    elif m:
                        shape = list(out._shape)
                        shape[dim] = m
                        parts.append(out.new_full(shape, fill))
                out = cat(parts, dim)
            continue
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({left}, {right}) at "
                               f"dimension {dim} of input {list(input.shape)}")
        if mode == "circular" and (left > n or right > n):
            raise RuntimeError(f"Padding value causes wrapping around more than once (padding "
                               f"({left}, {right}) for size {n} at dimension {dim}).")
        if left or right:
            out = out.index_select(dim, _pad_index(n, left, right, mode, out.device))
    return out


_pad = pad  # for the forms whose own ``pad`` argument shadows the function


@torch_function("constant_pad_nd")
def constant_pad_nd(input, pad, value=0):
    return _pad(input, pad, "constant", value)
