"""Resampling on a regular grid: ``upsample`` (behind ``F.interpolate``, ``nn.Upsample``) and its
own backward op, ``upsample_backward``.

Every mode PyTorch has is *separable*: along each spatial dim the output is a weighted sum of a
few input positions, ``out[o] = sum_k w[o, k] * in[idx[o, k]]``, with a table ``(idx, w)`` that
depends only on the sizes, the mode, ``align_corners`` and the scale (PyTorch's formulas from
``UpSample.h``, including its float32 index arithmetic for float32 inputs):

* ``nearest`` / ``nearest-exact``: one position (no weights; any dtype keeps its values);
* ``linear`` (linear, bilinear, trilinear): two, with ``align_corners``;
* ``cubic`` (bicubic): four, Keys' kernel with A = -0.75, indices clamped at the borders;
* ``area``: the adaptive-average window ``[floor(o*in/out), ceil((o+1)*in/out))``;
* ``linear_aa`` / ``cubic_aa`` (``antialias=True``): the filter stretched by the scale when
  downsampling (Pillow's), normalised per output position.

``upsample(Tensor self, int[] output_size, str mode, bool align_corners, float[] scales)``
applies one table per trailing dim (``scales[d] <= 0``: none given, the sizes decide);
``upsample_backward(Tensor grad_output, int[] input_size, ...)`` applies the transposed tables
(for each input position, the output positions that read it, with their weights), so it too is
a gather: deterministic, no atomics. Each op is the other's derivative. The tables are made on
the host (numpy) and cached; kernels receive them through ``resample_tables``.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from . import factories as _fac

MODES = ("nearest", "nearest-exact", "linear", "cubic", "area", "linear_aa", "cubic_aa")


# -- the tables ---------------------------------------------------------------------------------
def _scale(in_size, out_size, align_corners, scale):
    if align_corners:
        return (in_size - 1.0) / (out_size - 1.0) if out_size > 1 else 0.0
    return 1.0 / scale if scale > 0 else in_size / out_size


def _cubic_weights(t, A):
    def near(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A
    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], 1)


def _aa_filter(mode, x):
    x = np.abs(x)
    if mode == "linear_aa":
        return np.where(x < 1.0, 1.0 - x, 0.0)
    a = -0.5  # PyTorch's antialiased bicubic uses Pillow's a = -0.5
    return np.where(x < 1.0, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2.0, (((x - 5) * x + 8) * x - 4) * a, 0.0))


@functools.lru_cache(maxsize=512)
def table(mode, in_size, out_size, align_corners, scale, np_dtype):
    """``(idx, w)`` for one dim: ``idx`` (out, K) int64, ``w`` (out, K) of ``np_dtype`` or None
    (nearest modes). ``scale <= 0``: none given."""
    dt = np.dtype(np_dtype).type
    o = np.arange(out_size)
    if mode in ("nearest", "nearest-exact"):
        # PyTorch computes nearest indices in float32 whatever the dtype
        s = np.float32(1.0 / scale if scale > 0 else in_size / out_size)
        off = np.float32(0.5 if mode == "nearest-exact" else 0.0)
        src = np.floor((o.astype(np.float32) + off) * s).astype(np.int64)
        return np.minimum(src, in_size - 1)[:, None], None
    if mode == "area":
        start = (o * in_size) // out_size
        end = -((-(o + 1) * in_size) // out_size)
        k = int((end - start).max()) if out_size else 1
        idx = start[:, None] + np.arange(k)[None, :]
        valid = idx < end[:, None]
        w = np.where(valid, 1.0 / (end - start)[:, None], 0.0).astype(dt)
        return np.where(valid, idx, start[:, None]), w
    s = dt(_scale(in_size, out_size, align_corners, scale))
    of = o.astype(dt)
    if mode in ("linear", "cubic"):
        src = s * of if align_corners else s * (of + dt(0.5)) - dt(0.5)
        if mode == "linear":
            src = np.maximum(src, dt(0))
            i0 = src.astype(np.int64)
            lam = src - i0.astype(dt)
            return (np.stack([i0, np.minimum(i0 + 1, in_size - 1)], 1),
                    np.stack([dt(1) - lam, lam], 1))
        fl = np.floor(src)
        idx = np.clip(fl.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :], 0, in_size - 1)
        return idx, _cubic_weights(src - fl, dt(-0.75)).astype(dt)
    # antialiased: the filter's support grows with the downsampling factor
    interp = 2 if mode == "linear_aa" else 4
    support = interp * 0.5 * s if s >= 1.0 else interp * 0.5
    invscale = 1.0 / s if s >= 1.0 else 1.0
    center = s * (o + 0.5)
    xmin = np.maximum((center - support + 0.5).astype(np.int64), 0)
    xmax = np.minimum((center + support + 0.5).astype(np.int64), in_size)
    k = max(int((xmax - xmin).max()) if out_size else 1, 1)
    j = np.arange(k)[None, :]
    idx = xmin[:, None] + j
    valid = idx < xmax[:, None]
    w = np.where(valid, _aa_filter(mode, (j + xmin[:, None] - center[:, None] + 0.5) * invscale),
                 0.0)
    total = w.sum(1, keepdims=True)
    w = np.where(total != 0, w / np.where(total == 0, 1, total), 0.0)
    return np.where(valid, idx, xmin[:, None]), w.astype(dt)


@functools.lru_cache(maxsize=512)
def transposed(mode, in_size, out_size, align_corners, scale, np_dtype):
    """The adjoint of ``table``: ``(idx, w)`` (in, K') listing, for each input position, the
    output positions that read it and with which weight (padding has weight 0)."""
    idx, w = table(mode, in_size, out_size, align_corners, scale, np_dtype)
    k = idx.shape[1]
    src = idx.reshape(-1)
    dst = np.repeat(np.arange(out_size), k)
    wt = np.ones(src.shape, np.dtype(np_dtype)) if w is None else w.reshape(-1)
    keep = wt != 0
    src, dst, wt = src[keep], dst[keep], wt[keep]
    order = np.argsort(src, kind="stable")
    src, dst, wt = src[order], dst[order], wt[order]
    counts = np.bincount(src, minlength=in_size)
    kt = max(int(counts.max()) if counts.size else 1, 1)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    slot = np.arange(src.size) - starts[src]
    tidx = np.zeros((in_size, kt), np.int64)
    tw = np.zeros((in_size, kt), np.dtype(np_dtype))
    tidx[src, slot] = dst
    tw[src, slot] = wt
    return tidx, tw


def compute_dtype(dtype):
    """The dtype the weights and sums are in (half types compute in float32)."""
    return _dtype.float64 if dtype is _dtype.float64 else _dtype.float32


def resample_tables(mode, in_sizes, out_sizes, align_corners, scales, dtype, backward=False):
    """Per trailing dim, ``(idx, w)`` numpy tables for kernels (``w`` None for nearest modes
    in the forward direction)."""
    make = transposed if backward else table
    npd = compute_dtype(dtype).np
    return [make(mode, i, o, bool(align_corners), float(s), npd)
            for i, o, s in zip(in_sizes, out_sizes, scales)]


# -- the ops ------------------------------------------------------------------------------------
def _check_mode(op, mode):
    if mode not in MODES:
        raise RuntimeError(f"{op}: unknown mode {mode!r} (expected one of {', '.join(MODES)})")


def _upsample_meta(self, output_size, mode, align_corners, scales):
    _check_mode("upsample", mode)
    n = len(output_size)
    if self.ndim != n + 2:
        raise RuntimeError(f"upsample: expected a {n + 2}-D input for {n} output sizes, got "
                           f"shape {list(self._shape)}")
    check_sizes(self._shape, output_size)
    return tuple(self._shape[:2]) + tuple(output_size), self.dtype


def _upsample_backward_meta(grad_output, input_size, output_size, mode, align_corners, scales):
    _check_mode("upsample_backward", mode)
    expected = tuple(grad_output._shape[:2]) + tuple(output_size)
    if tuple(grad_output._shape) != expected:
        raise RuntimeError(f"upsample_backward: expected grad_output of shape {list(expected)}, "
                           f"got {list(grad_output._shape)}")
    return tuple(grad_output._shape[:2]) + tuple(input_size), grad_output.dtype


def check_sizes(shape, output_size):
    names = "DHW"[3 - len(output_size):]
    spatial = tuple(shape[2:])
    if any(s <= 0 for s in spatial) or any(s <= 0 for s in output_size):
        ins = ", ".join(f"{c}: {s}" for c, s in zip(names, spatial))
        outs = ", ".join(f"{c}: {s}" for c, s in zip(names, output_size))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({ins}) and output ({outs})")
    if shape[1] == 0:
        raise RuntimeError(f"Non-empty {len(shape)}D data tensor expected but got a tensor with "
                           f"sizes {list(shape)}")


_NAMES = {"nearest": "UpsampleNearest{n}D", "nearest-exact": "UpsampleNearestExact{n}D",
          "cubic": "UpsampleBicubic2D", "linear_aa": "UpsampleBilinear2DAa",
          "cubic_aa": "UpsampleBicubic2DAa", "area": "AdaptiveAvgPool{n}D"}
_LINEAR = {1: "UpsampleLinear1D", 2: "UpsampleBilinear2D", 3: "UpsampleTrilinear3D"}


def _node_name(self, output_size, mode, align_corners, scales):
    n = len(output_size)
    base = _LINEAR[n] if mode == "linear" else _NAMES[mode].format(n=n)
    return base + "Backward0"


def _upsample_backward_formula(ctx, g, self, output_size, mode, align_corners, scales):
    return (upsample_backward_op(g, ctx.info, output_size, mode, align_corners, scales),)


def _upsample_backward_backward(ctx, g, grad_output, input_size, output_size, mode,
                                align_corners, scales):
    return (upsample_op(g, output_size, mode, align_corners, scales),)


def _apply_tables(x, tables):
    """The composite: one ``index_select`` + weighted sum per dim (any backend's ops)."""
    nd = len(tables)
    cd = compute_dtype(x.dtype)
    out = x
    for d, (idx, w) in enumerate(tables):
        dim = out.ndim - nd + d
        n_out, k = idx.shape
        ids = _fac.tensor(idx.reshape(-1), device=x.device)
        picked = out.index_select(dim, ids)
        if w is None:
            out = picked
            continue
        shape = list(out._shape)
        shape[dim:dim + 1] = [n_out, k]
        picked = picked.reshape(shape)
        if picked.dtype is not cd:
            picked = picked.to(cd)
        wt = _fac.tensor(w, device=x.device).to(cd).reshape((n_out, k) + (1,) * (nd - d - 1))
        out = (picked * wt).sum(dim + 1)
    return out.to(x.dtype) if out.dtype is not x.dtype else out


def _upsample_composite(self, output_size, mode, align_corners, scales):
    tables = resample_tables(mode, self._shape[2:], output_size, align_corners, scales,
                             self.dtype)
    return _apply_tables(self, tables).contiguous()


def _upsample_backward_composite(grad_output, input_size, output_size, mode, align_corners,
                                 scales):
    tables = resample_tables(mode, input_size, output_size, align_corners, scales,
                             grad_output.dtype, backward=True)
    return _apply_tables(grad_output, tables).contiguous()


def _input_size(self, *rest):
    return tuple(self._shape[2:])


upsample_op = define(
    "upsample(Tensor self, int[] output_size, str mode, bool align_corners, float[] scales) -> "
    "Tensor", meta=_upsample_meta, composite=_upsample_composite,
    derivative=Derivative(_upsample_backward_formula, setup=_input_size, name=_node_name))
upsample_backward_op = define(
    "upsample_backward(Tensor grad_output, int[] input_size, int[] output_size, str mode, "
    "bool align_corners, float[] scales) -> Tensor", meta=_upsample_backward_meta,
    composite=_upsample_backward_composite,
    derivative=Derivative(_upsample_backward_backward, name="UpsampleBackwardBackward0"))

_RESIZE_MODES = {"nearest": "nearest", "linear": "linear", "cubic": "cubic"}


@upsample_op.def_onnx
def _upsample_onnx(b, c, x, output_size, mode, align_corners=False, scales=None, *rest):
    """``upsample`` as ONNX ``Resize`` with PyTorch's coordinate conventions: ``nearest`` is
    the legacy floor(out * in / out_size) ("asymmetric", "floor"); linear and cubic use
    "align_corners" or "pytorch_half_pixel" (cubic with PyTorch's a = -0.75)."""
    if mode not in _RESIZE_MODES:
        c.refuse(f"mode={mode!r}")
    attrs = {"mode": _RESIZE_MODES[mode]}
    if mode == "nearest":
        attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    else:
        attrs["coordinate_transformation_mode"] = "align_corners" if align_corners else \
            "pytorch_half_pixel"
        if mode == "cubic":
            attrs["cubic_coeff_a"] = -0.75
    if scales and all(s > 0 for s in scales) and not align_corners:
        # the scale factor itself sets the sampling positions (PyTorch uses 1/scale then)
        factors = b.const(np.asarray([1.0, 1.0] + [float(v) for v in scales], np.float32))
        return b.op("Resize", [x, "", factors], **attrs)
    head = b.op("Slice", [b.op("Shape", [x]), b.ints([0]), b.ints([2]), b.ints([0])])
    sizes = b.op("Concat", [head, c.shape_tensor(list(output_size))], axis=0)
    return b.op("Resize", [x, "", "", sizes], **attrs)


def output_size_of(shape, size, scale_factors):
    """PyTorch's ``upsample_compute_output_size``."""
    if size is not None:
        return tuple(int(s) for s in size)
    return tuple(int(math.floor(float(s) * f)) for s, f in zip(shape[2:], scale_factors))


def check_dtype(x, mode):
    kind = "nearest" if mode.startswith("nearest") else "linear"
    if x.dtype.category != _dtype.FLOATING and not (kind == "nearest" and
                                                    x.dtype is _dtype.uint8):
        title = {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                 "bool": "Bool", "uint8": "Byte", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble"}.get(x.dtype.name, x.dtype.name)
        raise NotImplementedError(f"\"compute_indices_weights_{kind}\" not implemented for "
                                  f"'{title}'")


def upsample(input, output_size, mode, align_corners=False, scales=None):
    """The op with PyTorch's argument checks (``F.interpolate`` resolves the arguments)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"upsample(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    output_size = tuple(int(s) for s in output_size)
    check_sizes(input._shape, output_size)
    check_dtype(input, mode)
    scales = tuple(0.0 if s is None else float(s) for s in (scales or (None,) * len(output_size)))
    return upsample_op(input, output_size, mode, bool(align_corners), scales)
