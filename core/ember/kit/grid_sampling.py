"""Kernels for ``ember.ops.grid_sampling`` on array-module backends, vectorised over every
sample point: each interpolation mode is a list of *taps* (input position, weight, and the
weight's derivative along each coordinate); the forward sums gathered taps, the backward
scatters ``grad * weight`` into the input (one ``bincount`` per call) and sums
``grad * value * dweight * multiplier`` per point for the grid (PyTorch's formulas: the
multipliers of unnormalize, clip and reflection)."""
from __future__ import annotations

import contextlib
import itertools

from ..ops.grid_sampling import (BICUBIC, BILINEAR, BORDER, CUBIC_A, NEAREST, REFLECTION,
                                 cubic_coefficients)
from .binding import bind


def _unnormalize(g, size, align_corners):
    if align_corners:
        return (g + 1) / 2 * (size - 1), (size - 1) / 2
    return ((g + 1) * size - 1) / 2, size / 2


def _clip(xp, x, size):
    """clip_coordinates_set_grad: value and d value / d x."""
    hi = size - 1
    grad = ((x > 0) & (x < hi)).astype(x.dtype)
    return xp.clip(x, 0, hi), grad


def _reflect(xp, x, twice_low, twice_high):
    if twice_low == twice_high:
        return xp.zeros_like(x), xp.zeros_like(x)
    lo = twice_low / 2
    span = (twice_high - twice_low) / 2
    x = x - lo
    sign = xp.where(x < 0, -1.0, 1.0).astype(x.dtype)
    x = xp.abs(x)
    extra = xp.fmod(x, span)
    flips = xp.floor(x / span)
    even = (flips % 2) == 0
    return xp.where(even, extra + lo, span - extra + lo), xp.where(even, sign, -sign)


def _coordinates(xp, x, size, padding_mode, align_corners):
    """compute_coordinates(_set_grad): the padded coordinate and its derivative."""
    if padding_mode == BORDER:
        return _clip(xp, x, size)
    if padding_mode == REFLECTION:
        if align_corners:
            r, g1 = _reflect(xp, x, 0, 2 * (size - 1))
        else:
            r, g1 = _reflect(xp, x, -1, 2 * size - 1)
        r, g2 = _clip(xp, r, size)
        return r, g1 * g2
    return x, xp.ones_like(x)


def _cubic(t):
    """Keys' cubic convolution coefficients of the four taps and their derivatives in t."""
    A = CUBIC_A

    def near_d(x):
        return (3 * (A + 2) * x - 2 * (A + 3)) * x

    def far_d(x):
        return (3 * A * x - 10 * A) * x + 8 * A
    return (cubic_coefficients(t),
            [far_d(t + 1), near_d(t), -near_d(1 - t), -far_d(2 - t)])


def taps(xp, g, sizes, mode, padding_mode, align_corners):
    """[(positions per coordinate (int), valid mask, weight, [dweight/dcoord k])], and the
    per-coordinate gradient multipliers."""
    nd = len(sizes)
    coords, mults = [], []
    for k in range(nd):
        x, m = _unnormalize(g[..., k], sizes[k], align_corners)
        if mode != BICUBIC:
            x, m2 = _coordinates(xp, x, sizes[k], padding_mode, align_corners)
            m = m * m2
        coords.append(x)
        mults.append(m)
    out = []
    if mode == NEAREST:
        pos = [xp.rint(x).astype(xp.int64) for x in coords]
        out.append((pos, None, None))
    elif mode == BILINEAR:
        base = [xp.floor(x) for x in coords]
        frac = [x - b for x, b in zip(coords, base)]
        for corner in itertools.product((0, 1), repeat=nd):
            parts = [frac[k] if o else 1 - frac[k] for k, o in enumerate(corner)]
            w = parts[0]
            for p in parts[1:]:
                w = w * p
            dws = []
            for k, o in enumerate(corner):
                d = xp.ones_like(frac[0]) if o else -xp.ones_like(frac[0])
                for j, p in enumerate(parts):
                    if j != k:
                        d = d * p
                dws.append(d)
            out.append(([b.astype(xp.int64) + o for b, o in zip(base, corner)], w, dws))
    else:
        base = [xp.floor(x) for x in coords]
        (cx, dx), (cy, dy) = (_cubic(coords[k] - base[k]) for k in range(2))
        for i, j in itertools.product(range(4), repeat=2):
            pos = []
            for k, off in ((0, i - 1), (1, j - 1)):
                p = base[k] + off
                if padding_mode != 0:
                    p, _ = _coordinates(xp, p, sizes[k], padding_mode, align_corners)
                pos.append(xp.trunc(p).astype(xp.int64))
            out.append((pos, cx[i] * cy[j], [dx[i] * cy[j], cx[i] * dy[j]]))
    return out, mults


def _linear_index(xp, pos, sizes):
    lin, stride = 0, 1
    valid = None
    for p, s in zip(pos, sizes):
        ok = (p >= 0) & (p < s)
        valid = ok if valid is None else valid & ok
        lin = lin + xp.clip(p, 0, s - 1) * stride
        stride *= s
    return lin, valid


def _quiet(xp):
    errstate = getattr(xp, "errstate", None)
    return errstate(all="ignore") if errstate is not None else contextlib.nullcontext()


def _prepare(be, input, grid):
    a, g = be.native(input), be.native(grid)
    n, c = a.shape[:2]
    nd = a.ndim - 2
    sizes = a.shape[2:][::-1]
    ct = a.dtype
    return a.reshape(n, c, -1), g.reshape(n, -1, nd).astype(ct, copy=False), sizes


def grid_sampler(be, input, grid, mode, padding_mode, align_corners):
    xp = be.xp
    flat, g, sizes = _prepare(be, input, grid)
    n, c, _ = flat.shape
    out = xp.zeros((n, c, g.shape[1]), dtype=flat.dtype)
    with _quiet(xp):
        for pos, w, _ in taps(xp, g, sizes, mode, padding_mode, align_corners)[0]:
            lin, valid = _linear_index(xp, pos, sizes)
            v = xp.take_along_axis(flat, lin[:, None, :], axis=2)
            weight = valid if w is None else xp.where(valid, w, 0)
            out += v * weight[:, None, :].astype(flat.dtype)
    shape = tuple(input._shape[:2]) + tuple(grid._shape[1:-1])
    return be.wrap(out.reshape(shape), input.device)


def grid_sampler_backward(be, grad_output, input, grid, mode, padding_mode, align_corners):
    xp = be.xp
    flat, g, sizes = _prepare(be, input, grid)
    n, c, s = flat.shape
    go = be.native(grad_output).reshape(n, c, -1).astype(flat.dtype, copy=False)
    gi = xp.zeros(n * c * s, dtype=xp.float64)
    gg = xp.zeros(g.shape, dtype=flat.dtype)
    rows = (xp.arange(n * c) * s).reshape(n, c, 1)
    with _quiet(xp):
        tap_list, mults = taps(xp, g, sizes, mode, padding_mode, align_corners)
        for pos, w, dws in tap_list:
            lin, valid = _linear_index(xp, pos, sizes)
            weight = valid.astype(flat.dtype) if w is None else xp.where(valid, w, 0)
            contrib = go * weight[:, None, :]
            gi += be.bincount("grid_sampler_backward", (rows + lin[:, None, :]).reshape(-1),
                              contrib.reshape(-1).astype(xp.float64), n * c * s)
            if dws is None:
                continue
            v = xp.take_along_axis(flat, lin[:, None, :], axis=2)
            gv = (go * v).sum(axis=1)
            for k, dw in enumerate(dws):
                gg[..., k] += xp.where(valid, gv * dw, 0) * mults[k]
    return (be.wrap(gi.reshape(input._shape).astype(flat.dtype), input.device),
            be.wrap(gg.reshape(grid._shape), grid.device))


TABLE = {"grid_sampler": grid_sampler, "grid_sampler_backward": grid_sampler_backward}


def register(backend) -> None:
    bind(backend, TABLE)
