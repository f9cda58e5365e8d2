"""Random-number and initializer kernels for array-module backends.

Kernels receive the generator's backend implementation (``gen``); ``gen.impl`` is a numpy-like
``Generator`` that makes arrays of ``backend.xp`` on the device (numpy's Philox for the CPU), so
every backend draws its numbers where the tensor lives. The op layer has validated everything
that does not depend on tensor values; checks on values (probabilities, stds) happen here, as in
PyTorch's CPU kernels.
"""
from __future__ import annotations

import math

from .._tensor import Tensor
from .binding import bind
from .value_checks import all_true


def _into(be, self, r):
    be.xp.copyto(be.native(self), r, casting="unsafe")
    return self


def _work_dtype(xp, dtype):
    """The real dtype to draw in (generators draw nothing narrower than float32)."""
    return xp.float64 if dtype.name in ("float64", "complex128") else xp.float32


def _real_shape(shape, dtype):
    # a complex tensor is drawn as its (real, imag) pairs, like PyTorch's view_as_real
    return tuple(shape) + (2,) if dtype.is_complex else tuple(shape)


def _as_dtype(xp, r, shape, dtype):
    if dtype.is_complex:
        r = xp.ascontiguousarray(r).view(dtype.np).reshape(shape)
    return r if r.dtype == dtype.np else r.astype(dtype.np)


def uniform01(xp, gen, shape, dtype):
    """[0, 1) with every value representable in ``dtype``: narrow floats get as many random bits
    as their mantissa holds, so rounding can never produce 1."""
    g = gen.impl
    if dtype.name in ("float16", "bfloat16"):
        digits = 11 if dtype.name == "float16" else 8
        return g.integers(0, 1 << digits, shape, dtype=xp.int32).astype(xp.float32) * \
            (1.0 / (1 << digits))
    return g.random(shape, dtype=_work_dtype(xp, dtype))


def normal01(xp, gen, shape, dtype, complex_scale=True):
    z = gen.impl.standard_normal(shape, dtype=_work_dtype(xp, dtype))
    if dtype.is_complex and complex_scale:
        z *= math.sqrt(0.5)  # unit variance for the complex number as a whole
    return z


def _operand(be, x):
    return be.native(x) if isinstance(x, Tensor) else x


# -- new tensors --------------------------------------------------------------------------------
def rand(be, size, gen, dtype, device):
    xp = be.xp
    rs = _real_shape(size, dtype)
    return be.wrap(_as_dtype(xp, uniform01(xp, gen, rs, dtype), size, dtype), device)


def randn(be, size, gen, dtype, device):
    xp = be.xp
    rs = _real_shape(size, dtype)
    return be.wrap(_as_dtype(xp, normal01(xp, gen, rs, dtype), size, dtype), device)


def randint(be, low, high, size, gen, dtype, device):
    r = gen.impl.integers(low, high, size, dtype=be.xp.int64)
    return be.wrap(r.astype(dtype.np), device)


def randperm(be, n, gen, dtype, device):
    return be.wrap(gen.impl.permutation(n).astype(dtype.np), device)


def normal(be, mean, std, size, gen, dtype, device):
    xp = be.xp
    s = _operand(be, std)
    if isinstance(std, Tensor):
        all_true(be, "normal", s >= 0, RuntimeError, "normal expects all elements of std >= 0.0")
    wd = _work_dtype(xp, dtype)
    m = _operand(be, mean)
    m = m.astype(wd, copy=False) if isinstance(mean, Tensor) else m  # (no 4 MB copies per 1M)
    s = s.astype(wd, copy=False) if isinstance(std, Tensor) else s
    r = xp.asarray(normal01(xp, gen, size, dtype))
    r *= s  # in place: fresh 4 MB temporaries cost more in page faults than the arithmetic
    r += m
    return be.wrap(r.astype(dtype.np, copy=False), device)  # r is fresh


def multinomial(be, probs, num_samples, replacement, gen):
    xp = be.xp
    p = be.native(probs).astype(xp.float64)
    rows = p.reshape(-1, p.shape[-1])
    all_true(be, "multinomial", xp.isfinite(rows) & (rows >= 0), RuntimeError,
             "multinomial: probability tensor contains either `inf`, `nan` or element < 0")
    if rows.shape[0]:
        all_true(be, "multinomial", rows.sum(axis=1) > 0, RuntimeError,
                 "invalid multinomial distribution (sum of probabilities <= 0)")
    g = gen.impl
    if replacement:
        cdf = xp.cumsum(rows, axis=1)
        cdf /= cdf[:, -1:]  # the last entry becomes exactly 1, so every u < 1 lands
        u = g.random((rows.shape[0], num_samples))
        out = xp.empty(u.shape, dtype=xp.int64)
        for i in range(rows.shape[0]):
            out[i] = xp.searchsorted(cdf[i], u[i], side="right")
    else:
        # the exponential race: the smallest Exp(1)/p keys are a weighted sample without
        # replacement; zero-probability categories (key inf) come last, in index order
        positive = rows > 0
        keys = xp.where(positive, g.standard_exponential(rows.shape) /
                        xp.where(positive, rows, 1.0), xp.inf)
        out = xp.argsort(keys, axis=1, kind="stable")[:, :num_samples].astype(xp.int64)
    return be.wrap(out.reshape(p.shape[:-1] + (num_samples,)), probs.device)


# -- in place -----------------------------------------------------------------------------------
def uniform_(be, self, low, high, gen):
    xp = be.xp
    d, shape = self.dtype, self._shape
    u = uniform01(xp, gen, _real_shape(shape, d), d)
    r = u if (low, high) == (0.0, 1.0) else u * (high - low) + low
    return _into(be, self, _as_dtype(xp, r.astype(_work_dtype(xp, d), copy=False), shape, d))


def normal_(be, self, mean, std, gen):
    xp = be.xp
    d, shape = self.dtype, self._shape
    z = normal01(xp, gen, _real_shape(shape, d), d, complex_scale=False)
    if d.is_complex:
        std = std * math.sqrt(0.5)
    return _into(be, self, _as_dtype(xp, z * std + mean, shape, d))


def random_(be, self, low, high, gen):
    return _into(be, self, gen.impl.integers(low, high, self._shape, dtype=be.xp.int64))


def exponential_(be, self, lambd, gen):
    e = gen.impl.standard_exponential(self._shape, dtype=_work_dtype(be.xp, self.dtype))
    return _into(be, self, e * (1.0 / lambd))


def bernoulli_(be, self, p, gen):
    xp = be.xp
    if isinstance(p, Tensor):
        p = be.native(p)
        all_true(be, "bernoulli", (p >= 0) & (p <= 1), RuntimeError,
                 "bernoulli: Expected p_in >= 0 && p_in <= 1 to be true, but got false.")
        p = xp.broadcast_to(p, self._shape)
    return _into(be, self, gen.impl.random(self._shape) < p)


def fill_(be, self, value):
    a = be.native(self)
    if isinstance(value, int) and a.dtype.kind in "iu":
        value = be.xp.asarray(value).astype(a.dtype)  # wraps like an integer cast (uint8 -1)
    a[...] = value
    return self


TABLE = {"rand": rand, "randn": randn, "randint": randint, "randperm": randperm,
         "normal": normal, "multinomial": multinomial, "uniform_": uniform_,
         "normal_": normal_, "random_": random_, "exponential_": exponential_,
         "bernoulli_": bernoulli_, "fill_": fill_}


def register(backend) -> None:
    bind(backend, TABLE)
