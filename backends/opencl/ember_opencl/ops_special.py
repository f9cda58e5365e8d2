"""Kernels of the special functions (``ember.ops.elementwise.special``): the bodies of
``math_special`` launched through the elementwise template, like ``ops_elementwise``."""
from __future__ import annotations

from ember import Tensor
from ember.runtime import broadcast_shapes
from ember.runtime import dtypes as D

from . import math_special as MS
from .codegen import run


def _unary(backend, body):
    def kernel(x, compute):
        st, q = backend._sq(x.device)
        out = backend._new(st, x._shape, compute, x.device)
        return run(st, q, body, out, (x,), (compute,), compute, compute)
    return kernel


def _unary_(backend, body):
    def kernel(x, compute):  # (compute is x's dtype: the op layer refused any other)
        st, q = backend._sq(x.device)
        return run(st, q, body, x, (x,), (x.dtype,), x.dtype, x.dtype)
    return kernel


def _binary(backend, body):
    def kernel(a, b, compute):
        t = a if isinstance(a, Tensor) else b
        st, q = backend._sq(t.device)
        shape = broadcast_shapes(*(x._shape for x in (a, b) if isinstance(x, Tensor)))
        out = backend._new(st, shape, compute, t.device)
        return run(st, q, body, out, (a, b), (compute, compute), compute, compute)
    return kernel


def _polygamma(backend):
    def kernel(n, x, compute):
        st, q = backend._sq(x.device)
        out = backend._new(st, x._shape, compute, x.device)
        return run(st, q, MS.POLYGAMMA, out, (x,), (compute,), compute, compute,
                   params=((n, D.int64),))
    return kernel


def register(backend):
    K = backend.kernels.register
    for name, body in MS.UNARY.items():
        K(name, _unary(backend, body))
        if name in ("i0", "sinc"):
            K(name + "_", _unary_(backend, body))
    for name, body in MS.BINARY.items():
        K(name, _binary(backend, body))
    K("polygamma", _polygamma(backend))
