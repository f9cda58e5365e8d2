"""Power-average pooling and max unpooling (issue #25), as PyTorch composes them: ``lp_pool``
is an average pool of ``x ** p`` scaled back by the window size, ``max_unpool`` scatters each
value to the position ``max_pool(..., return_indices=True)`` took it from."""
from __future__ import annotations

import math

from .._tensor import Tensor
from ..ops._util import every_example
from . import _pool as P

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d",
           "max_unpool3d"]


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n, avg, fn):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' must be Tensor, not {type(input).__name__}")
    kernel = P._pool_tuple(fn, "kernel_size", kernel_size, n)
    if stride is not None:
        out = avg(input.pow(norm_type), kernel, stride, 0, ceil_mode)
    else:
        out = avg(input.pow(norm_type), kernel, padding=0, ceil_mode=ceil_mode)
    # sign * relu(|out|): PyTorch's guard against tiny negative averages of x ** p
    return (out.sign() * out.abs().relu()).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over the window of x ** p) ** (1 / p)`` over (N, C, L) or (C, L)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, P.avg_pool1d,
                    "lp_pool1d")


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over the window of x ** p) ** (1 / p)`` over (N, C, H, W) or (C, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, P.avg_pool2d,
                    "lp_pool2d")


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over the window of x ** p) ** (1 / p)`` over (N, C, D, H, W) or (C, D, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, P.avg_pool3d,
                    "lp_pool3d")


def _unpool_size(input, kernel, stride, padding, output_size, n, fn):
    spatial = tuple(input.shape[-n:])
    default = tuple((spatial[i] - 1) * stride[i] - 2 * padding[i] + kernel[i] for i in range(n))
    if output_size is None:
        return default
    size = tuple(int(s) for s in output_size)
    if len(size) == input.ndim:
        size = size[-n:]
    if len(size) != n:
        raise ValueError(f"{fn}: output_size must have {n} or {input.ndim} elements, got "
                         f"{list(output_size)}")
    for i in range(n):
        low, high = default[i] - stride[i], default[i] + stride[i]
        if not low < size[i] < high:
            raise ValueError(f"{fn}: invalid output_size {list(output_size)} (dim {i} must be "
                             f"between {low + 1} and {high - 1})")
    return size


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n, fn):
    for name, t in (("input", input), ("indices", indices)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(t).__name__}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{fn}: expected indices of the input's shape {list(input.shape)}, "
                           f"got {list(indices.shape)}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{fn}: expected a {n + 1}-D or {n + 2}-D input, got "
                           f"{input.ndim}-D")
    kernel = P._pool_tuple(fn, "kernel_size", kernel_size, n)
    stride = P._pool_tuple(fn, "stride", stride, n, default=kernel)
    padding = P._pool_tuple(fn, "padding", padding, n)
    size = _unpool_size(input, kernel, stride, padding, output_size, n, fn)
    lead = tuple(input.shape[:-n])
    plane = math.prod(size)
    values = input.reshape(lead + (-1,))
    where = indices.reshape(lead + (-1,))
    if where.numel():
        every = every_example(where)   # under vmap: the check holds for the whole batch
        low, high = int(every.min().item()), int(every.max().item())
        if low < 0 or high >= plane:
            bad = high if high >= plane else low
            raise RuntimeError(f"{fn}: Found an invalid max index: {bad} (output volumes are "
                               f"of size {'x'.join(str(v) for v in size)})")
    out = values.new_zeros(lead + (plane,)).scatter(-1, where, values)
    return out.reshape(lead + size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool1d``: each value back at its index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool2d``: each value back at its index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of ``max_pool3d``: each value back at its index, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3,
                       "max_unpool3d")
