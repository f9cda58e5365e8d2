"""FFT kernels (``ember.ops.fft``): ``_fft_c2c``, ``_fft_r2c``, ``_fft_c2r`` on the native
Stockham / Bluestein kernels of ``fft_plans``.

An n-dim c2c is a 1-D transform per dim, each along the dim in place in the layout
``(outer, n, inner)`` of a contiguous tensor (no transposes); the normalization is folded into
the last pass. r2c converts to complex, transforms and keeps the onesided half; c2r does the
inverse c2c over all dims but the last, then rebuilds the Hermitian half of the last dim
(``X[n - k] = conj(X[k])``) and takes the real part of the inverse transform (the imaginary
parts of the DC and Nyquist bins drop out, as in pocketfft's c2r).
"""
from __future__ import annotations

import math

from ember.kit.binding import bind
from ember.runtime import data_of, get_op, offset_of, shape_of

from . import fft_plans, progs

_NORM_NONE, _NORM_BY_ROOT_N, _NORM_BY_N = 0, 1, 2


def _scale(normalization, n):
    if normalization == _NORM_BY_ROOT_N:
        return 1.0 / math.sqrt(n)
    if normalization == _NORM_BY_N:
        return 1.0 / n
    return 1.0


def _stockham(backend, st, q, plan, x, out, outer, inner, scale):
    """Run ``plan``'s passes from ``x`` into ``out`` (both contiguous, ``(outer, n, inner)``);
    ``x`` is only read."""
    ks = fft_plans.kernels(st, plan.dtype, plan.sign, plan.unit)
    n = plan.n
    passes = plan.passes
    if plan.local:
        lines, ls = outer * inner, fft_plans.LOCAL_SIZE
        with st.launch_lock:
            st.last[q] = ks["local"](q, (lines * ls,), (ls,), data_of(x),
                                     data_of(out), plan.twiddles, plan.pass_table,
                                     len(passes), n, inner, scale)
        return out
    scratch = None
    if len(passes) > 1:
        scratch = backend.new_tensor(st, shape_of(out), out.dtype, out.device)
    # destinations alternate so that the last pass writes ``out``
    dests = [out if (len(passes) - 1 - p) % 2 == 0 else scratch for p in range(len(passes))]
    src = x
    for p, (R, ns, off) in enumerate(passes):
        total = outer * inner * (n // R)
        dst = dests[p]
        progs.launch(st, q, ks[R], total, data_of(src), data_of(dst), plan.twiddles,
                     n, ns, inner, total, off, scale if p == len(passes) - 1 else 1.0)
        src = dst
    return out


def _bluestein(backend, st, q, plan, x, out, outer, inner, scale):
    ks = fft_plans.kernels(st, plan.dtype, plan.sign, plan.unit)
    n, M = plan.n, plan.M
    shape = (outer, M, inner)
    a = backend.new_tensor(st, shape, x.dtype, x.device)
    total = outer * M * inner
    progs.launch(st, q, ks["chirp_pre"], total, data_of(x), data_of(a), plan.w,
                 n, M, inner, total)
    A = _stockham(backend, st, q, plan.fwd, a, backend.new_tensor(st, shape, x.dtype, x.device),
                  outer, inner, 1.0)
    progs.launch(st, q, ks["pointwise"], total, data_of(A), plan.B, M, inner, total)
    c = _stockham(backend, st, q, plan.inv, A, a, outer, inner, 1.0)
    total = outer * n * inner
    progs.launch(st, q, ks["chirp_post"], total, data_of(c), data_of(out), plan.w,
                 n, M, inner, total, scale)
    return out


def _contiguous(backend, st, q, x):
    if x.is_contiguous() and offset_of(x) == 0:
        return x
    from .transfer import copy_into
    return copy_into(backend, st, q, backend.new_tensor(st, shape_of(x), x.dtype, x.device), x)


def transform(backend, x, dims, forward, scale):
    """The n-dim complex transform of ``x`` over ``dims`` (a fresh contiguous tensor)."""
    st, q = backend.state_queue(x.device)
    shape = shape_of(x)
    x = _contiguous(backend, st, q, x)
    if x.numel() == 0 or not dims:
        out = backend.new_tensor(st, shape, x.dtype, x.device)
        from .transfer import copy_into
        copy_into(backend, st, q, out, x)
        return get_op("mul")(out, scale, x.dtype) if scale != 1.0 else out
    sign = -1 if forward else 1
    cache = backend.fft_plan_cache(x.device.index)
    for i, d in enumerate(dims):
        n = shape[d]
        outer, inner = math.prod(shape[:d]), math.prod(shape[d + 1:])
        s = scale if i == len(dims) - 1 else 1.0
        out = backend.new_tensor(st, shape, x.dtype, x.device)
        if n == 1:
            from .transfer import copy_into
            copy_into(backend, st, q, out, x)
            x = get_op("mul")(out, s, x.dtype) if s != 1.0 else out
            continue
        plan = cache.get(st, n, x.dtype, sign, inner == 1)
        run = _stockham if plan.kind == "stockham" else _bluestein
        x = run(backend, st, q, plan, x, out, outer, inner, s)
    return x


def fft_c2c(backend, x, dim, normalization, forward):
    n = math.prod(shape_of(x)[d] for d in dim)
    return transform(backend, x, tuple(dim), forward, _scale(normalization, n))


def fft_r2c(backend, x, dim, normalization, onesided):
    cdt = x.dtype.to_complex()
    z = transform(backend, get_op("_to_copy")(x, cdt), tuple(dim), True,
                  _scale(normalization, math.prod(shape_of(x)[d] for d in dim)))
    if onesided and dim:
        last = dim[-1]
        z = get_op("_to_copy")(get_op("slice")(z, last, 0, shape_of(x)[last] // 2 + 1, 1), cdt)
    return z


def fft_c2r(backend, x, dim, normalization, last_dim_size):
    last = dim[-1]
    n = math.prod(shape_of(x)[d] for d in dim[:-1]) * last_dim_size
    z = transform(backend, x, tuple(dim[:-1]), False, 1.0) if len(dim) > 1 else x
    h = shape_of(z)[last]
    mirrored = last_dim_size - h
    if mirrored > 0:  # X[n - k] = conj(X[k]) for k = 1 .. n - h
        tail = get_op("slice")(z, last, 1, 1 + mirrored, 1)
        tail = get_op("conj_physical")(get_op("flip")(tail, (last,)), z.dtype)
        z = get_op("cat")([z, tail], last, z.dtype)
    elif h > last_dim_size:
        z = get_op("slice")(z, last, 0, last_dim_size, 1)
    z = transform(backend, z, (last,), False, _scale(normalization, n))
    return get_op("_to_copy")(get_op("select")(get_op("view_as_real")(z), z.ndim, 0),
                              x.dtype.to_real())


TABLE = {"_fft_c2c": fft_c2c, "_fft_r2c": fft_r2c, "_fft_c2r": fft_c2r}


def register(backend):
    bind(backend, TABLE)
