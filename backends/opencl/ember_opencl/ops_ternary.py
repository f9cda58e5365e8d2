"""Ternary elementwise kernels (``ember.ops.elementwise.ternary``): addcmul, addcdiv, lerp as
bodies of the elementwise template, in PyTorch's association order (no fused multiply-add:
the template compiles with FP_CONTRACT OFF). addcmul and addcdiv are their ops' pointwise rules
(``codegen.rule_body``, the value a parameter); lerp is written here: its rule switches
formulas at ``w < 0.5``, PyTorch's kernels (and the CPU's) at ``|w| < 0.5``."""
from __future__ import annotations

from ember.kit.binding import bind_with

from .codegen import P, X, Body, rule_body, run
from .ops_elementwise import broadcast_shape, no_overlap

ADDCMUL = rule_body("addcmul", "addcmul", X[0], X[1], X[2], P[0], covers="fi")
ADDCDIV = rule_body("addcdiv", "addcdiv", X[0], X[1], X[2], P[0])
LERP = Body("lerp", "const CT d = x1 - x0; "
                    "r = fabs(x2) < (CT)0.5 ? x0 + x2 * d : x1 - d * ((CT)1 - x2);", kinds="f")


def addc(backend, body, inplace, x, a, b, value, compute):
    st, q = backend.state_queue(x.device)
    if inplace:
        out, a, b = x, no_overlap(x, a), no_overlap(x, b)
    else:
        out = backend.new_tensor(st, broadcast_shape(x, a, b), compute, x.device)
    return run(st, q, body, out, (x, a, b), (compute,) * 3, compute, compute,
               params=((value, compute),))


def lerp(backend, inplace, x, end, weight, compute):
    st, q = backend.state_queue(x.device)
    if inplace:
        out, end, weight = x, no_overlap(x, end), no_overlap(x, weight)
    else:
        out = backend.new_tensor(st, broadcast_shape(x, end, weight), compute, x.device)
    return run(st, q, LERP, out, (x, end, weight), (compute,) * 3, compute, compute)


def register(backend):
    for name, body in (("addcmul", ADDCMUL), ("addcdiv", ADDCDIV)):
        bind_with(backend, name, addc, body, False)
        bind_with(backend, name + "_", addc, body, True)
    bind_with(backend, "lerp", lerp, False)
    bind_with(backend, "lerp_", lerp, True)
