"""Convolutions (1-3 spatial dims, transposed too) and im2col / col2im (``F.unfold`` /
``F.fold``).

conv*d / conv_transpose*d check their arguments with PyTorch's messages, add the batch dim of
an unbatched input, pad asymmetric 'same' padding's extra high-side zeros, and call the
``convolution`` op (``ember.ops.nn.conv``: native kernels per backend, ``ConvolutionBackward0``
whose backward op is differentiable again). ``unfold``/``fold`` are written in ember ops: the
sliding windows as a strided view (``Tensor.unfold`` per spatial dim) and col2im through one
``index_add``.

Pooling lives in ``_pool.py`` and is re-exported here so ``from ._conv import *`` gets it all.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from .._tensor import Tensor
from ..ops import nn as _nn_ops
from ..ops._util import _dtype_title, torch_function
from ..ops.factories import tensor, zeros

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold"]


# -- argument helpers (shared with _pool.py) ----------------------------------------------------
def ntuple(value, n, name, op):
    """An int or a sequence of ``n`` ints (or one) -> tuple of ``n`` ints."""
    if isinstance(value, (list, tuple)):
        vals = list(value)
        if len(vals) == 1:
            vals = vals * n
    else:
        vals = [value] * n
    if len(vals) != n or not all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of {n} "
                           f"values to match the convolution dimensions, but got {name}="
                           f"{list(value) if isinstance(value, (list, tuple)) else value}")
    return tuple(vals)


def check_tensor(op, name, t):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")


def batched(op, x, nsp, what="input"):
    """(input with a batch dim, whether it was added) for an input of ``nsp`` spatial dims."""
    if x.ndim == nsp + 1:
        return x.unsqueeze(0), True
    if x.ndim == nsp + 2:
        return x, False
    raise RuntimeError(f"Expected {nsp + 1}D (unbatched) or {nsp + 2}D (batched) {what} to {op}, "
                       f"but got input of size: {list(x._shape)}")


def fmt_sizes(sizes) -> str:
    return " x ".join(str(s) for s in sizes)


def pad(x: Tensor, pads, value=0) -> Tensor:
    """Pad (positive) or crop (negative) the trailing ``len(pads)`` dims by ``(lo, hi)`` each."""
    nsp = len(pads)
    base = x.ndim - nsp
    for i, (lo, hi) in enumerate(pads):
        if lo < 0 or hi < 0:
            start = max(-lo, 0)
            x = x.narrow(base + i, start, x._shape[base + i] - start - max(-hi, 0))
    if not any(lo > 0 or hi > 0 for lo, hi in pads):
        return x
    shape = list(x._shape)
    index = [slice(None)] * base
    for i, (lo, hi) in enumerate(pads):
        lo, hi = max(lo, 0), max(hi, 0)
        shape[base + i] += lo + hi
        index.append(slice(lo, lo + x._shape[base + i]))
    # one copy into a filled buffer; autograd records it as CopySlices, whose backward is a view
    out = x.new_full(tuple(shape), value)   # batched under vmap, like x
    out[tuple(index)] = x
    return out


def windows(x: Tensor, kernel, stride, dilation, counts=None) -> Tensor:
    """Sliding windows of the trailing spatial dims as a view: (..., *counts, *kernel)."""
    nsp = len(kernel)
    base = x.ndim - nsp
    for i in range(nsp):
        x = x.unfold(base + i, dilation[i] * (kernel[i] - 1) + 1, stride[i])
        if counts is not None and x._shape[base + i] != counts[i]:
            x = x.narrow(base + i, 0, counts[i])
    if any(d > 1 for d in dilation):
        x = x[(Ellipsis,) + tuple(slice(None, None, d) for d in dilation)]
    return x


@lru_cache(maxsize=256)
def _col2im_index(full_size, kernel, stride, dilation, blocks) -> np.ndarray:
    """Flat position in ``full_size`` of every (kernel offset, block) pair, in (*K, *B) order."""
    nsp = len(kernel)
    idx = np.zeros((1,) * (2 * nsp), dtype=np.int64)
    step = 1
    for i in reversed(range(nsp)):
        shape_k = [1] * (2 * nsp)
        shape_k[i] = kernel[i]
        shape_b = [1] * (2 * nsp)
        shape_b[nsp + i] = blocks[i]
        pos = (np.arange(kernel[i]) * dilation[i]).reshape(shape_k) + \
            (np.arange(blocks[i]) * stride[i]).reshape(shape_b)
        idx = idx + pos * step
        step *= full_size[i]
    return np.ascontiguousarray(np.broadcast_to(idx, tuple(kernel) + tuple(blocks))).reshape(-1)


def col2im(cols: Tensor, full_size, kernel, stride, dilation) -> Tensor:
    """(N, C, *kernel, *blocks) -> (N, C, *full_size), overlapping contributions summed."""
    n, c = cols._shape[:2]
    nsp = len(kernel)
    blocks = cols._shape[2 + nsp:]
    idx = tensor(_col2im_index(tuple(full_size), tuple(kernel), tuple(stride), tuple(dilation),
                               tuple(blocks)), device=cols.device)
    out = zeros((n, c, math.prod(full_size)), dtype=cols.dtype, device=cols.device)
    out = out.index_add(2, idx, cols.reshape(n, c, -1))
    return out.reshape((n, c) + tuple(full_size))


# -- convolution --------------------------------------------------------------------------------
def _same_dtype(op, x, w, b):
    for name, t in (("weight", w), ("bias", b)):
        if t is not None and t.dtype is not x.dtype:
            raise RuntimeError(f"{op}: expected scalar type {_dtype_title(x.dtype)} but found "
                               f"{_dtype_title(t.dtype)} (input is {x.dtype}, {name} is "
                               f"{t.dtype})")


def _common_checks(op, x, weight, bias, nsp, groups):
    check_tensor(op, "input", x)
    check_tensor(op, "weight", weight)
    if bias is not None:
        check_tensor(op, "bias", bias)
    if weight.ndim != nsp + 2:
        raise RuntimeError(f"{op}: expected weight to be {nsp + 2}-dimensional, but got weight "
                           f"of size {list(weight._shape)}")
    if not isinstance(groups, int) or isinstance(groups, bool):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    if groups <= 0:
        raise RuntimeError(f"{op}: non-positive groups is not supported")
    if weight._shape[0] % groups:
        raise RuntimeError(f"{op}: Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size {list(weight._shape)} "
                           f"instead")
    _same_dtype(op, x, weight, bias)


def _check_positive(op, stride, padding, dilation):
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{op}: non-positive stride is not supported (stride={list(stride)})")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"{op}: negative padding is not supported (padding={list(padding)})")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{op}: non-positive dilation is not supported "
                           f"(dilation={list(dilation)})")


def _conv_padding(op, padding, kernel, stride, dilation, nsp):
    """``padding`` (int, tuple, 'valid' or 'same') -> (lo, hi) per spatial dim."""
    if isinstance(padding, str):
        if padding == "valid":
            return [(0, 0)] * nsp
        if padding != "same":
            raise RuntimeError(f"{op}: Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
        # PyTorch puts the odd extra element on the high side
        return [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                for k, d in zip(kernel, dilation)]
    p = ntuple(padding, nsp, "padding", op)
    if any(v < 0 for v in p):
        raise RuntimeError(f"{op}: negative padding is not supported (padding={list(p)})")
    return [(v, v) for v in p]


def _conv(op, nsp, input, weight, bias, stride, padding, dilation, groups):
    _common_checks(op, input, weight, bias, nsp, groups)
    x, added = batched(op, input, nsp)
    stride = ntuple(stride, nsp, "stride", op)
    dilation = ntuple(dilation, nsp, "dilation", op)
    _check_positive(op, stride, (), dilation)
    kernel = weight._shape[2:]
    pads = _conv_padding(op, padding, kernel, stride, dilation, nsp)
    n, c = x._shape[:2]
    oc = weight._shape[0]
    if c != weight._shape[1] * groups:
        raise RuntimeError(f"{op}: Given groups={groups}, weight of size {list(weight._shape)}, "
                           f"expected input{list(x._shape)} to have {weight._shape[1] * groups} "
                           f"channels, but got {c} channels instead")
    if bias is not None and (bias.ndim != 1 or bias._shape[0] != oc):
        raise RuntimeError(f"{op}: Given weight of size {list(weight._shape)}, expected bias to "
                           f"be 1-dimensional with {oc} elements, but got bias of size "
                           f"{list(bias._shape)} instead")
    padded = [s + lo + hi for s, (lo, hi) in zip(x._shape[2:], pads)]
    eff = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(p < e for p, e in zip(padded, eff)):
        raise RuntimeError(f"{op}: Calculated padded input size per channel: "
                           f"({fmt_sizes(padded)}). Kernel size: ({fmt_sizes(eff)}). Kernel "
                           f"size can't be greater than actual input size")
    if any(hi != lo for lo, hi in pads):
        # asymmetric ('same' with an even effective kernel): the extra high-side zeros first,
        # as PyTorch does, then a symmetric convolution
        x = pad(x, [(0, hi - lo) for lo, hi in pads], 0)
    out = _nn_ops.convolution_op(x, weight, bias, stride, tuple(lo for lo, _ in pads), dilation,
                                 False, (0,) * nsp, groups)
    return out.squeeze(0) if added else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


# -- transposed convolution ---------------------------------------------------------------------
def _output_padding_error(op, nsp, output_padding, stride, dilation):
    if nsp == 2:
        return RuntimeError(
            f"{op}: output padding must be smaller than either stride or dilation, but got "
            f"output_padding_height: {output_padding[0]} output_padding_width: "
            f"{output_padding[1]} stride_height: {stride[0]} stride_width: {stride[1]} "
            f"dilation_height: {dilation[0]} dilation_width: {dilation[1]}")
    return RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, "
                        f"but got "
                        f"output_padding: {list(output_padding)} stride: {list(stride)} "
                        f"dilation: {list(dilation)}")


def _conv_transpose(op, nsp, input, weight, bias, stride, padding, output_padding, groups,
                    dilation):
    _common_checks(op, input, weight, bias, nsp, groups)
    x, added = batched(op, input, nsp)
    stride = ntuple(stride, nsp, "stride", op)
    padding = ntuple(padding, nsp, "padding", op)
    output_padding = ntuple(output_padding, nsp, "output_padding", op)
    dilation = ntuple(dilation, nsp, "dilation", op)
    _check_positive(op, stride, padding, dilation)
    if any(o < 0 for o in output_padding):
        raise RuntimeError(f"{op}: negative output_padding is not supported")
    if any(o >= max(s, d) for o, s, d in zip(output_padding, stride, dilation)):
        raise _output_padding_error(op, nsp, output_padding, stride, dilation)
    n, c = x._shape[:2]
    kernel, in_sp = weight._shape[2:], x._shape[2:]
    if c != weight._shape[0]:
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight._shape)}, "
                           f"expected input{list(x._shape)} to have {weight._shape[0]} "
                           f"channels, but got {c} channels instead")
    g, ocg = groups, weight._shape[1]
    oc = ocg * g
    if bias is not None and (bias.ndim != 1 or bias._shape[0] != oc):
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight._shape)}, "
                           f"expected bias to be 1-dimensional with {oc} elements, but got "
                           f"bias of size {list(bias._shape)} instead")
    full_sp = tuple((i - 1) * s + d * (k - 1) + 1
                    for i, s, d, k in zip(in_sp, stride, dilation, kernel))
    out_sp = [f - 2 * p + o for f, p, o in zip(full_sp, padding, output_padding)]
    if any(o <= 0 for o in out_sp):
        raise RuntimeError(f"{op}: Given input size per channel: ({fmt_sizes(in_sp)}). "
                           f"Calculated "
                           f"output size per channel: ({fmt_sizes(out_sp)}). Output size is too "
                           f"small")
    out = _nn_ops.convolution_op(x, weight, bias, stride, padding, dilation, True,
                                 output_padding, groups)
    return out.squeeze(0) if added else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding,
                           output_padding, groups, dilation)


# -- im2col / col2im ----------------------------------------------------------------------------
def _fold_args(op, kernel_size, dilation, padding, stride):
    k = ntuple(kernel_size, 2, "kernel_size", op)
    d = ntuple(dilation, 2, "dilation", op)
    p = ntuple(padding, 2, "padding", op)
    s = ntuple(stride, 2, "stride", op)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"{op}: kernel size should be greater than zero, but got "
                           f"kernel_size={k}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"{op}: stride should be greater than zero, but got stride={s}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"{op}: dilation should be greater than zero, but got dilation={d}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"{op}: padding should be non-negative, but got padding={p}")
    return k, d, p, s


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding local blocks: (N, C, H, W) -> (N, C * prod(kernel_size), L)."""
    check_tensor("unfold", "input", input)
    if input.ndim not in (3, 4):
        raise RuntimeError(f"unfold: expected 3D (unbatched) or 4D (batched) input, but got "
                           f"input of size {list(input._shape)}")
    k, d, p, s = _fold_args("unfold", kernel_size, dilation, padding, stride)
    x, added = (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)
    n, c = x._shape[:2]
    blocks = [(h + 2 * pp - dd * (kk - 1) - 1) // ss + 1
              for h, pp, dd, kk, ss in zip(x._shape[2:], p, d, k, s)]
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size {tuple(x._shape[2:])}, kernel_size={k}, "
                           f"dilation={d}, padding={p}, calculated shape of the array of sliding "
                           f"blocks as {tuple(blocks)}, but its components must be at least one.")
    cols = windows(pad(x, [(v, v) for v in p], 0), k, s, d)           # (N, C, *O, *K)
    cols = cols.permute(0, 1, 4, 5, 2, 3).reshape(n, c * k[0] * k[1], blocks[0] * blocks[1])
    return cols.squeeze(0) if added else cols


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding local blocks (summing overlaps): (N, C * prod(k), L) -> (N, C, *size)."""
    check_tensor("fold", "input", input)
    if input.ndim not in (2, 3) or input.numel() == 0 and input.ndim == 2:
        raise RuntimeError(f"fold: expected 2D (unbatched) or 3D (batched) input, but got "
                           f"input of size {list(input._shape)}")
    size = ntuple(output_size, 2, "output_size", "fold")
    k, d, p, s = _fold_args("fold", kernel_size, dilation, padding, stride)
    x, added = (input.unsqueeze(0), True) if input.ndim == 2 else (input, False)
    n, ck, length = x._shape
    if ck % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={ck} and kernel_size={k}.")
    blocks = [(o + 2 * pp - dd * (kk - 1) - 1) // ss + 1
              for o, pp, dd, kk, ss in zip(size, p, d, k, s)]
    if any(b < 1 for b in blocks) or blocks[0] * blocks[1] != length:
        raise RuntimeError(f"Given output_size={size}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {blocks[0]} * "
                           f"{blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)="
                           f"{length}.")
    c = ck // (k[0] * k[1])
    full_sp = [o + 2 * pp for o, pp in zip(size, p)]
    out = col2im(x.reshape((n, c) + k + tuple(blocks)), full_sp, k, s, d)
    out = pad(out, [(-v, -v) for v in p], 0)
    return out.squeeze(0) if added else out


# torch.conv2d & co are the same functions as nn.functional's
for _fn in (conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d):
    torch_function(_fn.__name__)(_fn)
del _fn
