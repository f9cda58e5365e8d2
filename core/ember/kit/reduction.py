"""Reduction and scan kernels for array-module backends.

The op layer (``ember.ops.reduction``) has validated the arguments and resolved them: ``dim`` is
a sorted tuple of the axes to reduce (``()`` for a 0-d input), ``dtype`` is the result dtype.
Half-precision inputs are accumulated in float32, as PyTorch does. Families that differ only in
the xp function they call (sum/prod/nansum, amax/amin, ...) share one kernel: the rows at the
bottom name the function.
"""
from __future__ import annotations

import math

from .binding import bind, bind_with
from .linalg import HALF
from .row_reduce import row_max, row_sum


def _acc(xp, dt):
    """The dtype to compute in for result dtype ``dt``."""
    return xp.dtype(xp.float32) if dt in HALF else dt


def _result(be, r, dt, dev):
    # C order, as PyTorch's results are: xp keeps a transposed input's layout in scans and
    # softmax, and then ``.view()`` of the result would fail
    return be.wrap(be.xp.asarray(r, dtype=dt, order="C"), dev)


def _count(shape, dims):
    return math.prod(shape[d] for d in dims)


# -- sum-like -------------------------------------------------------------------------------------
def sum_like(be, f, x, dim, keepdim, dtype):
    """``f`` = xp.sum / xp.prod / xp.nansum, accumulated in float32 for half precision.
    (``be.ieee`` runs it without IEEE warnings: cheaper than ``xp.errstate``'s context.)"""
    xp = be.xp
    dt = dtype.np
    r = be.ieee(f, be.native(x), dim, _acc(xp, dt), None, keepdim)
    return _result(be, r, dt, x.device)


def _mean(a, dim, keepdim, work):
    # sum / n rather than xp.mean: an empty reduction gives nan without a warning
    return a.sum(axis=dim, keepdims=keepdim, dtype=work) / _count(a.shape, dim)


def mean(be, x, dim, keepdim, dtype):
    dt = dtype.np
    r = be.ieee(_mean, be.native(x), dim, keepdim, _acc(be.xp, dt))
    return _result(be, r, dt, x.device)


def var(be, x, dim, correction, keepdim):
    xp = be.xp
    a = be.native(x)
    work = _acc(xp, a.dtype)
    n = _count(a.shape, dim)
    with xp.errstate(all="ignore"):
        m = a.sum(axis=dim, keepdims=True, dtype=work) / n
        d = xp.subtract(a, m, dtype=work)
        sq = d.real * d.real + d.imag * d.imag if d.dtype.kind == "c" else d * d
        r = sq.sum(axis=dim, keepdims=keepdim) / max(0, n - correction)
    return _result(be, r, a.real.dtype, x.device)


# -- extrema ----------------------------------------------------------------------------------------
def extreme(be, f, x, dim, keepdim):
    """``f`` = xp.amax / xp.amin."""
    a = be.native(x)
    return _result(be, f(a, axis=dim, keepdims=keepdim), a.dtype, x.device)


def _first_arg(be, f, a, axis, keepdims):
    """``f(a, axis, keepdims)`` (xp.argmax / argmin) with numpy's and PyTorch's rule: the first
    of equal extremes, and the first NaN where there is one. Host arrays: ``f`` itself. cupy's
    reduction may return a later NaN (seen on an H200), so on a device the first position is
    taken explicitly: the smallest index whose value is the extreme (or NaN)."""
    if be.values_on_host:
        return f(a, axis=axis, keepdims=keepdims)
    xp = be.xp
    shape = a.shape
    if axis is None:
        a, axis = a.reshape(-1), 0
    n = a.shape[axis]
    if a.dtype.kind == "f":
        nan = xp.isnan(a)
        pick = xp.amax if f.__name__ == "argmax" else xp.amin
        v = pick(xp.where(nan, 0, a), axis=axis, keepdims=True)
        hit = xp.where(nan.any(axis=axis, keepdims=True), nan, a == v)
    else:
        i = f(a, axis=axis, keepdims=True)
        hit = a == xp.take_along_axis(a, i, axis=axis)
    at = [1] * a.ndim
    at[axis] = n
    pos = xp.arange(n, dtype=xp.int64).reshape(at)
    r = xp.where(hit, pos, n).min(axis=axis, keepdims=keepdims)
    if keepdims and len(shape) != r.ndim:    # axis=None keeps every dim as 1
        r = r.reshape((1,) * len(shape))
    return r


def extreme_dim(be, arg, x, dim, keepdim):
    """max/min along ``dim`` with indices; ``arg`` = xp.argmax / xp.argmin."""
    xp = be.xp
    a = be.native(x)
    if a.ndim == 0:
        return be.wrap(a.copy(), x.device), be.wrap(xp.zeros((), xp.int64), x.device)
    i = _first_arg(be, arg, a, dim, True)
    v = xp.take_along_axis(a, i, axis=dim)
    if not keepdim:
        i, v = xp.squeeze(i, axis=dim), xp.squeeze(v, axis=dim)
    return _result(be, v, a.dtype, x.device), _result(be, i, xp.dtype(xp.int64), x.device)


def arg_extreme(be, f, x, dim, keepdim):
    """``f`` = xp.argmax / xp.argmin."""
    xp = be.xp
    r = _first_arg(be, f, be.native(x), dim, keepdim)
    return _result(be, r, xp.dtype(xp.int64), x.device)


def logical(be, f, x, dim, keepdim, dtype):
    """``f`` = xp.all / xp.any."""
    return _result(be, f(be.native(x), axis=dim, keepdims=keepdim), dtype.np, x.device)


# -- norms ------------------------------------------------------------------------------------------
def vector_norm(be, x, ord, dim, keepdim):
    xp = be.xp
    a = be.native(x)
    real = a.real.dtype
    m = xp.abs(a).astype(_acc(xp, real), copy=False)
    kw = {"axis": dim, "keepdims": keepdim}
    with xp.errstate(all="ignore"):
        if ord == math.inf:
            r = xp.amax(m, **kw)
        elif ord == -math.inf:
            r = xp.amin(m, **kw)
        elif ord == 0:
            r = xp.sum(m != 0, dtype=m.dtype, **kw)
        elif ord == 1:
            r = xp.sum(m, **kw)
        elif ord == 2:
            r = xp.sqrt(xp.sum(m * m, **kw))
        else:
            r = xp.sum(m ** ord, **kw) ** (1.0 / ord)
    return _result(be, r, real, x.device)


# -- scans ------------------------------------------------------------------------------------------
def scan(be, f, x, dim, dtype):
    """``f`` = xp.cumsum / xp.cumprod."""
    xp = be.xp
    dt = dtype.np
    a = be.native(x)
    with xp.errstate(all="ignore"):
        r = f(a.reshape(1) if a.ndim == 0 else a, axis=dim, dtype=_acc(xp, dt))
    return _result(be, r.reshape(a.shape), dt, x.device)


# -- softmax ----------------------------------------------------------------------------------------
def softmax(be, log, x, dim, dtype):
    """softmax (``log`` False) or log_softmax (True) along ``dim``."""
    xp = be.xp
    dt = dtype.np
    a = be.native(x)
    if a.size == 0:
        return be.wrap(xp.empty(a.shape, dtype=dt), x.device)
    s = a.reshape(1) if a.ndim == 0 else a
    # be.ieee: one switch of numpy's error state for the whole computation (xp.errstate's
    # context manager costs more than a small softmax itself)
    r = be.ieee(_softmax, xp, s, dim, log, _acc(xp, dt))
    return _result(be, r.reshape(a.shape), dt, x.device)


def _line_sum(xp, v, dim):
    """``v.sum(axis=dim, keepdims=True)``; along the last dim (the common case: many short
    rows) through kit/row_reduce.py."""
    return row_sum(xp, v) if dim == v.ndim - 1 else v.sum(axis=dim, keepdims=True)


def _softmax(xp, s, dim, log, work):
    top = row_max(xp, s) if dim == s.ndim - 1 else s.max(axis=dim, keepdims=True)
    # shifting by the max keeps exp() in range; the result is unchanged
    r = xp.subtract(s, top, dtype=work)
    if log:
        r -= xp.log(_line_sum(xp, xp.exp(r), dim))
    else:
        xp.exp(r, out=r)
        r /= _line_sum(xp, r, dim)
    return r


def softmax_backward_data(be, log, grad_output, output, dim, input_dtype):
    """softmax's gradient from its output (``log``: log_softmax's), the composites' arithmetic
    in the same order: y * (g - sum(g * y)) / g - exp(y) * sum(g)."""
    xp = be.xp
    g, y = be.native(grad_output), be.native(output)
    if g.size == 0:
        return be.wrap(xp.empty(g.shape, dtype=input_dtype.np), output.device)
    shape = g.shape
    if g.ndim == 0:
        g, y = g.reshape(1), y.reshape(1)
    work = _acc(xp, g.dtype)
    if work != g.dtype:       # half precision: computed in float32, rounded once
        g, y = g.astype(work), y.astype(work)
    r = be.ieee(_softmax_backward, xp, g, y, dim, log)
    return _result(be, r.reshape(shape), input_dtype.np, output.device)


def _softmax_backward(xp, g, y, dim, log):
    if log:
        r = xp.exp(y)
        r *= _line_sum(xp, g, dim)
        return xp.subtract(g, r, out=r)
    r = xp.multiply(g, y)
    xp.subtract(g, _line_sum(xp, r, dim), out=r)
    r *= y
    return r


TABLE = {"mean": mean, "var": var, "vector_norm": vector_norm}

#: op name -> (shared kernel, the name of the xp function it applies)
FAMILIES = {
    "sum": (sum_like, "sum"), "prod": (sum_like, "prod"), "nansum": (sum_like, "nansum"),
    "amax": (extreme, "amax"), "amin": (extreme, "amin"),
    "max_dim": (extreme_dim, "argmax"), "min_dim": (extreme_dim, "argmin"),
    "argmax": (arg_extreme, "argmax"), "argmin": (arg_extreme, "argmin"),
    "all": (logical, "all"), "any": (logical, "any"),
    "cumsum": (scan, "cumsum"), "cumprod": (scan, "cumprod"),
}


_METHODS = {"amax": "max", "amin": "min"}   # the array method of an xp reduction, where named apart


def _reduction(xp, fn):
    """The array type's method for ``fn`` where it has one (numpy's module-level reductions
    are Python wrappers that cost about a microsecond before reaching it), else xp's."""
    method = getattr(getattr(xp, "ndarray", None), _METHODS.get(fn, fn), None)
    return method if method is not None else getattr(xp, fn)


def register(backend) -> None:
    bind(backend, TABLE)
    for name, (kernel, fn) in FAMILIES.items():
        bind_with(backend, name, kernel, _reduction(backend.xp, fn))
    bind_with(backend, "softmax", softmax, False)
    bind_with(backend, "log_softmax", softmax, True)
    bind_with(backend, "_softmax_backward_data", softmax_backward_data, False)
    bind_with(backend, "_log_softmax_backward_data", softmax_backward_data, True)
