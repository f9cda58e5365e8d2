"""Reduction and scan kernels for array-module backends.

The op layer (``ember.ops.reduction``) has validated the arguments and resolved them: ``dim`` is
a sorted tuple of the axes to reduce (``()`` for a 0-d input), ``dtype`` is the result dtype.
Half-precision inputs are accumulated in float32, as PyTorch does.
"""
from __future__ import annotations

import math

from .linalg import HALF


def register(backend):  # noqa: C901 - one table, read top to bottom
    xp = backend.xp
    native, wrap = backend.native, backend.wrap
    K = backend.kernels.register
    f32 = xp.dtype(xp.float32)

    def acc(dt):
        """The dtype to compute in for result dtype ``dt``."""
        return f32 if dt in HALF else dt

    def result(r, dt, dev):
        # C order, as PyTorch's results are: xp keeps a transposed input's layout in scans and
        # softmax, and then ``.view()`` of the result would fail
        return wrap(xp.asarray(r, dtype=dt, order="C"), dev)

    def count(shape, dims):
        return math.prod(shape[d] for d in dims)

    # -- sum-like ---------------------------------------------------------------------------------
    def make_sum(f):
        def kernel(x, dim, keepdim, dtype):
            dt = dtype.np
            with xp.errstate(all="ignore"):
                r = f(native(x), axis=dim, keepdims=keepdim, dtype=acc(dt))
            return result(r, dt, x.device)
        return kernel

    K("sum", make_sum(xp.sum))
    K("prod", make_sum(xp.prod))
    K("nansum", make_sum(xp.nansum))

    def mean(x, dim, keepdim, dtype):
        # sum / n rather than xp.mean: an empty reduction gives nan without a warning
        dt = dtype.np
        a = native(x)
        with xp.errstate(all="ignore"):
            r = xp.sum(a, axis=dim, keepdims=keepdim, dtype=acc(dt)) / count(a.shape, dim)
        return result(r, dt, x.device)

    K("mean", mean)

    def var(x, dim, correction, keepdim):
        a = native(x)
        work = acc(a.dtype)
        n = count(a.shape, dim)
        with xp.errstate(all="ignore"):
            m = xp.sum(a, axis=dim, keepdims=True, dtype=work) / n
            d = xp.subtract(a, m, dtype=work)
            sq = d.real * d.real + d.imag * d.imag if d.dtype.kind == "c" else d * d
            r = xp.sum(sq, axis=dim, keepdims=keepdim) / max(0, n - correction)
        return result(r, a.real.dtype, x.device)

    K("var", var)

    # -- extrema -----------------------------------------------------------------------------------
    def make_extreme(f):
        def kernel(x, dim, keepdim):
            a = native(x)
            return result(f(a, axis=dim, keepdims=keepdim), a.dtype, x.device)
        return kernel

    K("amax", make_extreme(xp.amax))
    K("amin", make_extreme(xp.amin))

    def make_extreme_dim(arg):
        def kernel(x, dim, keepdim):
            a = native(x)
            if a.ndim == 0:
                return wrap(a.copy(), x.device), wrap(xp.zeros((), xp.int64), x.device)
            i = arg(a, axis=dim, keepdims=True)
            v = xp.take_along_axis(a, i, axis=dim)
            if not keepdim:
                i, v = xp.squeeze(i, axis=dim), xp.squeeze(v, axis=dim)
            return result(v, a.dtype, x.device), result(i, xp.dtype(xp.int64), x.device)
        return kernel

    K("max_dim", make_extreme_dim(xp.argmax))
    K("min_dim", make_extreme_dim(xp.argmin))

    def make_arg(f):
        def kernel(x, dim, keepdim):
            r = f(native(x), axis=dim, keepdims=keepdim)
            return result(r, xp.dtype(xp.int64), x.device)
        return kernel

    K("argmax", make_arg(xp.argmax))
    K("argmin", make_arg(xp.argmin))

    def make_logical(f):
        def kernel(x, dim, keepdim, dtype):
            return result(f(native(x), axis=dim, keepdims=keepdim), dtype.np, x.device)
        return kernel

    K("all", make_logical(xp.all))
    K("any", make_logical(xp.any))

    # -- norms ----------------------------------------------------------------------------------
    def vector_norm(x, ord, dim, keepdim):
        a = native(x)
        real = a.real.dtype
        m = xp.abs(a).astype(acc(real), copy=False)
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
        return result(r, real, x.device)

    K("vector_norm", vector_norm)

    # -- scans -------------------------------------------------------------------------------------
    def make_scan(f):
        def kernel(x, dim, dtype):
            dt = dtype.np
            a = native(x)
            with xp.errstate(all="ignore"):
                r = f(a.reshape(1) if a.ndim == 0 else a, axis=dim, dtype=acc(dt))
            return result(r.reshape(a.shape), dt, x.device)
        return kernel

    K("cumsum", make_scan(xp.cumsum))
    K("cumprod", make_scan(xp.cumprod))

    # -- softmax -----------------------------------------------------------------------------------
    def make_softmax(log):
        def kernel(x, dim, dtype):
            dt = dtype.np
            a = native(x)
            if a.size == 0:
                return wrap(xp.empty(a.shape, dtype=dt), x.device)
            s = a.reshape(1) if a.ndim == 0 else a
            with xp.errstate(all="ignore"):
                # shifting by the max keeps exp() in range; the result is unchanged
                r = xp.subtract(s, xp.amax(s, axis=dim, keepdims=True), dtype=acc(dt))
                if log:
                    r -= xp.log(xp.sum(xp.exp(r), axis=dim, keepdims=True))
                else:
                    xp.exp(r, out=r)
                    r /= xp.sum(r, axis=dim, keepdims=True)
            return result(r.reshape(a.shape), dt, x.device)
        return kernel

    K("softmax", make_softmax(False))
    K("log_softmax", make_softmax(True))
