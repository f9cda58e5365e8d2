"""Convolution kernels for array-module backends: im2col + one batched GEMM.

Every direction reduces to three primitives over a *regular* convolution ``y = C(z, W)``
(z: (N, C_in, *Z), W: (C_out, C_in/G, *k), y: (N, C_out, *Y)):

* ``_forward(z, W)``: the windows of the padded ``z`` as a strided view (N, G, C_in/G, *k, *Y)
  (no copy), one reshape to columns (the only im2col copy), then ``W @ columns`` batched over N
  and the groups — measured fastest of im2col + GEMM (one GEMM over all of N, with the output
  transposed back), tensordot/einsum on the window view and per-offset shifted GEMMs;
* ``_input_grad(g, W)``: ``W^T @ g`` gives the columns, col2im adds them back with one strided
  add per kernel offset (prod(k) adds, each over the whole batch; for 2-D host arrays the
  compiled csrc/col2im.c does the same sums plane by plane, ~6x faster on DCGAN's layers);
* ``_weight_grad(g, z)``: ``g @ columns^T`` batched over N, summed over N (over many positions
  computed as ``(columns @ g^T)^T``, which OpenBLAS runs faster: ``_times_columns``).

When each sample's output is small (fewer than ``WHOLE_BATCH`` positions: the deep layers of a
ResNet, 4x4 to 8x8), GEMMs batched over N are too thin for BLAS, so the columns take the whole
batch instead — (G, C/G * prod(k), N * prod(out)), one GEMM per group in each direction — at
the price of transposing the output or gradient between (N, C, ...) and (C, N, ...). At batch
8 and 512 channels of 4x4 this halves the forward and cuts the weight gradient from 23 to 8 ms
(the batched form also wrote an N-times larger product only to sum it). Either way the columns
are made for a slice of the batch at a time (``COLUMN_BYTES``, or the backend's
``conv_workspace``), so the im2col matrix never dominates a training step's peak memory.

A transposed convolution is the adjoint of the regular one with the same weight, so its forward
is ``_input_grad``, its input gradient ``_forward`` and its weight gradient ``_weight_grad`` with
the roles of input and output exchanged. Half precision is computed in float32 and rounded
once; on a backend whose ``matmul`` multiplies half precision natively (CUDA's GemmEx, float32
accumulation on tensor cores) only the GEMMs run in it and the sums around them in float32.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .._fastpath import C as _C
from .binding import bind
from .linalg import HALF


def _work(be, a):
    """Operands to compute with: half precision in float32, unless the backend multiplies half
    precision natively (``be.half_matmul``: then only the products run in it)."""
    return a.astype(be.xp.float32) if a.dtype in HALF and not be.half_matmul else a


def _wide(xp, a):
    """An accumulation dtype: float32 for half-precision products."""
    return a.astype(xp.float32) if a.dtype in HALF else a


def _padded(xp, z, padding, extra=None):
    """``z`` with ``padding`` zeros each side of every spatial dim (``extra`` more on the high
    side); ``z`` itself when nothing is added."""
    extra = extra or (0,) * len(padding)
    if not any(padding) and not any(extra):
        return z
    shape = z.shape[:2] + tuple(s + 2 * p + e for s, p, e in zip(z.shape[2:], padding, extra))
    out = xp.zeros(shape, dtype=z.dtype)
    out[(Ellipsis,) + tuple(slice(p, p + s) for p, s in zip(padding, z.shape[2:]))] = z
    return out


WHOLE_BATCH = 256   # output positions per sample below which the GEMMs take the whole batch
# the im2col matrix is made for this many bytes of samples at a time (unless the backend sets its
# own ``conv_workspace``), so a step's peak memory holds a slice of it, not all of it
# (whole-batch GEMMs still get >= WHOLE_BATCH columns)
COLUMN_BYTES = 1 << 18
# per-sample GEMMs do not get slower with more samples at a time, but each slice costs a
# round of Python calls: a batch-32 28x28 layer's columns (780 KB) are made in one piece
# (forward 112 -> 82 us); whole-batch GEMMs over larger slices spill the L2 cache (a 13x13
# layer's forward and backward 676 -> 834 us at 1 MiB), so they keep COLUMN_BYTES
SAMPLE_COLUMN_BYTES = 1 << 20


def _chunks(be, n, positions, per_position):
    """Sample ranges whose columns take about ``be.conv_workspace`` (else COLUMN_BYTES) bytes:
    (whole, [(start, stop), ...])."""
    whole = positions < WHOLE_BATCH
    limit = be.conv_workspace or (COLUMN_BYTES if whole else SAMPLE_COLUMN_BYTES)
    m = max(1, limit // max(positions * per_position, 1))
    if whole:
        m = max(m, -(-WHOLE_BATCH // positions))
    return whole, [(s, min(n, s + m)) for s in range(0, n, m)] or [(0, 0)]


def _columns(xp, zp, groups, kernel, stride, dilation, out_sp, whole=False):
    """The im2col matrix of padded ``zp``, one copy: (N, G, C/G * prod(k), prod(out)), or
    with ``whole`` (G, C/G * prod(k), N * prod(out))."""
    n, c = zp.shape[:2]
    if len(kernel) == 2 and _C is not None and zp.__class__ is np.ndarray:
        # compiled for 2-D host arrays (csrc/col2im.c): written through a (N, C, *k, *out) view
        rows, cols = c * math.prod(kernel), math.prod(out_sp)
        if whole:
            m = np.empty((rows, n * cols), dtype=zp.dtype)
            view = m.reshape((c,) + tuple(kernel) + (n,) + tuple(out_sp))
            view = view.transpose(3, 0, 1, 2, 4, 5)
            shape = (groups, rows // groups, n * cols)
        else:
            m = np.empty((n, rows, cols), dtype=zp.dtype)
            view = m.reshape((n, c) + tuple(kernel) + tuple(out_sp))
            shape = (n, groups, rows // groups, cols)
        if _C.im2col2d(view, zp, tuple(stride), tuple(dilation)):
            return m.reshape(shape)
    st = zp.strides
    nsp = len(kernel)
    window = tuple(kernel) + tuple(out_sp)
    window_strides = tuple(st[2 + i] * dilation[i] for i in range(nsp)) + \
        tuple(st[2 + i] * stride[i] for i in range(nsp))
    if whole:
        shape = (groups, c // groups) + tuple(kernel) + (n,) + tuple(out_sp)
        strides = (st[1] * (c // groups), st[1]) + window_strides[:nsp] + (st[0],) + \
            window_strides[nsp:]
        win = xp.lib.stride_tricks.as_strided(zp, shape, strides)
        return win.reshape(groups, (c // groups) * math.prod(kernel), n * math.prod(out_sp))
    shape = (n, groups, c // groups) + window
    strides = (st[0], st[1] * (c // groups), st[1]) + window_strides
    win = xp.lib.stride_tricks.as_strided(zp, shape, strides)
    return win.reshape(n, groups, (c // groups) * math.prod(kernel), math.prod(out_sp))


def _channels_first(xp, a, groups):
    """(N, C, *sp) -> (G, C/G, N * prod(sp)), a copy: an output gradient for whole-batch
    GEMMs."""
    n, c = a.shape[:2]
    m = a.reshape(n, groups, c // groups, -1).transpose(1, 2, 0, 3)
    return xp.ascontiguousarray(m).reshape(groups, c // groups, -1)


def _forward(be, z, w, stride, padding, dilation, groups):
    """Regular convolution of batched ``z`` by ``w``: (N, C_out, *out)."""
    xp = be.xp
    kernel = w.shape[2:]
    out_sp = tuple((s + 2 * p - d * (k - 1) - 1) // st + 1 for s, k, st, p, d in
                   zip(z.shape[2:], kernel, stride, padding, dilation))
    n, oc = z.shape[0], w.shape[0]
    zp = _padded(xp, z, padding)
    wm = w.reshape(groups, oc // groups, -1)
    positions = math.prod(out_sp)
    r = None
    whole, chunks = _chunks(be, n, positions, wm.shape[2] * z.itemsize)
    for a, b in chunks:
        cols = _columns(xp, zp[a:b], groups, kernel, stride, dilation, out_sp, whole)
        part = be.matmul(wm, cols)
        if whole:   # (G, OC/G, m * out) -> (m, G, OC/G, out)
            part = part.reshape(groups, oc // groups, b - a, positions).transpose(2, 0, 1, 3)
        if len(chunks) == 1:
            r = part
            break
        if r is None:
            r = xp.empty((n,) + part.shape[1:], dtype=part.dtype)
        r[a:b] = part
    return r.reshape((n, oc) + out_sp)


def _input_grad(be, g, w, in_sp, stride, padding, dilation, groups):
    """The adjoint of ``_forward`` in its input: (N, C_in, *in_sp) from g (N, C_out, *out)."""
    xp = be.xp
    n, oc = g.shape[:2]
    out_sp = g.shape[2:]
    kernel = w.shape[2:]
    nk = len(kernel)
    cg = w.shape[1]
    kp = math.prod(kernel)
    wt = w.reshape(groups, oc // groups, cg * kp).transpose(0, 2, 1)
    # the padded input must hold every window, including ones the output padding adds
    full = tuple(max(i + 2 * p, (o - 1) * s + d * (k - 1) + 1) for i, p, o, s, d, k in
                 zip(in_sp, padding, out_sp, stride, dilation, kernel))
    acc = None
    positions = math.prod(out_sp)
    whole, chunks = _chunks(be, n, positions, cg * kp * 4)
    gm = g.reshape(n, groups, oc // groups, positions)
    for a, b in chunks:
        if whole:
            cols = _wide(xp, be.matmul(wt, _channels_first(xp, g[a:b], groups)))
            # (G, C/G * k, m * out) seen as (m, C, *k, *out): col2im reads it strided
            cols = cols.reshape((groups * cg,) + tuple(kernel) + (b - a,) + tuple(out_sp))
            cols = cols.transpose((nk + 1, 0) + tuple(range(1, nk + 1)) +
                                  tuple(range(nk + 2, 2 * nk + 2)))
        else:
            cols = _wide(xp, be.matmul(wt, gm[a:b]))
            cols = cols.reshape((b - a, groups * cg) + tuple(kernel) + tuple(out_sp))
        if acc is None:
            acc = xp.zeros((n, groups * cg) + full, dtype=cols.dtype)
        _col2im(xp, acc[a:b], cols, kernel, out_sp, stride, dilation)
    crop = tuple(slice(p, p + i) for p, i in zip(padding, in_sp))
    r = acc[(Ellipsis,) + crop]
    return r if r.flags.c_contiguous else xp.ascontiguousarray(r)


def _col2im(xp, acc, cols, kernel, out_sp, stride, dilation):
    """acc += the columns ``cols`` (m, C, *kernel, *out) put back at their windows: one strided
    add per kernel offset (compiled for 2-D float32/float64 host arrays, plane by plane:
    csrc/col2im.c, the same sums in the same order)."""
    if len(kernel) == 2 and _C is not None and \
            _C.col2im2d(acc, cols, tuple(stride), tuple(dilation)):
        return
    for offset in itertools.product(*(range(k) for k in kernel)):
        region = tuple(slice(o * d, o * d + (m - 1) * s + 1, s) for o, d, m, s in
                       zip(offset, dilation, out_sp, stride))
        acc[(Ellipsis,) + region] += cols[(slice(None), slice(None)) + offset]


def _weight_grad(be, g, z, kernel, stride, padding, dilation, groups):
    """The adjoint of ``_forward`` in its weight: (C_out, C_in/G, *k)."""
    xp = be.xp
    n, oc = g.shape[:2]
    out_sp = g.shape[2:]
    zp = _padded(xp, z, padding)
    positions = math.prod(out_sp)
    ck = (z.shape[1] // groups) * math.prod(kernel)
    whole, chunks = _chunks(be, n, positions, ck * z.itemsize)
    gm = g.reshape(n, groups, oc // groups, positions)
    r = None
    for a, b in chunks:
        cols = _columns(xp, zp[a:b], groups, kernel, stride, dilation, out_sp, whole)
        if whole:   # one GEMM over the chunk: (G, OC/G, m * out) @ (G, m * out, C/G * k)
            part = _wide(xp, _times_columns(be, _channels_first(xp, g[a:b], groups), cols))
        else:
            part = _wide(xp, _times_columns(be, gm[a:b], cols)).sum(axis=0)
        r = part if r is None else xp.add(r, part, out=r)   # (G, OC/G, C/G * k)
    r = r if r.flags.c_contiguous else xp.ascontiguousarray(r)
    return r.reshape((oc, z.shape[1] // groups) + tuple(kernel))


def _times_columns(be, g, cols):
    """``g @ cols^T`` (..., OC, P) by (..., CK, P): the weight gradient's GEMM. Over 256
    positions or more and columns of 128 or more, OpenBLAS runs ``(cols @ g^T)^T`` 1.1-1.8x
    faster (single thread: 16x900 by 400x900 282 -> 153 us; DCGAN's 4 x 32x256 by 256x256
    297 -> 211 us, over 14 shapes); with fewer positions or shorter columns the direct form
    wins (256x64 by 2304x64: 796 against 1886 us). The result may be a transposed view."""
    if be.values_on_host and g.shape[-1] >= 256 and cols.shape[-2] >= 128:
        return be.matmul(cols, g.swapaxes(-1, -2)).swapaxes(-1, -2)
    return be.matmul(g, cols.swapaxes(-1, -2))


def _result(be, r, dtype, device):
    if r.dtype != dtype:
        r = r.astype(dtype)
    return be.wrap(r if r.flags.c_contiguous else be.xp.ascontiguousarray(r), device)


def convolution(be, input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    xp = be.xp
    x, w = be.native(input), be.native(weight)
    dt = x.dtype
    x, w = _work(be, x), _work(be, w)
    if transposed:
        in_sp = tuple((i - 1) * s - 2 * p + d * (k - 1) + 1 + o for i, s, p, d, k, o in
                      zip(x.shape[2:], stride, padding, dilation, w.shape[2:], output_padding))
        r = _input_grad(be, x, w, in_sp, stride, padding, dilation, groups)
    else:
        r = _forward(be, x, w, stride, padding, dilation, groups)
    if bias is not None:
        r = _wide(xp, r)
        b = _wide(xp, be.native(bias))
        r += b.reshape((b.shape[0],) + (1,) * (r.ndim - 2))
    return _result(be, r, dt, input.device)


def convolution_backward(be, grad_output, input, weight, bias_sizes, stride, padding, dilation,
                         transposed, output_padding, groups, output_mask):
    xp = be.xp
    g, x, w = (_work(be, be.native(t)) for t in (grad_output, input, weight))
    dt = be.native(input).dtype
    dev = input.device
    gi = gw = gb = None
    if output_mask[0]:
        if transposed:
            # output padding of a stride or more adds windows past the input's: crop them
            r = _forward(be, g, w, stride, padding, dilation, groups)
            r = r[(Ellipsis,) + tuple(slice(0, i) for i in x.shape[2:])]
        else:
            r = _input_grad(be, g, w, x.shape[2:], stride, padding, dilation, groups)
        gi = _result(be, r, dt, dev)
    if output_mask[1]:
        if transposed:  # roles exchanged: x plays the output gradient, g the input
            r = _weight_grad(be, x, g, w.shape[2:], stride, padding, dilation, groups)
        else:
            r = _weight_grad(be, g, x, w.shape[2:], stride, padding, dilation, groups)
        gw = _result(be, r, dt, dev)
    if output_mask[2]:
        gb = _result(be, _wide(xp, g).sum(axis=(0,) + tuple(range(2, g.ndim))), dt, dev)
    return gi, gw, gb


TABLE = {"convolution": convolution, "convolution_backward": convolution_backward}


def register(backend) -> None:
    bind(backend, TABLE)
