"""Kernels of the fused activation backward ops (``ember.ops.elementwise.backward``).

``threshold_backward`` zeroes the gradient where ``self <= threshold`` (a NaN ``self`` keeps it,
as PyTorch's) by AND-ing its bits with an all-ones/all-zeros mask: exact (+0.0 elsewhere, even
for inf/NaN gradients, as PyTorch's select) and free of the data-dependent branch that
``where`` takes per element (a branch mispredicted on half the elements of a relu mask costs
~10x here).
"""
from __future__ import annotations

from .._fastpath import C as _C
from . import erf32
from .binding import bind

_UINT = {2: "uint16", 4: "uint32", 8: "uint64"}


def threshold_backward(be, grad_output, self, threshold):
    xp = be.xp
    g, x = be.native(grad_output), be.native(self)
    if _C is not None:   # compiled for float host arrays: csrc/activations.c
        r = _C.threshold_backward(g, x, threshold)
        if r is not None:
            return be.wrap(r, grad_output.device)
    drop = xp.less_equal(x, threshold, out=xp.empty(x.shape, dtype=bool))
    ut = xp.dtype(_UINT[g.dtype.itemsize])
    mask = drop.view(xp.uint8).astype(ut)
    mask -= 1                                                # 1 -> 0, 0 -> all ones
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


_SQRT_HALF = 0.7071067811865476        # 1 / sqrt(2)
_INV_SQRT_2PI = 0.3989422804014327     # 1 / sqrt(2 pi)
_BETA = 0.7978845608028654             # sqrt(2 / pi)
_KAPPA = 0.044715


def gelu_backward(be, grad_output, self, approximate):
    """grad * gelu'(x) with two scratch arrays of x's size (three for the tanh form); the
    formula in ops kept four alive."""
    xp = be.xp
    g, x = be.native(grad_output), be.native(self)
    quiet = be.ieee
    r = xp.empty(x.shape, dtype=x.dtype)
    t = xp.empty(x.shape, dtype=x.dtype)
    if approximate == "tanh":
        # 0.5 (1 + tanh u) + 0.5 x (1 - tanh(u)^2) beta (1 + 3 kappa x^2), u = beta (x + kappa x^3)
        xp.multiply(x, x, out=t)                       # x^2
        quiet(xp.multiply, t, 3 * _KAPPA * _BETA, r)
        r += _BETA                                     # u' = beta (1 + 3 kappa x^2)
        quiet(xp.multiply, t, _KAPPA, t)
        t += 1
        quiet(xp.multiply, t, x, t)
        t *= _BETA                                     # u
        xp.tanh(t, out=t)
        r *= x
        quiet(xp.multiply, r, 0.5, r)                  # 0.5 x u'
        s = xp.multiply(t, t, out=xp.empty(x.shape, dtype=x.dtype))  # tanh^2 (one more)
        xp.subtract(1, s, out=s)
        quiet(xp.multiply, r, s, r)                    # 0.5 x u' (1 - tanh^2)
        t += 1
        t *= 0.5
        r += t
    else:
        # Phi(x) + x phi(x) = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
        quiet(xp.multiply, x, _SQRT_HALF, t)
        erf32.erf(be, t, out=t)
        t += 1
        t *= 0.5                                       # Phi(x)
        xp.multiply(x, x, out=r)
        r *= -0.5
        quiet(xp.exp, r, r)
        r *= _INV_SQRT_2PI
        quiet(xp.multiply, r, x, r)                    # x phi(x)
        r += t
    quiet(xp.multiply, r, g, r)
    return be.wrap(r, grad_output.device)


TABLE = {"threshold_backward": threshold_backward, "tanh_backward": tanh_backward,
         "sigmoid_backward": sigmoid_backward, "gelu_backward": gelu_backward}


def register(backend) -> None:
    bind(backend, TABLE)
