"""Kernels of the special functions (``ember.ops.elementwise.special``): the bodies of
``math_special`` launched through the elementwise template, like ``ops_elementwise``."""
from __future__ import annotations

from ember import Tensor
from ember.kit.binding import bind, bind_with
from ember.runtime import dtypes as D
from ember.runtime import shape_of

from . import math_special as MS
from .codegen import run
from .ops_elementwise import broadcast_shape


def unary(be, body, x, compute):
    st, q = be.state_queue(x.device)
    out = be.new_tensor(st, shape_of(x), compute, x.device)
    return run(st, q, body, out, (x,), (compute,), compute, compute)


def unary_(be, body, x, compute):  # (compute is x's dtype: the op layer refused any other)
    st, q = be.state_queue(x.device)
    return run(st, q, body, x, (x,), (x.dtype,), x.dtype, x.dtype)


def binary(be, body, a, b, compute):
    t = a if isinstance(a, Tensor) else b
    st, q = be.state_queue(t.device)
    out = be.new_tensor(st, broadcast_shape(a, b), compute, t.device)
    return run(st, q, body, out, (a, b), (compute, compute), compute, compute)


def polygamma(be, n, x, compute):
    st, q = be.state_queue(x.device)
    out = be.new_tensor(st, shape_of(x), compute, x.device)
    return run(st, q, MS.POLYGAMMA, out, (x,), (compute,), compute, compute,
               params=((n, D.int64),))


def register(backend):
    for name, body in MS.UNARY.items():
        bind_with(backend, name, unary, body)
        if name in ("i0", "sinc"):
            bind_with(backend, name + "_", unary_, body)
    for name, body in MS.BINARY.items():
        bind_with(backend, name, binary, body)
    bind(backend, {"polygamma": polygamma})
