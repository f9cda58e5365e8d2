"""Entries for the special functions (``ember.special``, ``ember.ops.elementwise.special``):
every op on inputs in its domain, in every layout, integer inputs promoted to float."""
from __future__ import annotations

import itertools

import ember
from ember import special as S

from . import FLOATS, LAYOUTS, OpInfo, SampleInput, make_tensor

# (function, domain); domains keep the values well conditioned for comparisons
UNARY = {
    "i0": (ember.i0, (-4.0, 4.0)),
    "special_i0e": (S.i0e, (-12.0, 12.0)),
    "special_i1": (S.i1, (-4.0, 4.0)),
    "special_i1e": (S.i1e, (-12.0, 12.0)),
    "special_ndtr": (S.ndtr, (-4.0, 4.0)),
    "special_ndtri": (S.ndtri, (0.05, 0.95)),
    "special_log_ndtr": (S.log_ndtr, (-6.0, 3.0)),
    "sinc": (ember.sinc, (-3.0, 3.0)),
    "special_entr": (S.entr, (0.1, 3.0)),
    "special_erfcx": (S.erfcx, (-2.0, 12.0)),
    "special_bessel_j0": (S.bessel_j0, (-9.0, 9.0)),
    "special_bessel_j1": (S.bessel_j1, (-9.0, 9.0)),
    "special_bessel_y0": (S.bessel_y0, (0.3, 9.0)),
    "special_bessel_y1": (S.bessel_y1, (0.3, 9.0)),
    "special_modified_bessel_k0": (S.modified_bessel_k0, (0.2, 6.0)),
    "special_modified_bessel_k1": (S.modified_bessel_k1, (0.2, 6.0)),
    "special_scaled_modified_bessel_k0": (S.scaled_modified_bessel_k0, (0.2, 12.0)),
    "special_scaled_modified_bessel_k1": (S.scaled_modified_bessel_k1, (0.2, 12.0)),
}
SHAPES = [(), (0,), (7,), (3, 4)]


def _unary_samples(low, high):
    def samples(dtype):
        seeds = itertools.count(1)
        for shape in SHAPES:
            for layout in LAYOUTS if len(shape) == 2 else ("contiguous",):
                seed = next(seeds)
                yield SampleInput(f"{dtype}{list(shape)} {layout}",
                                  lambda dev, s=seed, sh=shape, lay=layout, dt=dtype: (
                                      (make_tensor(s, sh, dt, dev, low=low, high=high,
                                                   layout=lay),), {}))
    return samples


def _binary_samples(lows, highs):
    pairs = [((3, 4), (3, 4)), ((3, 4), (4,)), ((2, 1, 3), (4, 1)), ((0, 3), (3,))]

    def samples(dtype):
        seeds = itertools.count(100)
        for sa, sb in pairs:
            for layout in ("contiguous", "transposed") if sa == sb else ("contiguous",):
                a, b = next(seeds), next(seeds)
                yield SampleInput(
                    f"{dtype}{list(sa)} op {list(sb)} {layout}",
                    lambda dev, a=a, b=b, sa=sa, sb=sb, lay=layout, dt=dtype: (
                        (make_tensor(a, sa, dt, dev, low=lows[0], high=highs[0], layout=lay),
                         make_tensor(b, sb, dt, dev, low=lows[1], high=highs[1], layout=lay)),
                        {}))
        s = next(seeds)
        yield SampleInput(f"{dtype}[3, 4] op scalar",
                          lambda dev, s=s, dt=dtype: (
                              (make_tensor(s, (3, 4), dt, dev, low=lows[0], high=highs[0]), 1.5),
                              {}))
    return samples


def _inplace(name):
    def run(x):
        y = x.clone()
        out = getattr(y, name)()
        assert out is y, "in-place ops return self"
        return y
    return run


def _polygamma(n):
    return lambda x: ember.polygamma(n, x)


def _zeta_q(q):
    return S.zeta(2.5, q)  # the exponent has no derivative (PyTorch's neither)


OPS = [OpInfo(name, fn, _unary_samples(*dom), FLOATS + ("int64",), covers=(name,))
       for name, (fn, dom) in UNARY.items()]
OPS += [OpInfo(name + "_", _inplace(name + "_"), _unary_samples(*UNARY[name][1]), FLOATS,
               covers=(name + "_",), differentiable=False) for name in ("i0", "sinc")]
OPS += [
    # no derivative (torch's result never requires grad); both seams of its series at +-2.09
    OpInfo("special_airy_ai", S.airy_ai, _unary_samples(-6.0, 6.0), FLOATS + ("int64",),
           covers=("special_airy_ai",), differentiable=False),
    OpInfo("special_xlog1py", S.xlog1py, _binary_samples((-2.0, -0.5), (2.0, 3.0)), FLOATS,
           covers=("special_xlog1py",)),
    OpInfo("special_zeta", S.zeta, _binary_samples((1.5, 0.5), (4.0, 3.0)), FLOATS,
           covers=("special_zeta",), differentiable=False),
    OpInfo("special_zeta q", _zeta_q, _unary_samples(0.5, 3.0), FLOATS, covers=("special_zeta",)),
    # the shape has no derivative (PyTorch's neither): forward over both, gradient in x
    OpInfo("special_gammainc", S.gammainc, _binary_samples((0.2, 0.0), (8.0, 12.0)), FLOATS,
           covers=("special_gammainc",), differentiable=False),
    OpInfo("special_gammaincc", S.gammaincc, _binary_samples((0.2, 0.0), (8.0, 12.0)), FLOATS,
           covers=("special_gammaincc",), differentiable=False),
    OpInfo("special_gammainc x", lambda x: S.gammainc(2.5, x), _unary_samples(0.1, 6.0), FLOATS,
           covers=("special_gammainc",)),
    OpInfo("special_gammaincc x", lambda x: S.gammaincc(0.8, x), _unary_samples(0.1, 6.0),
           FLOATS, covers=("special_gammaincc",)),
    OpInfo("polygamma n=0", _polygamma(0), _unary_samples(0.5, 4.0), FLOATS + ("int64",),
           covers=("polygamma",)),
    OpInfo("polygamma n=1", _polygamma(1), _unary_samples(0.5, 4.0), FLOATS,
           covers=("polygamma",)),
    OpInfo("polygamma n=3", _polygamma(3), _unary_samples(0.5, 4.0), FLOATS,
           covers=("polygamma",)),
    OpInfo("mvlgamma", lambda x: ember.mvlgamma(x, 3), _unary_samples(1.5, 5.0), FLOATS,
           covers=("mvlgamma",)),
    OpInfo("special logit eps", lambda x: S.logit(x, eps=0.2), _unary_samples(0.05, 0.95),
           FLOATS, covers=("logit",)),
    OpInfo("special multigammaln", lambda x: S.multigammaln(x, 2), _unary_samples(1.0, 4.0),
           FLOATS, covers=("mvlgamma",)),
]
