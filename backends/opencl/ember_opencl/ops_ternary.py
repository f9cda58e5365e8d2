"""Ternary elementwise kernels (``ember.ops.elementwise.ternary``): addcmul, addcdiv, lerp as
bodies of the elementwise template, in PyTorch's association order (no fused multiply-add:
the template compiles with FP_CONTRACT OFF)."""
from __future__ import annotations

from functools import partial

from .codegen import Body, run
from .ops_elementwise import _no_overlap, _shape

ADDCMUL = Body("addcmul", "r = x0 + p0 * x1 * x2;", kinds="fi")
ADDCDIV = Body("addcdiv", "r = x0 + p0 * x1 / x2;", kinds="f")
LERP = Body("lerp", "const CT d = x1 - x0; "
                    "r = fabs(x2) < (CT)0.5 ? x0 + x2 * d : x1 - d * ((CT)1 - x2);", kinds="f")


def addc(backend, body, inplace, x, a, b, value, compute):
    st, q = backend._sq(x.device)
    if inplace:
        out, a, b = x, _no_overlap(x, a), _no_overlap(x, b)
    else:
        out = backend._new(st, _shape(x, a, b), compute, x.device)
    return run(st, q, body, out, (x, a, b), (compute,) * 3, compute, compute,
               params=((value, compute),))


def lerp(backend, inplace, x, end, weight, compute):
    st, q = backend._sq(x.device)
    if inplace:
        out, end, weight = x, _no_overlap(x, end), _no_overlap(x, weight)
    else:
        out = backend._new(st, _shape(x, end, weight), compute, x.device)
    return run(st, q, LERP, out, (x, end, weight), (compute,) * 3, compute, compute)


def register(backend):
    K = backend.kernels.register
    for name, body in (("addcmul", ADDCMUL), ("addcdiv", ADDCDIV)):
        K(name, partial(addc, backend, body, False))
        K(name + "_", partial(addc, backend, body, True))
    K("lerp", partial(lerp, backend, False))
    K("lerp_", partial(lerp, backend, True))
