"""Kernels of the fused activation backward ops (``ember.ops.elementwise.backward``).

``threshold_backward`` keeps the gradient where ``self > threshold`` by AND-ing its bits with an
all-ones/all-zeros mask: exact (+0.0 elsewhere, even for inf/NaN gradients, as PyTorch's
select) and free of the data-dependent branch that ``where`` takes per element (a branch
mispredicted on half the elements of a relu mask costs ~10x here).
"""
from __future__ import annotations

from .binding import bind

_UINT = {2: "uint16", 4: "uint32", 8: "uint64"}


def threshold_backward(be, grad_output, self, threshold):
    xp = be.xp
    g, x = be.native(grad_output), be.native(self)
    keep = xp.greater(x, threshold, out=xp.empty(x.shape, dtype=bool))
    ut = xp.dtype(_UINT[g.dtype.itemsize])
    mask = keep.view(xp.uint8).astype(ut)
    xp.negative(mask, out=mask)                              # 0 -> 0, 1 -> all ones
    gc = g if g.flags.c_contiguous else g.copy()  # (ascontiguousarray would make 0-d 1-d)
    xp.bitwise_and(mask, gc.view(ut), out=mask)
    return be.wrap(mask.view(g.dtype), grad_output.device)


def tanh_backward(be, grad_output, output):
    xp = be.xp
    g, y = be.native(grad_output), be.native(output)
    r = xp.multiply(y, y, out=xp.empty(y.shape, dtype=y.dtype))
    xp.subtract(1, r, out=r)
    be.ieee(xp.multiply, r, g, r)
    return be.wrap(r, grad_output.device)


def sigmoid_backward(be, grad_output, output):
    xp = be.xp
    g, y = be.native(grad_output), be.native(output)
    r = xp.subtract(1, y, out=xp.empty(y.shape, dtype=y.dtype))
    r *= y
    be.ieee(xp.multiply, r, g, r)
    return be.wrap(r, grad_output.device)


TABLE = {"threshold_backward": threshold_backward, "tanh_backward": tanh_backward,
         "sigmoid_backward": sigmoid_backward}


def register(backend) -> None:
    bind(backend, TABLE)
