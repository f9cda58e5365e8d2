"""Finite differences and numerical integration along a dim: ``diff``, ``gradient``,
``trapezoid`` (``trapz``) and ``cumulative_trapezoid`` — compositions of ember ops, so every
backend runs them and autograd sees through them."""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
from ._util import ember_namespace, require_tensor, tensor_method

__all__ = ["diff", "gradient", "trapezoid", "trapz", "cumulative_trapezoid"]


@tensor_method()
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim`` (logical xor for bool)."""
    require_tensor(input, "diff")
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    em = ember_namespace()
    dim = _wrap_dim(dim, input.ndim, "diff")
    if n == 0:           # PyTorch: a copy of the input; prepend and append are not joined
        return input.clone()
    parts = [t for t in (prepend, input, append) if t is not None]
    if len(parts) > 1:
        parts = [p if p.ndim == input.ndim else p.expand(
            *[1 if k == dim else s for k, s in enumerate(input.shape)]) for p in parts]
        input = em.cat(parts, dim)
    for _ in range(n):
        length = input.shape[dim]
        if length == 0:
            break
        hi, lo = input.narrow(dim, 1, length - 1), input.narrow(dim, 0, length - 1)
        input = hi.logical_xor(lo) if input.dtype is _dtype.bool_ else hi - lo
    return input


def _trapezoid_parts(y, x, dx, dim):
    """The mean of each pair of neighbours along ``dim`` and the spacing it is multiplied by:
    the differences of the sample points ``x`` (a tensor), else the number ``dx``, ``x`` or 1."""
    length = y.shape[dim]
    mid = (y.narrow(dim, 1, length - 1) + y.narrow(dim, 0, length - 1)) / 2
    if isinstance(x, Tensor):
        spacing = diff(x, dim=dim if x.ndim == y.ndim else -1)
        if x.ndim == 1 and y.ndim > 1:
            spacing = spacing.reshape([-1 if k == dim else 1 for k in range(y.ndim)])
        return mid, spacing
    return mid, 1.0 if (x is None and dx is None) else (dx if dx is not None else x)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim`` with spacing ``dx`` or sample points ``x``."""
    require_tensor(y, "trapezoid", "y")
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: x and dx")
    dim = _wrap_dim(dim, y.ndim, "trapezoid")
    if y.shape[dim] == 0:
        return y.sum(dim) * 0
    mid, spacing = _trapezoid_parts(y, x, dx, dim)
    if isinstance(spacing, Tensor):
        return (mid * spacing).sum(dim)
    return mid.sum(dim) * spacing


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along ``dim`` (one element shorter)."""
    require_tensor(y, "cumulative_trapezoid", "y")
    dim = _wrap_dim(dim, y.ndim, "cumulative_trapezoid")
    if y.shape[dim] == 0:
        return y
    mid, spacing = _trapezoid_parts(y, x, dx, dim)
    return (mid * spacing).cumsum(dim)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Second-order accurate central differences inside, ``edge_order``-accurate one-sided
    differences at the ends, along each of ``dim`` (every dim when None); ``spacing`` a number,
    one per dim, or one coordinate tensor per dim."""
    require_tensor(input, "gradient")
    em = ember_namespace()
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got "
                           f"{edge_order}")
    dims = list(range(input.ndim)) if dim is None else \
        ([dim] if isinstance(dim, int) else list(dim))
    dims = [d % input.ndim for d in dims]
    if spacing is None:              # PyTorch's default: unit spacing
        spacing = 1
    if isinstance(spacing, (int, float)):
        spacing = [spacing] * len(dims)
    spacing = list(spacing)
    if len(spacing) == 1 and len(dims) > 1 and not isinstance(spacing[0], Tensor):
        spacing = spacing * len(dims)
    if len(spacing) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                           f"it's spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {len(spacing)} and a dim argument of "
                           f"length {len(dims)}.")
    x = input if input.is_floating_point() or input.is_complex() else \
        input.to(_dtype.get_default_dtype())
    outs = []
    for d, h in zip(dims, spacing):
        n = x.shape[d]
        if n < edge_order + 1:
            raise RuntimeError(f"torch.gradient expected each dimension size to be at least "
                               f"edge_order+1")
        f = lambda a, b: x.narrow(d, a, b - a)  # noqa: E731 - slices along d
        shape = [1] * x.ndim
        shape[d] = -1
        if isinstance(h, Tensor):
            coords = h.to(x.dtype)
            dx = coords[1:] - coords[:-1]
            a, b = dx[:-1].reshape(shape), dx[1:].reshape(shape)
            interior = (a * a * f(2, n) - b * b * f(0, n - 2) + (b * b - a * a) * f(1, n - 1)) \
                / (a * b * (a + b))
            h0, hn = dx[0], dx[-1]
            if edge_order == 1:
                first = (f(1, 2) - f(0, 1)) / h0
                last = (f(n - 1, n) - f(n - 2, n - 1)) / hn
            else:
                a0, b0 = dx[0], dx[1]
                first = (-(2 * a0 + b0) / (a0 * (a0 + b0)) * f(0, 1) + (a0 + b0) / (a0 * b0) *
                         f(1, 2) - a0 / (b0 * (a0 + b0)) * f(2, 3))
                a1, b1 = dx[-2], dx[-1]
                last = (b1 / (a1 * (a1 + b1)) * f(n - 3, n - 2) - (a1 + b1) / (a1 * b1) *
                        f(n - 2, n - 1) + (a1 + 2 * b1) / (b1 * (a1 + b1)) * f(n - 1, n))
        else:
            interior = (f(2, n) - f(0, n - 2)) / (2.0 * h)
            if edge_order == 1:
                first = (f(1, 2) - f(0, 1)) / h
                last = (f(n - 1, n) - f(n - 2, n - 1)) / h
            else:
                first = (-1.5 * f(0, 1) + 2 * f(1, 2) - 0.5 * f(2, 3)) / h
                last = (0.5 * f(n - 3, n - 2) - 2 * f(n - 2, n - 1) + 1.5 * f(n - 1, n)) / h
        outs.append(em.cat([first, interior, last], d))
    return tuple(outs)
