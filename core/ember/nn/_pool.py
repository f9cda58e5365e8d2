"""Pooling (max, average, adaptive; 1-3 spatial dims): argument checks with PyTorch's messages,
then one op (``ember.ops.nn.pool``: native kernels per backend, backward ops of their own).
1-D pooling runs the 2-D op on an input with a size-1 height, as PyTorch does. Power-average
pooling (``lp_pool``: an average pool of ``x ** p`` scaled back by the window size) and max
unpooling (each value scattered to where ``max_pool(..., return_indices=True)`` took it) are
compositions; the ``torch.*`` native forms (stride defaulting to ``()``) are registered too.
"""
from __future__ import annotations

import math

from .._tensor import Tensor
from ..ops._util import _dtype_title, every_example, torch_function
from ..ops.nn import pool as _pool_ops
from ..ops.nn._rules import pool_out_size
from ._conv import batched, check_tensor

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d"]

_WORDS = {1: "a single int", 2: "a tuple of two ints", 3: "a tuple of three ints"}


def _pool_tuple(op, name, value, nsp, default=None):
    """PyTorch's pooling argument rule: an int, or a tuple of 1 or ``nsp`` ints."""
    if value is None or (isinstance(value, (list, tuple)) and len(value) == 0 and default):
        return default
    vals = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(vals) == 1:
        vals = vals * nsp
    if len(vals) != nsp or not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        omitted = "be omitted, " if default is not None else ""
        raise RuntimeError(f"{op}: {name} must either {omitted}be a single int, or "
                           f"{_WORDS[nsp] if nsp > 1 else 'a tuple of one int'}")
    return tuple(vals)


def _fmt(shape) -> str:
    return "x".join(str(s) for s in shape)


def _window_args(op, x, nsp, kernel_size, stride, padding, dilation, ceil_mode):
    k = _pool_tuple(op, "kernel_size", kernel_size, nsp)
    s = _pool_tuple(op, "stride", stride, nsp, default=k)
    p = _pool_tuple(op, "padding", padding, nsp)
    d = _pool_tuple(op, "dilation", dilation, nsp)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got "
                           f"kernel_size={list(k)}")
    if any(v == 0 for v in s):
        raise RuntimeError(f"{op}: stride should not be zero")
    if any(v < 0 for v in s):
        raise RuntimeError(f"{op}: stride should be greater than zero, but got stride={list(s)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got "
                           f"dilation={list(d)}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"{op}: pad must be non-negative, but got pad={list(p)}")
    for pp, kk, dd in zip(p, k, d):
        if pp > (dd * (kk - 1) + 1) // 2:
            raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but "
                               f"got pad={pp}, kernel_size={kk} and dilation={dd}")
    sp = x._shape[2:]
    out = tuple(pool_out_size(L, kk, ss, pp, dd, ceil_mode)
                for L, kk, ss, pp, dd in zip(sp, k, s, p, d))
    if any(o < 1 for o in out):
        raise RuntimeError(f"{op}: Given input size: ({_fmt(x._shape[1:])}). Calculated output "
                           f"size: ({_fmt((x._shape[1],) + out)}). Output size is too small")
    return k, s, p, d, out


def _pool_input(op, input, nsp):
    check_tensor(op, "input", input)
    if input.ndim not in (nsp + 1, nsp + 2) or any(n == 0 for n in input._shape[-nsp - 1:]):
        raise RuntimeError(f"{op}: Expected {nsp + 1}D or {nsp + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got: {list(input._shape)}")
    return batched(op, input, nsp)


def _as_2d(x, nsp, *params):
    """1-D pooling as 2-D: a size-1 height, and (1, v) / (0, v) parameters."""
    if nsp != 1:
        return x, params
    lead = (1, 1, 0, 1)  # kernel, stride, padding, dilation
    return x.unsqueeze(2), tuple((lead[i],) + tuple(v) for i, v in enumerate(params))


def _from_2d(t, nsp):
    return t.squeeze(2) if nsp == 1 else t


def _max_pool(op, nsp, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, added = _pool_input(op, input, nsp)
    if x.dtype.name == "bool" or x.is_complex():
        raise RuntimeError(f"\"{op}\" not implemented for '{_dtype_title(x.dtype)}'")
    k, s, p, d, _ = _window_args(op, x, nsp, kernel_size, stride, padding, dilation, ceil_mode)
    x2, (k, s, p, d) = _as_2d(x, nsp, k, s, p, d)
    values, indices = _pool_ops.MAX_POOL[max(nsp, 2)](x2, list(k), list(s), list(p), list(d),
                                                       bool(ceil_mode))
    values, indices = _from_2d(values, nsp), _from_2d(indices, nsp)
    if added:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode,
                     True)


# -- average pooling ----------------------------------------------------------------------------
def _avg_pool(op, nsp, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    x, added = _pool_input(op, input, nsp)
    if x.dtype.name == "bool" or x.is_complex():
        raise RuntimeError(f"\"{op}\" not implemented for '{_dtype_title(x.dtype)}'")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    k, s, p, _, _ = _window_args(op, x, nsp, kernel_size, stride, padding, 1, ceil_mode)
    x2, (k, s, p) = _as_2d(x, nsp, k, s, p)
    r = _pool_ops.AVG_POOL[max(nsp, 2)](x2, list(k), list(s), list(p), bool(ceil_mode),
                                        bool(count_include_pad), divisor_override)
    r = _from_2d(r, nsp)
    return r.squeeze(0) if added else r


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


# -- adaptive pooling ---------------------------------------------------------------------------
def _adaptive_input(op, input, nsp, output_size):
    check_tensor(op, "input", input)
    if input.ndim not in (nsp + 1, nsp + 2):
        raise RuntimeError(f"{op}(): Expected {nsp + 1}D or {nsp + 2}D tensor, but got "
                           f"{list(input._shape)}")
    for i in range(input.ndim - nsp, input.ndim):
        if input._shape[i] == 0:
            raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {list(input._shape)} with "
                               f"dimension {i} being empty")
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size]
    if len(sizes) == 1:
        sizes = sizes * nsp
    if len(sizes) != nsp:
        raise RuntimeError(f"{op}: output_size must be {nsp}, but got output_size of length "
                           f"{len(sizes)}")
    sp = input._shape[-nsp:]
    sizes = tuple(L if o is None else o for o, L in zip(sizes, sp))
    if any(not isinstance(o, int) or o < 0 for o in sizes):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                           f"but received {list(sizes)}")
    x, added = batched(op, input, nsp)
    return x, added, sizes


def _adaptive_avg(op, nsp, input, output_size):
    x, added, out = _adaptive_input(op, input, nsp, output_size)
    if not x.is_floating_point():
        raise NotImplementedError(f"\"{op}\" not implemented for '{_dtype_title(x.dtype)}'")
    x2 = x.unsqueeze(2) if nsp == 1 else x
    r = _pool_ops.ADAPTIVE_AVG[max(nsp, 2)](x2, ([1] if nsp == 1 else []) + list(out))
    r = _from_2d(r, nsp)
    return r.squeeze(0) if added else r


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg("adaptive_avg_pool3d", 3, input, output_size)


def _adaptive_max(op, nsp, input, output_size, return_indices):
    x, added, out = _adaptive_input(op, input, nsp, output_size)
    if x.dtype.name == "bool" or x.is_complex():
        raise RuntimeError(f"\"{op}\" not implemented for '{_dtype_title(x.dtype)}'")
    x2 = x.unsqueeze(2) if nsp == 1 else x
    values, indices = _pool_ops.ADAPTIVE_MAX[max(nsp, 2)](
        x2, ([1] if nsp == 1 else []) + list(out))
    values, indices = _from_2d(values, nsp), _from_2d(indices, nsp)
    if added:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool3d", 3, input, output_size, True)


# -- power-average pooling and max unpooling, as PyTorch composes them --------------------------
def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n, avg, fn):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' must be Tensor, not {type(input).__name__}")
    kernel = _pool_tuple(fn, "kernel_size", kernel_size, n)
    if stride is not None:
        out = avg(input.pow(norm_type), kernel, stride, 0, ceil_mode)
    else:
        out = avg(input.pow(norm_type), kernel, padding=0, ceil_mode=ceil_mode)
    # sign * relu(|out|): PyTorch's guard against tiny negative averages of x ** p
    return (out.sign() * out.abs().relu()).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over the window of x ** p) ** (1 / p)`` over (N, C, L) or (C, L)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, avg_pool1d,
                    "lp_pool1d")


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over the window of x ** p) ** (1 / p)`` over (N, C, H, W) or (C, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, avg_pool2d,
                    "lp_pool2d")


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """``(sum over the window of x ** p) ** (1 / p)`` over (N, C, D, H, W) or (C, D, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, avg_pool3d,
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
    kernel = _pool_tuple(fn, "kernel_size", kernel_size, n)
    stride = _pool_tuple(fn, "stride", stride, n, default=kernel)
    padding = _pool_tuple(fn, "padding", padding, n)
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


# -- the torch.* native forms -------------------------------------------------------------------
def _native_stride(stride):
    # the native forms default stride to () — the kernel size
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else stride


@torch_function("adaptive_max_pool1d")
def _torch_adaptive_max_pool1d(input, output_size):
    """``torch.adaptive_max_pool1d`` returns (values, indices)."""
    return adaptive_max_pool1d(input, output_size, return_indices=True)


@torch_function("max_pool1d")
def _torch_max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool1d(input, kernel_size, _native_stride(stride), padding, dilation, ceil_mode)


@torch_function("max_pool1d_with_indices")
def _torch_max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                                   ceil_mode=False):
    return max_pool1d(input, kernel_size, _native_stride(stride), padding, dilation, ceil_mode,
                      return_indices=True)


@torch_function("max_pool2d")
def _torch_max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool2d(input, kernel_size, _native_stride(stride), padding, dilation, ceil_mode)


@torch_function("max_pool3d")
def _torch_max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return max_pool3d(input, kernel_size, _native_stride(stride), padding, dilation, ceil_mode)


# the same functions as nn.functional's, as in torch (F.avg_pool1d accepts stride=() too)
torch_function("adaptive_avg_pool1d")(adaptive_avg_pool1d)
torch_function("avg_pool1d")(avg_pool1d)
