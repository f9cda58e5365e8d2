"""Kernels for ``ember.ops.elementwise.ternary`` (addcmul, addcdiv, lerp) on array-module
backends: each evaluates in the compute dtype with PyTorch's association order."""
from __future__ import annotations

from .binding import bind
from .elementwise import into, operand, result


def _addcmul(be, s, a, b, value, dt):
    return s + value * a * b


def _addcdiv(be, s, a, b, value, dt):
    return s + value * a / b


def _lerp(be, s, e, w, dt):
    xp = be.xp
    diff = e - s
    if not hasattr(w, "shape") or w.ndim == 0:
        w = dt.type(w) if not hasattr(w, "shape") else w
        return s + w * diff if abs(w) < 0.5 else e - diff * (1 - w)
    return xp.where(xp.abs(w) < 0.5, s + w * diff, e - diff * (1 - w))


def _three(be, x, a, b, dt):
    return operand(be, x, dt), operand(be, a, dt), operand(be, b, dt)


def _scaled(be, f, x, a, b, value, dt):
    """``f`` (addcmul's or addcdiv's formula) of the operands and ``value`` in numpy dtype dt."""
    return be.ieee(f, be, *_three(be, x, a, b, dt), dt.type(value), dt)


def addcmul(be, x, a, b, value, compute):
    dt = compute.np
    return result(be, _scaled(be, _addcmul, x, a, b, value, dt), dt, x.device)


def addcmul_(be, x, a, b, value, compute):
    return into(be, x, _scaled(be, _addcmul, x, a, b, value, compute.np))


def addcdiv(be, x, a, b, value, compute):
    dt = compute.np
    return result(be, _scaled(be, _addcdiv, x, a, b, value, dt), dt, x.device)


def addcdiv_(be, x, a, b, value, compute):
    return into(be, x, _scaled(be, _addcdiv, x, a, b, value, compute.np))


def lerp(be, x, end, weight, compute):
    dt = compute.np
    return result(be, be.ieee(_lerp, be, *_three(be, x, end, weight, dt), dt), dt, x.device)


def lerp_(be, x, end, weight, compute):
    dt = compute.np
    return into(be, x, be.ieee(_lerp, be, *_three(be, x, end, weight, dt), dt))


TABLE = {"addcmul": addcmul, "addcmul_": addcmul_, "addcdiv": addcdiv, "addcdiv_": addcdiv_,
         "lerp": lerp, "lerp_": lerp_}


def register(backend) -> None:
    bind(backend, TABLE)
