"""Special-function kernels for array-module backends (``ember.ops.elementwise.special``):
``be.special`` (scipy.special for numpy) evaluates them; the unary and binary rows share the
elementwise kit's kernels, so they are one row each here."""
from __future__ import annotations

import math

import numpy as np

from .binding import bind, bind_with
from .elementwise import binary, helper, special_fn, unary, unary_
from .host import on_host


def _sinc(be, x):
    return be.xp.sinc(x)


def _entr(be, x):
    return be.special.entr(x)


def _airy_ai(be, x):
    """Ai, the first of scipy's four Airy outputs (nan at +-inf, as torch's). cupyx.scipy.special
    has no Airy function: a device backend's values take it on the host."""
    if be.xp is np:
        return be.special.airy(x)[0]
    return be._from_host(on_host(be).special.airy(be._to_host(x))[0])


#: op name -> the function it applies (resolved per backend by ``register``)
UNARY = {
    "i0": special_fn("i0"), "special_i0e": special_fn("i0e"), "special_i1": special_fn("i1"),
    "special_i1e": special_fn("i1e"), "special_ndtr": special_fn("ndtr"),
    "special_ndtri": special_fn("ndtri"), "special_log_ndtr": special_fn("log_ndtr"),
    "sinc": helper(_sinc), "special_entr": helper(_entr), "special_erfcx": special_fn("erfcx"),
    "special_bessel_j0": special_fn("j0"), "special_bessel_j1": special_fn("j1"),
    "special_bessel_y0": special_fn("y0"), "special_bessel_y1": special_fn("y1"),
    "special_modified_bessel_k0": special_fn("k0"), "special_modified_bessel_k1": special_fn("k1"),
    "special_scaled_modified_bessel_k0": special_fn("k0e"),
    "special_scaled_modified_bessel_k1": special_fn("k1e"),
    "special_airy_ai": helper(_airy_ai),
}
INPLACE = ("i0", "sinc")
BINARY = {"special_xlog1py": special_fn("xlog1py"), "special_zeta": special_fn("zeta"),
          "special_gammainc": special_fn("gammainc"),
          "special_gammaincc": special_fn("gammaincc")}


def polygamma(be, n, x, compute):
    """scipy's polygamma is digamma for n = 0 and ``(-1)^(n+1) n! zeta(n+1, x)`` above."""
    a = be.native(x)
    dt = compute.np
    if a.dtype != dt:
        a = a.astype(dt)
    sp = be.special
    if n == 0:
        r = be.ieee(sp.digamma, a)
    else:
        # scipy's formula, written out (float64 scalars, so float32 input is computed in float64
        # as scipy does): cupyx's polygamma broadcasts the Python int ``n`` with a 0-d array
        # into a Python bool and fails (seen on a GPU)
        r = np.float64((-1.0) ** (n + 1) * math.gamma(n + 1.0)) * \
            be.ieee(sp.zeta, np.float64(n + 1.0), a)
    return be.wrap(be.xp.asarray(r, dtype=dt), x.device)


TABLE = {"polygamma": polygamma}


def register(backend) -> None:
    for name, resolve in UNARY.items():
        f = resolve(backend)
        bind_with(backend, name, unary, f, 0, False, False)
        if name in INPLACE:
            bind_with(backend, name + "_", unary_, f, False, True)
    for name, resolve in BINARY.items():
        bind_with(backend, name, binary, resolve(backend), None)
    bind(backend, TABLE)
