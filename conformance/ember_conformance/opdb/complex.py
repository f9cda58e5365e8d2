"""Entries for complex values: the part views (``view_as_real``, ``view_as_complex``,
``real``/``imag``), ``angle``, ``sgn``, ``complex``, ``polar``, complex arithmetic, ``abs``
and ``conj`` through the elementwise ops, and ``einsum`` (its derivative conjugates the other
operands; diagonals, traces and broadcast ellipses).

As in ``opdb/fft.py``, an entry's dtype names the precision: ``float32`` samples are
complex64 where the entry takes complex values, ``float64`` ones complex128.
"""
from __future__ import annotations

import ember

from . import FLOATS, LAYOUTS, OpInfo, SampleInput, make_tensor


def _complex(dtype):
    return ember._dtype.as_dtype(dtype).to_complex().name


def _samples(n_args, shape=(3, 4), complex_input=True, positive=False):
    def gen(dtype):
        dt = _complex(dtype) if complex_input else dtype
        for i, layout in enumerate(LAYOUTS):
            yield SampleInput(f"{dt}{list(shape)} x{n_args} {layout}",
                              lambda dev, i=i, lay=layout: (tuple(
                                  make_tensor(60 + 3 * i + j, shape, dt, dev, layout=lay,
                                              low=0.1 if positive else -3.0)
                                  for j in range(n_args)), {}))
    return gen


def _pairs(dtype):
    """Real tensors with a last dim of 2, as view_as_complex takes them."""
    for i, shape in enumerate([(3, 2), (2, 4, 2)]):
        yield SampleInput(f"{dtype}{list(shape)}", lambda dev, i=i, shape=shape: (
            (make_tensor(80 + i, shape, dtype, dev),), {}))
    yield SampleInput(f"{dtype}[3, 2] a slice of [3, 4]", lambda dev: (
        (make_tensor(83, (3, 4), dtype, dev)[:, 2:],), {}))


# (equation, operand shapes): a product, a diagonal, a trace, a diagonal beside a product,
# a broadcast size-1 dim, ellipses that broadcast
EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("iij,jk->ik", [(2, 2, 3), (3, 2)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (1, 3, 2)]),
]


def _einsum_samples(dtype):
    dt = _complex(dtype)
    for i, (eq, shapes) in enumerate(EINSUM):
        yield SampleInput(f"{dt} {eq} {[list(s) for s in shapes]}",
                          lambda dev, i=i, eq=eq, shapes=shapes: ((eq,) + tuple(
                              make_tensor(90 + 4 * i + j, s, dt, dev)
                              for j, s in enumerate(shapes)), {}))


def _entry(name, fn, samples, covers, **kw):
    return OpInfo(name, fn, samples, FLOATS, covers=covers, **kw)


OPS = [
    _entry("view_as_real", lambda z: ember.view_as_real(z) * 1, _samples(1),
           ("view_as_real",)),
    _entry("view_as_complex", lambda x: ember.view_as_complex(x) * 1, _pairs,
           ("view_as_complex",)),
    _entry("real/imag", lambda z: (z.real * 2, z.imag * 3), _samples(1),
           ("view_as_real", "select")),
    _entry("angle", ember.angle, _samples(1), ("angle",)),
    _entry("angle real", ember.angle, _samples(1, complex_input=False), ("angle",)),
    _entry("sgn", ember.sgn, _samples(1), ("sgn",)),
    _entry("sgn real", ember.sgn, _samples(1, complex_input=False), ("sgn",)),
    _entry("sgn_", lambda z: z.clone().sgn_(), _samples(1), ("sgn_",), differentiable=False),
    _entry("abs complex", ember.abs, _samples(1), ("abs",)),
    _entry("conj complex", ember.conj, _samples(1), ("conj_physical",)),
    _entry("complex", ember.complex, _samples(2, complex_input=False), ("complex",)),
    _entry("polar", ember.polar, _samples(2, complex_input=False, positive=True),
           ("polar",)),
    _entry("complex arithmetic", lambda a, b: (a + b * (2 - 1j), a * b, a - b), _samples(2),
           ("add", "mul", "sub")),
    _entry("complex division", lambda a, b: a / (b + 4), _samples(2, positive=True),
           ("div",)),
    _entry("complex sum/mean", lambda z: (z.sum(0), z.mean()), _samples(1), ("sum", "mean")),
    _entry("complex exp/log/sqrt", lambda z: (z.exp(), (z + 4).log(), z.sqrt()),
           _samples(1, positive=True), ("exp", "log", "sqrt")),
    _entry("einsum complex", ember.einsum, _einsum_samples, ("einsum",),
           tolerances={"float32": (1e-4, 1e-5)}),
]
