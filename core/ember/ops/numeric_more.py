"""Numeric functions of torch's surface written as compositions of ember ops (issue #25):
differences and integrals (``diff``, ``trapezoid``, ``cumulative_trapezoid``), scans
(``cummax``/``cummin`` as a log-depth scan of (value, index) pairs, ``logcumsumexp``),
products (``kron``, ``inner``, ``trace``), ``rot90``, ``renorm``, statistics (``cov``,
``corrcoef``) and elementwise extras (``heaviside``, ``gcd``, ``lcm``, ``ldexp``, ``sinc``,
``float_power``, ``rsub``). Every backend runs them; autograd sees through them."""
from __future__ import annotations

import math
from collections import namedtuple

from .. import _dtype
from .._tensor import Tensor

__all__ = ["diff", "heaviside", "gcd", "lcm", "ldexp", "float_power", "rsub", "trace",
           "kron", "inner", "rot90", "renorm", "trapezoid", "trapz", "cumulative_trapezoid",
           "cov", "corrcoef", "logcumsumexp", "cummax", "cummin", "gradient"]

_ValuesIndices = {}


def _result(name):
    if name not in _ValuesIndices:
        _ValuesIndices[name] = namedtuple(name, ["values", "indices"])
    return _ValuesIndices[name]


def _tensor(x, fn, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _ember():
    import ember
    return ember


def _dim(dim, ndim, fn):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{fn}: Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim % n


# -- differences and integrals -----------------------------------------------------------------
def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along ``dim`` (logical xor for bool)."""
    _tensor(input, "diff")
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    em = _ember()
    dim = _dim(dim, input.ndim, "diff")
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


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along ``dim`` with spacing ``dx`` or sample points ``x``."""
    _tensor(y, "trapezoid", "y")
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments: x and dx")
    dim = _dim(dim, y.ndim, "trapezoid")
    length = y.shape[dim]
    if length == 0:
        return y.sum(dim) * 0
    mid = (y.narrow(dim, 1, length - 1) + y.narrow(dim, 0, length - 1)) / 2
    if isinstance(x, Tensor):
        spacing = diff(x, dim=dim if x.ndim == y.ndim else -1)
        if x.ndim == 1 and y.ndim > 1:
            spacing = spacing.reshape([-1 if k == dim else 1 for k in range(y.ndim)])
        return (mid * spacing).sum(dim)
    step = 1.0 if (x is None and dx is None) else (dx if dx is not None else x)
    return mid.sum(dim) * step


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along ``dim`` (one element shorter)."""
    _tensor(y, "cumulative_trapezoid", "y")
    dim = _dim(dim, y.ndim, "cumulative_trapezoid")
    length = y.shape[dim]
    if length == 0:
        return y
    mid = (y.narrow(dim, 1, length - 1) + y.narrow(dim, 0, length - 1)) / 2
    if isinstance(x, Tensor):
        spacing = diff(x, dim=dim if x.ndim == y.ndim else -1)
        if x.ndim == 1 and y.ndim > 1:
            spacing = spacing.reshape([-1 if k == dim else 1 for k in range(y.ndim)])
        return (mid * spacing).cumsum(dim)
    step = 1.0 if (x is None and dx is None) else (dx if dx is not None else x)
    return (mid * step).cumsum(dim)


# -- scans --------------------------------------------------------------------------------------
def _shift_fill(t, dim, k, fill):
    """``t`` shifted by ``k`` along ``dim`` (toward higher indices), ``fill`` coming in."""
    em = _ember()
    length = t.shape[dim]
    head_shape = list(t.shape)
    head_shape[dim] = min(k, length)
    head = em.full(head_shape, fill, dtype=t.dtype, device=t.device)
    if k >= length:
        return head
    return em.cat([head, t.narrow(dim, 0, length - k)], dim)


def _cum_extreme(input, dim, take_new, fn):
    """Inclusive scan of (value, index) pairs: a later pair wins where ``take_new(new, old)``
    (ties go to the later index, as in PyTorch; NaN propagates and sticks)."""
    _tensor(input, fn)
    em = _ember()
    if input.ndim == 0:
        return _result(fn)(input.clone(), em.zeros((), dtype=_dtype.int64, device=input.device))
    dim = _dim(dim, input.ndim, fn)
    length = input.shape[dim]
    shape = [1] * input.ndim
    shape[dim] = length
    idx = em.arange(length, device=input.device).reshape(shape).expand(*input.shape)
    values, index = input.detach(), idx
    step = 1
    while step < length:
        prev_v = _shift_fill(values, dim, step, 0)
        prev_i = _shift_fill(index, dim, step, -1)
        has_prev = prev_i.ge(0)
        keep_prev = has_prev & ~take_new(values, prev_v)
        values = em.where(keep_prev, prev_v, values)
        index = em.where(keep_prev, prev_i, index)
        step *= 2
    index = index.contiguous()
    # the values as a gather of the input, so autograd routes the gradient to the argmax
    return _result(fn)(input.gather(dim, index), index)


def _floating_nan(t):
    return t.ne(t) if t.is_floating_point() else t.ne(t)  # NaN != NaN; never true for ints


def cummax(input, dim):
    """Running maximum along ``dim`` and the index where it was (last) reached."""
    return _cum_extreme(input, dim, lambda new, old: new.ge(old) | _floating_nan(new) &
                        ~_floating_nan(old), "cummax")


def cummin(input, dim):
    """Running minimum along ``dim`` and the index where it was (last) reached."""
    return _cum_extreme(input, dim, lambda new, old: new.le(old) | _floating_nan(new) &
                        ~_floating_nan(old), "cummin")


def logcumsumexp(input, dim):
    """``log(cumsum(exp(input)))`` along ``dim``, shifted by the running maximum for range."""
    _tensor(input, "logcumsumexp")
    em = _ember()
    if input.ndim == 0:
        return input.clone()
    dim = _dim(dim, input.ndim, "logcumsumexp")
    if input.shape[dim] == 0:
        return input.clone()
    shift = cummax(input.detach(), dim).values
    shift = em.where(shift.isinf(), em.zeros_like(shift), shift)
    # terms exp(x_j - m_i) for j <= i never overflow: m_i is their running maximum
    x = input.unsqueeze(dim + 1)                          # (..., L, 1, ...)
    m = shift.unsqueeze(dim)                              # (..., 1, L, ...)
    length = input.shape[dim]
    mask_shape = [1] * (input.ndim + 1)
    mask_shape[dim], mask_shape[dim + 1] = length, length
    j = em.arange(length, device=input.device)
    upper = j.reshape(-1, 1).le(j.reshape(1, -1)).reshape(mask_shape)  # j <= i
    terms = em.where(upper, (x - m).exp(), em.zeros((), dtype=input.dtype, device=input.device))
    return terms.sum(dim).log() + shift


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Second-order accurate central differences inside, ``edge_order``-accurate one-sided
    differences at the ends, along each of ``dim`` (every dim when None); ``spacing`` a number,
    one per dim, or one coordinate tensor per dim."""
    _tensor(input, "gradient")
    em = _ember()
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got "
                           f"{edge_order}")
    dims = list(range(input.ndim)) if dim is None else \
        ([dim] if isinstance(dim, int) else list(dim))
    dims = [d % input.ndim for d in dims]
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


# -- products -----------------------------------------------------------------------------------
def trace(input):
    """The sum of the main diagonal of a 2-D tensor."""
    _tensor(input, "trace")
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    out = input.diagonal().sum()
    return out


def kron(input, other):
    """The Kronecker product: blocks ``input[i] * other``."""
    _tensor(input, "kron")
    _tensor(other, "kron", "other")
    nd = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (nd - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (nd - other.ndim) + tuple(other.shape))
    a_shape, b_shape = [], []
    for sa, sb in zip(a.shape, b.shape):
        a_shape += [sa, 1]
        b_shape += [1, sb]
    prod = a.reshape(a_shape) * b.reshape(b_shape)
    return prod.reshape([sa * sb for sa, sb in zip(a.shape, b.shape)])


def inner(input, other):
    """Sum of products over the last dims: shape ``input.shape[:-1] + other.shape[:-1]``."""
    _tensor(input, "inner")
    _tensor(other, "inner", "other")
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    k = input.shape[-1]
    out = input.reshape(-1, k) @ other.reshape(-1, k).t()
    return out.reshape(tuple(input.shape[:-1]) + tuple(other.shape[:-1]))


def rot90(input, k=1, dims=(0, 1)):
    """Rotation by 90 degrees ``k`` times in the plane of ``dims`` (first toward second)."""
    _tensor(input, "rot90")
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0, d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


def renorm(input, p, dim, maxnorm):
    """Each sub-tensor along ``dim`` scaled down to p-norm ``maxnorm`` where it exceeds it."""
    _tensor(input, "renorm")
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported, got p={p}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} "
                           f"dimensions")
    em = _ember()
    dim = _dim(dim, input.ndim, "renorm")
    others = [d for d in range(input.ndim) if d != dim]
    norm = input.abs().pow(p).sum(others, keepdim=True).pow(1.0 / p) if p != float("inf") \
        else input.abs().amax(others, keepdim=True)
    factor = em.where(norm > maxnorm, maxnorm / (norm + 1e-7),
                      em.ones((), dtype=input.dtype, device=input.device))
    return input * factor


# -- statistics ---------------------------------------------------------------------------------
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) over the columns (observations)."""
    _tensor(input, "cov")
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not x.is_floating_point() and not x.is_complex():
        x = x.to(_dtype.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.ndim > 1 or fweights.shape[0] != n_obs:
            raise RuntimeError(f"cov(): expected fweights to have one dimension and the same "
                               f"number of observations ({n_obs}), got {list(fweights.shape)}")
        if fweights.is_floating_point():
            raise RuntimeError("cov(): expected fweights to have integral dtype")
        w = fweights
    if aweights is not None:
        if aweights.ndim > 1 or aweights.shape[0] != n_obs:
            raise RuntimeError(f"cov(): expected aweights to have one dimension and the same "
                               f"number of observations ({n_obs}), got {list(aweights.shape)}")
        if not aweights.is_floating_point():
            raise RuntimeError("cov(): expected aweights to have floating point dtype")
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = float(n_obs)
        avg = x.mean(1)
    else:
        w = w.to(x.dtype)
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
    if w is None:
        norm = w_sum - correction
    elif correction == 0:
        norm = w_sum
    elif aweights is None:
        norm = w_sum - correction
    else:
        norm = w_sum - correction * (w * aweights.to(x.dtype)).sum() / w_sum
    if isinstance(norm, float):
        norm = max(norm, 0.0)
    else:
        norm = norm.clamp_min(0)
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = xw @ xm.t().conj() if x.is_complex() else xw @ xm.t()
    out = c / norm
    return out.squeeze() if input.ndim < 2 else out


def corrcoef(input):
    """Pearson correlation coefficients of the rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal()
    std = d.sqrt()
    out = c / std.unsqueeze(1) / std.unsqueeze(0)
    return out.clamp(-1, 1)


# -- elementwise --------------------------------------------------------------------------------
def heaviside(input, values):
    """0 below zero, 1 above, ``values`` at zero."""
    _tensor(input, "heaviside")
    em = _ember()
    if not isinstance(values, Tensor):
        values = em.tensor(values, dtype=input.dtype, device=input.device)
    if values.dtype is not input.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different "
                           f"dtypes: got {input.dtype} and {values.dtype}")
    if input.is_complex():
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    one = em.ones((), dtype=input.dtype, device=input.device)
    zero = em.zeros((), dtype=input.dtype, device=input.device)
    return em.where(input.eq(0), values, em.where(input.gt(0), one, zero))


_EUCLID_STEPS = {"int8": 12, "uint8": 13, "int16": 24, "int32": 47, "int64": 93}


def gcd(input, other):
    """The greatest common divisor, elementwise (integers; gcd(0, 0) = 0)."""
    _tensor(input, "gcd")
    em = _ember()
    if not isinstance(other, Tensor):
        other = em.tensor(other, device=input.device)
    dt = em.result_type(input, other)
    if dt.is_floating_point or dt.is_complex or dt is _dtype.bool_:
        raise RuntimeError(f"\"gcd_cpu\" not implemented for '{_title(dt)}'")
    a, b = em.broadcast_tensors(input.to(dt).abs(), other.to(dt).abs())
    zero = em.zeros((), dtype=dt, device=a.device)
    one = em.ones((), dtype=dt, device=a.device)
    # Euclid's algorithm: a fixed number of steps bounds the longest chain (Fibonacci pairs)
    for _ in range(_EUCLID_STEPS.get(dt.name, 93)):
        live = b.ne(0)
        r = em.where(live, em.remainder(a, em.where(live, b, one)), zero)
        a, b = em.where(live, b, a), r
    return a


def lcm(input, other):
    """The least common multiple, elementwise (integers; 0 when either is 0)."""
    em = _ember()
    if not isinstance(other, Tensor):
        other = em.tensor(other, device=input.device)
    g = gcd(input, other)
    dt = g.dtype
    safe = em.where(g.eq(0), em.ones((), dtype=dt, device=g.device), g)
    return (input.to(dt) // safe * other.to(dt)).abs()


def _title(dt):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}.get(
        dt.name, dt.name)


def ldexp(input, other):
    """``input * 2 ** other``."""
    _tensor(input, "ldexp")
    em = _ember()
    if not isinstance(other, Tensor):
        other = em.tensor(other, device=input.device)
    if not input.is_floating_point() and not input.is_complex():
        input = input.to(_dtype.get_default_dtype())
    return input * em.pow(2.0, other.to(input.dtype if input.is_floating_point() else
                                        _dtype.get_default_dtype()))


def float_power(input, exponent):
    """``pow`` in double precision (complex128 when either operand is complex)."""
    em = _ember()
    ops = [t for t in (input, exponent) if isinstance(t, Tensor)]
    if not ops:
        raise TypeError("float_power(): expected at least one Tensor argument")
    cplx = any(t.is_complex() for t in ops) or any(isinstance(t, complex)
                                                    for t in (input, exponent))
    dt = _dtype.complex128 if cplx else _dtype.float64
    a = input.to(dt) if isinstance(input, Tensor) else input
    b = exponent.to(dt) if isinstance(exponent, Tensor) else exponent
    return em.pow(a, b)


def rsub(input, other, alpha=1):
    """``other - alpha * input``."""
    _tensor(input, "rsub")
    em = _ember()
    return em.sub(other, input, alpha=alpha) if isinstance(other, Tensor) else \
        em.sub(em.tensor(other, dtype=em.result_type(input, other), device=input.device),
               input, alpha=alpha)


def _float_power_(self, exponent):
    if self.dtype is not _dtype.float64 and self.dtype is not _dtype.complex128:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype} but the "
                           f"operation's result requires dtype Double")
    return self.copy_(float_power(self, exponent))


def _inplace(fn):
    def method(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))
    method.__name__ = fn.__name__ + "_"
    return method


for _name in ("diff", "heaviside", "gcd", "lcm", "ldexp", "float_power", "trace",
              "kron", "inner", "rot90", "renorm", "cov", "corrcoef", "logcumsumexp", "cummax",
              "cummin"):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, globals()[_name])
for _name in ("heaviside", "gcd", "lcm", "ldexp", "renorm"):
    if not hasattr(Tensor, _name + "_"):
        setattr(Tensor, _name + "_", _inplace(globals()[_name]))
if not hasattr(Tensor, "float_power_"):
    Tensor.float_power_ = _float_power_
del _name
