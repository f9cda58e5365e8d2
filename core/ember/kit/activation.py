"""Kernels of the activations PyTorch records as one node (``ember.ops.elementwise.
activation_nodes``): glu, log_sigmoid, hardshrink, softshrink, celu — one pass over the data
each where their compositions ran two to four ops. Half precision is computed in float32 and
rounded once, as PyTorch's CPU kernels do."""
from __future__ import annotations

from .binding import bind
from .elementwise import _sigmoid, elu, result
from .linalg import HALF


def _work(be, x):
    a = be.native(x)
    return a, (a.astype(be.xp.float32) if a.dtype in HALF else a)


def glu(be, x, dim):
    a, w = _work(be, x)
    half = w.shape[dim] // 2
    first = w[(slice(None),) * dim + (slice(0, half),)]
    gate = w[(slice(None),) * dim + (slice(half, None),)]
    r = _sigmoid(be, be.xp.ascontiguousarray(gate))
    be.xp.multiply(r, first, out=r)
    return result(be, r, a.dtype, x.device)


def log_sigmoid(be, x):
    # torch's: min(x, 0) - log1p(exp(-|x|)), exact at both tails
    xp = be.xp
    a, w = _work(be, x)
    t = xp.abs(w, out=xp.empty(w.shape, w.dtype))   # (out=: a 0-d input stays an array)
    xp.negative(t, out=t)
    be.ieee(xp.exp, t, t)
    xp.log1p(t, out=t)
    r = xp.minimum(w, 0, out=xp.empty(w.shape, w.dtype))
    xp.subtract(r, t, out=r)
    return result(be, r, a.dtype, x.device)


def hardshrink(be, x, lambd):
    xp = be.xp
    a = be.native(x)
    return result(be, xp.where(xp.abs(a) <= lambd, a.dtype.type(0), a), a.dtype, x.device)


def softshrink(be, x, lambd):
    # x - clip(x, -l, l): x -+ l outside, +0 inside (as torch's kernel), NaN stays NaN
    xp = be.xp
    a, w = _work(be, x)
    r = xp.clip(w, -lambd, lambd, out=xp.empty(w.shape, w.dtype))
    be.ieee(xp.subtract, w, r, r)
    return result(be, r, a.dtype, x.device)


def celu(be, x, alpha):
    return elu(be, x, alpha, 1.0, 1.0 / alpha)


TABLE = {"glu": glu, "log_sigmoid": log_sigmoid, "hardshrink": hardshrink,
         "softshrink": softshrink, "celu": celu}


def register(backend) -> None:
    bind(backend, TABLE)
