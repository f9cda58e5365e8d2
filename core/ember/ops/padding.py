"""Padding ops behind ``F.pad``, each its own node as in PyTorch:
``constant_pad_nd(Tensor self, int[] pad, Scalar value)`` (``ConstantPadNdBackward0``),
``reflection_pad(Tensor self, int[] pad)`` and ``replication_pad(Tensor self, int[] pad)``
(``ReflectionPad1DBackward0``, ``ReplicationPad2DBackward0``, … by the number of padded dims).
``pad = (left_last, right_last, left_prev, …)``; a negative pad crops. Their composites are
ember ops (a ``cat`` with filled blocks; an ``index_select`` of source positions per dim), so
every backend runs them; array backends have a kernel for the constant pad.
``nn/_padding.py`` checks ``F.pad``'s arguments and calls these."""
from __future__ import annotations

import numpy as np

from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from . import _grad, _tangents
from .factories import from_numpy
from .indexing import index_add_op, index_select_op
from .shape import cat

__all__: list = []


def padded_shape(shape, pad):
    out = list(shape)
    for k in range(len(pad) // 2):
        out[len(shape) - 1 - k] += pad[2 * k] + pad[2 * k + 1]
    return tuple(out)


def _pad_meta(self, pad, *rest):
    return padded_shape(self._shape, pad), self.dtype


def crop(x, dim, left, right):
    """``(x, left, right)`` with a negative pad's elements cropped off ``x`` along ``dim`` and
    that pad made 0 (constant and circular padding crop before they pad)."""
    n = x._shape[dim]
    if left < 0:
        x, n, left = x.narrow(dim, -left, n + left), n + left, 0
    if right < 0:
        x, right = x.narrow(dim, 0, n + right), 0
    return x, left, right


# -- constant -----------------------------------------------------------------------------------
def _constant_pad(self, pad, value):
    out = self
    for k in range(len(pad) // 2):
        dim = self.ndim - 1 - k
        out, left, right = crop(out, dim, pad[2 * k], pad[2 * k + 1])
        if left or right:
            parts = []
            for m in (left, None, right):
                if m is None:
                    parts.append(out)
                elif m:
                    shape = list(out._shape)
                    shape[dim] = m
                    parts.append(out.new_full(shape, value))
            out = cat(parts, dim)
    return out.clone() if out._storage is self._storage else out   # a new tensor, as torch's


def _constant_pad_backward(ctx, g, self, pad, value):
    # the padding cropped off again (and a crop padded with zeros)
    return (constant_pad_nd_op(g, tuple(-p for p in pad), 0),)


constant_pad_nd_op = define("constant_pad_nd(Tensor self, int[] pad, Scalar value) -> Tensor",
                            meta=_pad_meta, composite=_constant_pad,
                            derivative=Derivative(_constant_pad_backward, complex_ok=True))


def _constant_pad_jvp(ctx, tangents, self, pad, value):
    # affine in self: the padding is constant, so its tangent is 0 whatever the value
    t = tangents[0]
    return None if t is None else constant_pad_nd_op(t, pad, 0)


constant_pad_nd_op.def_jvp(_constant_pad_jvp)


def _onnx_pads(c, pad):
    rank = len(c.meta(0)[0])
    begins, ends = [0] * rank, [0] * rank
    for k in range(len(pad) // 2):
        begins[rank - 1 - k], ends[rank - 1 - k] = pad[2 * k], pad[2 * k + 1]
    return begins + ends


@constant_pad_nd_op.def_onnx
def _constant_pad_onnx(b, c, x, pad, value, *rest):
    return b.op("Pad", [x, b.ints(_onnx_pads(c, pad)), c.scalar(value)], mode="constant")


# -- reflect, replicate -------------------------------------------------------------------------
def pad_index(n, left, right, mode, device):
    """Source index of each padded position along a dim of size ``n`` (reflect, replicate,
    circular); a negative pad reads only part of the positions 0 .. n-1."""
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


def _steps(shape, pad):
    """(dim, size before, left, right) of each padded dim, in the order the composite pads."""
    cur, steps = list(shape), []
    for k in range(len(pad) // 2):
        left, right = pad[2 * k], pad[2 * k + 1]
        dim = len(shape) - 1 - k
        if left or right:
            steps.append((dim, cur[dim], left, right))
            cur[dim] += left + right
    return steps


def _index_pad_op(name, mode, camel, onnx_mode):
    def composite(self, pad):
        out = self
        for dim, n, left, right in _steps(self._shape, pad):
            out = index_select_op(out, dim, pad_index(n, left, right, mode, out.device))
        return out if out is not self else self.clone()

    def backward(ctx, g, self, pad):
        # each index_select's adjoint, last first: the gradient added back to its source
        for dim, n, left, right in reversed(_steps(ctx.meta(0)[0], pad)):
            shape = list(g._shape)
            shape[dim] = n
            g = index_add_op(_grad.zeros(tuple(shape), g), dim,
                             pad_index(n, left, right, mode, g.device), g, 1)
        return (g,)

    def onnx(b, c, x, pad, *rest):
        if any(p < 0 for p in pad):
            c.refuse(f"{mode} padding with a negative pad (a crop) has no ONNX Pad form")
        return b.op("Pad", [x, b.ints(_onnx_pads(c, pad))], mode=onnx_mode)

    op = define(f"{name}(Tensor self, int[] pad) -> Tensor", meta=_pad_meta, composite=composite,
                derivative=Derivative(backward, complex_ok=True,
                                      name=lambda self, pad: f"{camel}{len(pad) // 2}DBackward0"))
    op.def_jvp(_tangents.linear(op))
    op.def_onnx(onnx)
    return op


reflection_pad_op = _index_pad_op("reflection_pad", "reflect", "ReflectionPad", "reflect")
replication_pad_op = _index_pad_op("replication_pad", "replicate", "ReplicationPad", "edge")
