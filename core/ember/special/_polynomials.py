"""torch.special's classical orthogonal polynomials and a few Bessel aliases, as compositions.

Each polynomial family is its three-term recurrence run up to the largest degree asked for
(``n`` broadcasts against ``x``, per element); an element keeps the value of its own degree,
and a negative degree gives 0, as torch's; a fractional degree is truncated toward zero, as torch
casts it to an integer. The shifted Chebyshev polynomials are the plain ones
at ``2x - 1``. Written with ember ops: every backend runs them."""
from __future__ import annotations

import math

from .. import _dtype
from .._tensor import Tensor
from ..ops._util import write_out
from ..ops.elementwise.selection import where
from ..ops.elementwise.special import sinc
from ..ops.factories import tensor, zeros_like
from ..ops.views.reshaping import broadcast_tensors

__all__ = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
           "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
           "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
           "laguerre_polynomial_l", "legendre_polynomial_p", "spherical_bessel_j0"]


def _operands(name, x, n):
    if not isinstance(x, Tensor) and not isinstance(n, Tensor):
        raise TypeError(f"{name}(): expected a Tensor for input or n")
    like = x if isinstance(x, Tensor) else n
    if not isinstance(x, Tensor):
        x = tensor(x, device=like.device)
    if not isinstance(n, Tensor):
        n = tensor(n, device=x.device)
    dtype = x.dtype if x.dtype.is_floating_point else _dtype.promote_types(
        x.dtype, _dtype.get_default_dtype())
    if n.dtype.is_floating_point:
        dtype = _dtype.promote_types(dtype, n.dtype)
        n = n.trunc()        # PyTorch casts a floating degree to an integer (toward zero)
    return x.to(dtype), n


def _recurrence(name, x, n, first, step):
    """``p_0 = 1``, ``p_1 = first(x)``, ``p_{k+1} = step(k, x, p_k, p_{k-1})``."""
    x, n = _operands(name, x, n)
    x, n = broadcast_tensors(x, n)
    top = int(n.max().item()) if n.numel() else 0
    out = zeros_like(x)
    prev, cur = x * 0 + 1, first(x)
    out = where(n == 0, prev, out)
    if top >= 1:
        out = where(n == 1, cur, out)
    for k in range(1, top):
        prev, cur = cur, step(k, x, cur, prev)
        out = where(n == k + 1, cur, out)
    return out


def chebyshev_polynomial_t(input, n, *, out=None):
    return _finish(_recurrence("chebyshev_polynomial_t", input, n, lambda x: x,
                               lambda k, x, p, q: 2 * x * p - q), out)


def chebyshev_polynomial_u(input, n, *, out=None):
    return _finish(_recurrence("chebyshev_polynomial_u", input, n, lambda x: 2 * x,
                               lambda k, x, p, q: 2 * x * p - q), out)


def chebyshev_polynomial_v(input, n, *, out=None):
    return _finish(_recurrence("chebyshev_polynomial_v", input, n, lambda x: 2 * x - 1,
                               lambda k, x, p, q: 2 * x * p - q), out)


def chebyshev_polynomial_w(input, n, *, out=None):
    return _finish(_recurrence("chebyshev_polynomial_w", input, n, lambda x: 2 * x + 1,
                               lambda k, x, p, q: 2 * x * p - q), out)


def _shifted(fn):
    def shifted(input, n, *, out=None):
        x, n = _operands(fn.__name__, input, n)
        return fn(2 * x - 1, n, out=out)
    shifted.__name__ = "shifted_" + fn.__name__
    shifted.__doc__ = f"``{fn.__name__}`` at ``2 * input - 1``."
    return shifted


shifted_chebyshev_polynomial_t = _shifted(chebyshev_polynomial_t)
shifted_chebyshev_polynomial_u = _shifted(chebyshev_polynomial_u)
shifted_chebyshev_polynomial_v = _shifted(chebyshev_polynomial_v)
shifted_chebyshev_polynomial_w = _shifted(chebyshev_polynomial_w)


def hermite_polynomial_h(input, n, *, out=None):
    """Physicists' Hermite polynomials."""
    return _finish(_recurrence("hermite_polynomial_h", input, n, lambda x: 2 * x,
                               lambda k, x, p, q: 2 * x * p - 2 * k * q), out)


def hermite_polynomial_he(input, n, *, out=None):
    """Probabilists' Hermite polynomials."""
    return _finish(_recurrence("hermite_polynomial_he", input, n, lambda x: x,
                               lambda k, x, p, q: x * p - k * q), out)


def laguerre_polynomial_l(input, n, *, out=None):
    return _finish(_recurrence("laguerre_polynomial_l", input, n, lambda x: 1 - x,
                               lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1)),
                   out)


def legendre_polynomial_p(input, n, *, out=None):
    return _finish(_recurrence("legendre_polynomial_p", input, n, lambda x: x,
                               lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1)),
                   out)


def spherical_bessel_j0(input, *, out=None):
    """``sin(x) / x`` (1 at 0, 0 at +-inf as in scipy and PyTorch): the normalized sinc at
    ``x / pi``."""
    x, _ = _operands("spherical_bessel_j0", input, 0)
    return _finish(where(x.isinf(), 0.0, sinc(x / math.pi)), out)


def _finish(result, out):
    if out is None:
        return result
    return write_out(out, result, "special")
