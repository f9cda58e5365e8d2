"""Fractional max pooling (Graham, 2014): ``F.fractional_max_pool2d/3d`` (+ ``_with_indices``).

Each (batch, channel) plane draws one sample per spatial dimension in [0, 1); the windows of
that dimension start at PyTorch's pseudo-random interval sequence (ATen's
``generate_intervals``: ``int((i + u) * alpha) - int(u * alpha)`` with
``alpha = (in - k) / (out - 1)``, the last window flush with the end), computed in the input's
dtype as ATen does. The windows are gathered one spatial dimension at a time and reduced with
``max``, so the op runs natively on every backend and autograd routes the gradient to each
window's maximum (the first one on ties, as ATen's strict ``>``). Indices are flat positions in
the input plane, as ``max_unpool`` reads them. Samples are ATen's layout: for 2-D ``[..., 0]``
drives the width and ``[..., 1]`` the height; for 3-D ``[..., 0..2]`` time, height, width."""
from __future__ import annotations

import math

from .. import _dtype
from .._tensor import Tensor
from ._pool import _pool_tuple
from ..ops.factories import arange, full, tensor
from ..ops.random import rand
from ..ops.shape import cat

__all__ = ["fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]

_SAMPLE_OF_DIM = {2: (1, 0), 3: (0, 1, 2)}


def _intervals(u, in_size, out_size, k):
    """Window starts (int64, [..., out_size]) for per-plane samples ``u`` ([...])."""
    last = full(tuple(u.shape) + (1,), in_size - k, dtype=_dtype.int64, device=u.device)
    if out_size == 1:
        return last
    alpha = tensor(float(in_size - k), dtype=u.dtype, device=u.device) / (out_size - 1)
    i = arange(out_size - 1, dtype=u.dtype, device=u.device)
    s = u.unsqueeze(-1)
    seq = ((i + s) * alpha).trunc().to(_dtype.int64) - (s * alpha).trunc().to(_dtype.int64)
    return cat([seq, last], -1)


def _fractional(op, nsp, input, kernel_size, output_size, output_ratio, samples):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.ndim not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{op}(): expected {nsp + 1}D or {nsp + 2}D input, but got input of "
                           f"size: {list(input.shape)}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"{op}(): expected a floating point input, got {input.dtype}")
    k = _pool_tuple(op, "kernel_size", kernel_size, nsp)
    unbatched = input.ndim == nsp + 1
    x = input.unsqueeze(0) if unbatched else input
    spatial = tuple(x.shape[2:])
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{op} requires specifying either an output_size or an "
                             f"output_ratio")
        ratio = tuple(output_ratio) if isinstance(output_ratio, (list, tuple)) else \
            (output_ratio,) * nsp
        if len(ratio) != nsp:
            raise RuntimeError(f"{op}: output_ratio must be a number or a tuple of {nsp}")
        out = tuple(int(n * r) for n, r in zip(spatial, ratio))
    else:
        out = _pool_tuple(op, "output_size", output_size, nsp)
    for name, n, o, kk in zip(("time", "height", "width")[-nsp:], spatial, out, k):
        if o + kk - 1 > n:
            raise RuntimeError(f"{op}(): pool {name} {kk} too large relative to input {name} "
                               f"{n} for output {name} {o}")
    batch, channels = x.shape[0], x.shape[1]
    if samples is None:
        samples = rand(batch, channels, nsp, dtype=x.dtype, device=x.device)
    else:
        # PyTorch's rule: at least one row of samples per batch element (the first are used)
        if samples.ndim != 3 or samples.shape[0] < batch or samples.shape[1] != channels or \
                samples.shape[2] != nsp:
            raise RuntimeError(f"{op}(): expect _random_samples of shape [N', {channels}, {nsp}]"
                               f" with N' no less than the input batch size {batch}, got "
                               f"{list(samples.shape)}")
        samples = samples[:batch]
    starts = [_intervals(samples[..., _SAMPLE_OF_DIM[nsp][d]].to(x.dtype), spatial[d], out[d],
                         k[d]) for d in range(nsp)]
    windows = x
    for d in range(nsp):
        # rows of dimension d: every window's k[d] positions, gathered along that dimension
        pos = (starts[d].unsqueeze(-1) + arange(k[d], device=x.device)).reshape(
            batch, channels, out[d] * k[d])
        shape = [batch, channels] + [1] * nsp
        shape[2 + d] = out[d] * k[d]
        index = pos.reshape(shape).expand(*windows.shape[:2 + d], out[d] * k[d],
                                           *windows.shape[3 + d:])
        windows = windows.gather(2 + d, index)
    split = [batch, channels] + [v for d in range(nsp) for v in (out[d], k[d])]
    order = [0, 1] + [2 + 2 * d for d in range(nsp)] + [3 + 2 * d for d in range(nsp)]
    flat = windows.reshape(split).permute(order).reshape(batch, channels, *out, math.prod(k))
    values, best = flat.max(-1)
    # flat input positions of the maxima: each dimension's start plus its offset in the window
    index = None
    rest = best
    plane_strides = [math.prod(spatial[d + 1:]) for d in range(nsp)]
    for d in reversed(range(nsp)):
        j = rest % k[d]
        rest = rest.div(k[d], rounding_mode="floor")
        view = [batch, channels] + [1] * nsp
        view[2 + d] = out[d]
        coord = starts[d].reshape(view) + j
        index = coord * plane_strides[d] if index is None else index + coord * plane_strides[d]
    if unbatched:
        values, index = values.squeeze(0), index.squeeze(0)
    return values, index


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size,
                       output_ratio, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size,
                       output_ratio, _random_samples)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling over (N, C, H, W) or (C, H, W)."""
    out = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling over (N, C, T, H, W) or (C, T, H, W)."""
    out = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                             return_indices, _random_samples)
    return out if return_indices else out[0]
