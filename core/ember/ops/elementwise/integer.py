"""Integer arithmetic: ``gcd`` and ``lcm``, elementwise — Euclid's algorithm as a fixed number
of masked ember ops (the longest chain for each width is bounded), so every backend runs it."""
from __future__ import annotations

from ... import _dtype
from .._util import _dtype_title, ember_namespace, require_tensor, scalar_beside, tensor_method

__all__ = ["gcd", "lcm"]


_EUCLID_STEPS = {"int8": 12, "uint8": 13, "int16": 24, "int32": 47, "int64": 93}


@tensor_method()
def gcd(input, other):
    """The greatest common divisor, elementwise (integers; gcd(0, 0) = 0)."""
    require_tensor(input, "gcd")
    em = ember_namespace()
    other = scalar_beside(other, input)
    dt = em.result_type(input, other)
    if dt.is_floating_point or dt.is_complex or dt is _dtype.bool_:
        raise RuntimeError(f"\"gcd_cpu\" not implemented for '{_dtype_title(dt)}'")
    a, b = em.broadcast_tensors(input.to(dt).abs(), other.to(dt).abs())
    zero = em.zeros((), dtype=dt, device=a.device)
    one = em.ones((), dtype=dt, device=a.device)
    # Euclid's algorithm: a fixed number of steps bounds the longest chain (Fibonacci pairs)
    for _ in range(_EUCLID_STEPS.get(dt.name, 93)):
        live = b.ne(0)
        r = em.where(live, em.remainder(a, em.where(live, b, one)), zero)
        a, b = em.where(live, b, a), r
    return a


@tensor_method()
def lcm(input, other):
    """The least common multiple, elementwise (integers; 0 when either is 0)."""
    em = ember_namespace()
    other = scalar_beside(other, input)
    g = gcd(input, other)
    dt = g.dtype
    safe = em.where(g.eq(0), em.ones((), dtype=dt, device=g.device), g)
    return (input.to(dt) // safe * other.to(dt)).abs()


@tensor_method()
def gcd_(self, other):
    return self.copy_(gcd(self, other))


@tensor_method()
def lcm_(self, other):
    return self.copy_(lcm(self, other))
