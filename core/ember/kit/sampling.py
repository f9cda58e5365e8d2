"""Kernels of the distribution samplers (``ember.ops.sampling``) for array-module backends:
numpy's Generator (the backend's generator state, ``gen.impl``, or a stream of a device's
counter-based generator: ``host.numpy_generator``) draws gamma, Poisson and binomial variates, on
the host for backends whose arrays live on a device; ``_standard_gamma_grad`` is PyTorch's approximation written with
``xp``/``be.special`` (its three regimes computed everywhere, then selected)."""
from __future__ import annotations

import numpy as np

from .binding import bind
from .host import for_numpy_kernels, numpy_generator


def _draw_dtype(dt):
    return np.float64 if dt == np.float64 else np.float32


def standard_gamma(be, self, gen):
    a = be.native(self)
    dt = a.dtype
    tiny = np.finfo(dt).tiny
    alpha = np.maximum(a.astype(np.float64), 0.0)
    r = numpy_generator(gen).standard_gamma(alpha) if a.size else np.zeros(a.shape)
    return be.wrap(np.maximum(np.asarray(r, dtype=dt), tiny), self.device)


# bivariate rational fit of the gradient in (log(x / alpha), log(alpha)) (PyTorch's)
_COEF_UV = np.array([
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343, 1, 0.32668115, 0.10406089,
     0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758, 0.16639465, 0.020070113,
     -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777, 0.017050642, -0.0021309326,
     0.00085092367, -1.5247877e-07]])


def gamma_grad(xp, special, alpha, x):
    """d x / d alpha for x ~ Gamma(alpha, 1) at a fixed CDF value, in float64."""
    with np.errstate(all="ignore"):
        # small x: the Taylor series of the incomplete gamma function
        numer = xp.ones_like(x)
        denom = alpha.copy()
        s1 = numer / denom
        s2 = numer / (denom * denom)
        for i in range(1, 6):
            numer = numer * (-x / i)
            denom = denom + 1
            s1 = s1 + numer / denom
            s2 = s2 + numer / (denom * denom)
        pxa = xp.power(x, alpha)
        pdf = xp.power(x, alpha - 1) * xp.exp(-x)
        cdf = pxa * s1
        cdf_alpha = (xp.log(x) - special.digamma(alpha)) * cdf - pxa * s2
        small = -cdf_alpha / pdf
        small = xp.where(xp.isnan(small), 0.0, small)
        # large alpha: Rice's saddle point expansion
        n1 = 1 + 24 * alpha * (1 + 12 * alpha)
        n2 = 1440 * alpha * alpha + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + \
            alpha * (107 + 3600 * x)
        near = n1 * n2 / (1244160 * alpha * alpha * alpha * alpha)
        den = xp.sqrt(8 * alpha)
        t2 = den / (alpha - x)
        t3 = xp.power(x - alpha - alpha * xp.log(x / alpha), -1.5)
        t23 = xp.where(x < alpha, t2 - t3, t2 + t3)
        t1 = xp.log(x / alpha) * t23 - xp.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) ** 2)
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        far = -stirling * x * t1 / den
        large = xp.where((0.9 * alpha <= x) & (x <= 1.1 * alpha), near, far)
        # elsewhere: the rational fit
        u, v = xp.log(x / alpha), xp.log(alpha)
        c = [_COEF_UV[0, i] + u * (_COEF_UV[1, i] + u * _COEF_UV[2, i]) for i in range(8)]
        p = c[0] + v * (c[1] + v * (c[2] + v * c[3]))
        q = c[4] + v * (c[5] + v * (c[6] + v * c[7]))
        mid = xp.exp(p / q)
        return xp.where(x < 0.8, small, xp.where(alpha > 8.0, large, mid))


def standard_gamma_grad(be, self, output):
    a, x = be.native(self), be.native(output)
    dt = np.result_type(a.dtype, x.dtype)
    r = gamma_grad(be.xp, be.special, a.astype(np.float64), x.astype(np.float64))
    return be.wrap(np.asarray(r, dtype=dt), self.device)


def poisson(be, self, gen):
    lam = be.native(self)
    if lam.size and not bool(np.all(lam >= 0)):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    r = numpy_generator(gen).poisson(lam.astype(np.float64)) if lam.size else np.zeros(lam.shape)
    return be.wrap(np.asarray(r, dtype=lam.dtype), self.device)


def binomial(be, count, prob, gen):
    n, p = be.native(count), be.native(prob)
    out = np.zeros(n.shape, dtype=n.dtype)
    if n.size:
        nn = np.floor(np.maximum(np.nan_to_num(n.astype(np.float64)), 0)).astype(np.int64)
        pp = np.clip(np.nan_to_num(p.astype(np.float64)), 0.0, 1.0)
        out[...] = numpy_generator(gen).binomial(nn, pp)
        out[np.isnan(p)] = np.nan
    return be.wrap(out, count.device)


TABLE = {"_standard_gamma": standard_gamma, "_standard_gamma_grad": standard_gamma_grad,
         "poisson": poisson, "binomial": binomial}


def register(backend) -> None:
    bind(for_numpy_kernels(backend), TABLE)  # numpy's samplers: on the host for cupy
