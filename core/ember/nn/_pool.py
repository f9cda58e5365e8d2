"""Pooling (max, average, adaptive), written in ember ops.

Fixed-window pooling pads the input (with -inf for max, zeros for average), takes the windows as
a strided view (``_conv.windows``) and reduces over the window dims. Max pooling flattens each
window and uses ``max(dim)``, so the gradient goes to one element (the first maximum, as in
PyTorch) and the window offset gives ``return_indices``. Average pooling divides the window sums
by per-position counts computed on the host (they depend only on shapes). Adaptive average
pooling is a matmul with a (out, in) averaging matrix per spatial dim; adaptive max pooling
gathers the variable-size windows, padded to the largest one with repeats of an in-window
element (repeats never change a max).
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..ops._util import _dtype_title
from ..ops.factories import tensor
from ._conv import batched, check_tensor, pad, windows

__all__ = ["max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices"]

_WORDS = {1: "a single int", 2: "a tuple of two ints"}


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


def _out_size(length, k, s, p, d, ceil_mode):
    """PyTorch's pooling_output_shape: windows may start in the left padding, never past it on
    the right, and with ceil_mode one partial window at the end is kept."""
    num = length + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= length + p:
        out -= 1
    return out


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
    out = tuple(_out_size(L, kk, ss, pp, dd, ceil_mode)
                for L, kk, ss, pp, dd in zip(sp, k, s, p, d))
    if any(o < 1 for o in out):
        raise RuntimeError(f"{op}: Given input size: ({_fmt(x._shape[1:])}). Calculated output "
                           f"size: ({_fmt((x._shape[1],) + out)}). Output size is too small")
    # extra high-side padding so that a ceil_mode partial window exists in the view
    pads = [(pp, pp + max(0, (o - 1) * ss + dd * (kk - 1) + 1 - (L + 2 * pp)))
            for L, o, kk, ss, pp, dd in zip(sp, out, k, s, p, d)]
    return k, s, p, d, out, pads


def _pool_input(op, input, nsp):
    check_tensor(op, "input", input)
    if input.ndim not in (nsp + 1, nsp + 2) or any(n == 0 for n in input._shape[-nsp - 1:]):
        raise RuntimeError(f"{op}: Expected {nsp + 1}D or {nsp + 2}D (batch mode) tensor with "
                           f"optional 0 dim batch size for input, but got: {list(input._shape)}")
    return batched(op, input, nsp)


def _lowest(dtype):
    if dtype.is_floating_point:
        return -math.inf
    return int(np.iinfo(np.dtype(dtype.name)).min)


@lru_cache(maxsize=256)
def _max_index_table(sizes, out, k, s, p, d) -> np.ndarray:
    """(prod(out), prod(k)) flat input positions of each window element (row-major input)."""
    nsp = len(k)
    table = np.zeros((1,) * (2 * nsp), dtype=np.int64)
    step = 1
    for i in reversed(range(nsp)):
        shape_o = [1] * (2 * nsp)
        shape_o[i] = out[i]
        shape_k = [1] * (2 * nsp)
        shape_k[nsp + i] = k[i]
        pos = (np.arange(out[i]) * s[i] - p[i]).reshape(shape_o) + \
            (np.arange(k[i]) * d[i]).reshape(shape_k)
        table = table + pos * step
        step *= sizes[i]
    return np.broadcast_to(table, tuple(out) + tuple(k)).reshape(math.prod(out), math.prod(k))


def _max_pool(op, nsp, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, added = _pool_input(op, input, nsp)
    if x.dtype.name == "bool" or x.is_complex():
        raise RuntimeError(f"\"{op}\" not implemented for '{_dtype_title(x.dtype)}'")
    k, s, p, d, out, pads = _window_args(op, x, nsp, kernel_size, stride, padding, dilation,
                                         ceil_mode)
    n, c = x._shape[:2]
    w = windows(pad(x, pads, _lowest(x.dtype)), k, s, d, counts=out)   # (N, C, *O, *K)
    values, arg = w.reshape((n, c) + out + (math.prod(k),)).max(-1)
    if not return_indices:
        return values.squeeze(0) if added else values
    table = tensor(_max_index_table(x._shape[2:], out, k, s, p, d), device=x.device)
    table = table.reshape(out + (math.prod(k),)).expand((n, c) + out + (math.prod(k),))
    indices = table.gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    if added:
        return values.squeeze(0), indices.squeeze(0)
    return values, indices


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                     True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode,
                     True)


# -- average pooling ----------------------------------------------------------------------------
@lru_cache(maxsize=256)
def _avg_counts(sizes, out, k, s, p, count_include_pad) -> np.ndarray:
    """Per output position divisor, PyTorch's rule: the window clipped to the padded input
    (or to the input itself when padding is not counted)."""
    total = np.ones((), dtype=np.float64)
    for L, o, kk, ss, pp in zip(sizes, out, k, s, p):
        start = np.arange(o) * ss - pp
        end = np.minimum(start + kk, L + pp)
        n = end - start
        if not count_include_pad:
            n = np.minimum(end, L) - np.maximum(start, 0)
        total = np.multiply.outer(total, n.astype(np.float64))
    return total


def _avg_pool(op, nsp, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    x, added = _pool_input(op, input, nsp)
    if x.dtype.name == "bool" or x.is_complex():
        raise RuntimeError(f"\"{op}\" not implemented for '{_dtype_title(x.dtype)}'")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(f"{op}: divisor must be not zero")
    k, s, p, _, out, pads = _window_args(op, x, nsp, kernel_size, stride, padding, 1, ceil_mode)
    w = windows(pad(x, pads, 0), k, s, (1,) * nsp, counts=out)          # (N, C, *O, *K)
    total = w.sum(dim=tuple(range(-nsp, 0)), dtype=x.dtype)
    if divisor_override is not None:
        div = divisor_override
    else:
        counts = _avg_counts(x._shape[2:], out, k, s, p, bool(count_include_pad))
        kp = math.prod(k)
        # the common case (every window full) divides by one number
        div = kp if (counts == kp).all() else tensor(counts, dtype=x.dtype, device=x.device)
    if x.is_floating_point():
        r = total / div
    else:  # PyTorch divides integers in C++: truncation
        r = total.div(div, rounding_mode="trunc")
    return r.squeeze(0) if added else r


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
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


def _bounds(length, out):
    o = np.arange(out)
    return (o * length) // out, -((-(o + 1) * length) // out)     # floor, ceil


@lru_cache(maxsize=256)
def _avg_matrix(length, out) -> np.ndarray:
    start, end = _bounds(length, out)
    i = np.arange(length)
    inside = (i[None, :] >= start[:, None]) & (i[None, :] < end[:, None])
    return inside / (end - start)[:, None].astype(np.float64)


def _adaptive_avg(op, nsp, input, output_size):
    x, added, out = _adaptive_input(op, input, nsp, output_size)
    if not x.is_floating_point():
        raise NotImplementedError(f"\"{op}\" not implemented for '{_dtype_title(x.dtype)}'")
    r = x
    for i in range(nsp):
        a = tensor(_avg_matrix(x._shape[2 + i], out[i]), dtype=x.dtype, device=x.device)
        # contract spatial dim i with the (out, in) averaging matrix, keeping dim order
        r = r.movedim(2 + i, -1).matmul(a.t()).movedim(-1, 2 + i)
    return r.squeeze(0) if added else r


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg("adaptive_avg_pool2d", 2, input, output_size)


@lru_cache(maxsize=256)
def _adaptive_rows(length, out) -> np.ndarray:
    """(out, kmax) input positions of each window, short windows padded with their last one."""
    start, end = _bounds(length, out)
    kmax = int((end - start).max()) if out else 1
    return np.minimum(start[:, None] + np.arange(kmax)[None, :], end[:, None] - 1)


def _adaptive_max(op, nsp, input, output_size, return_indices):
    x, added, out = _adaptive_input(op, input, nsp, output_size)
    if x.dtype.name == "bool" or x.is_complex():
        raise RuntimeError(f"\"{op}\" not implemented for '{_dtype_title(x.dtype)}'")
    n, c = x._shape[:2]
    sp = x._shape[2:]
    rows = [_adaptive_rows(sp[i], out[i]) for i in range(nsp)]
    r = x
    for i in range(nsp):
        idx = tensor(rows[i].reshape(-1), device=x.device)
        r = r.index_select(2 + 2 * i, idx).unflatten(2 + 2 * i, rows[i].shape)
    # (N, C, O1, K1, O2, K2, ...) -> (N, C, O1, O2, ..., K1 * K2 * ...)
    perm = (0, 1) + tuple(2 + 2 * i for i in range(nsp)) + tuple(3 + 2 * i for i in range(nsp))
    kp = math.prod(rw.shape[1] for rw in rows)
    values, arg = r.permute(perm).reshape((n, c) + out + (kp,)).max(-1)
    if not return_indices:
        return values.squeeze(0) if added else values
    table = np.zeros((1,) * (2 * nsp), dtype=np.int64)
    step = 1
    for i in reversed(range(nsp)):
        shape = [1] * (2 * nsp)
        shape[i], shape[nsp + i] = rows[i].shape
        table = table + rows[i].reshape(shape) * step
        step *= sp[i]
    table = np.broadcast_to(table, out + tuple(rw.shape[1] for rw in rows)).reshape(out + (kp,))
    t = tensor(np.ascontiguousarray(table), device=x.device).expand((n, c) + out + (kp,))
    indices = t.gather(-1, arg.unsqueeze(-1)).squeeze(-1)
    if added:
        return values.squeeze(0), indices.squeeze(0)
    return values, indices


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, return_indices)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max("adaptive_max_pool1d", 1, input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    return _adaptive_max("adaptive_max_pool2d", 2, input, output_size, True)
