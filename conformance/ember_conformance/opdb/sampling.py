"""The distribution samplers (``ember.ops.sampling``): draws are compared by shape, dtype and
device (``random=True``; ``tests/test_sampling.py`` checks their moments per backend); the
implicit-reparameterization gradient of the gamma sampler is deterministic and compared by
value."""
from __future__ import annotations

import ember

from . import FLOATS, OpInfo, SampleInput, make_tensor


def _positive(dtype):
    yield SampleInput(f"{dtype} [3, 5]", lambda dev, dt=dtype: (
        (make_tensor(90, (3, 5), dt, dev, low=0.2, high=12.0),), {}))
    yield SampleInput(f"{dtype} [4] transposed-free", lambda dev, dt=dtype: (
        (make_tensor(91, (4,), dt, dev, low=0.05, high=0.9),), {}))
    yield SampleInput(f"{dtype} [0]", lambda dev, dt=dtype: (
        (make_tensor(92, (0,), dt, dev),), {}))


def _count_prob(dtype):
    yield SampleInput(f"{dtype} [3, 4]", lambda dev, dt=dtype: (
        (make_tensor(93, (3, 4), dt, dev, low=0.0, high=60.0).floor(),
         make_tensor(94, (3, 4), dt, dev, low=0.0, high=1.0)), {}))


def _alpha_x(dtype):
    for i, (lo, hi) in enumerate([(0.2, 0.7), (0.5, 5.0), (9.0, 30.0)]):
        yield SampleInput(f"{dtype} [3, 4] x in [{lo}, {hi}]", lambda dev, dt=dtype, i=i, lo=lo,
                          hi=hi: ((make_tensor(95 + i, (3, 4), dt, dev, low=0.3, high=20.0),
                                   make_tensor(98 + i, (3, 4), dt, dev, low=lo, high=hi)), {}))


OPS = [
    OpInfo("_standard_gamma", ember._standard_gamma, _positive, FLOATS,
           covers=("_standard_gamma",), differentiable=False, random=True),
    OpInfo("_sample_dirichlet", ember._sample_dirichlet, _positive, FLOATS,
           covers=("_sample_dirichlet",), differentiable=False, random=True),
    OpInfo("poisson", ember.poisson, _positive, FLOATS, covers=("poisson",),
           differentiable=False, random=True),
    OpInfo("binomial", ember.binomial, _count_prob, FLOATS, covers=("binomial",),
           differentiable=False, random=True),
    OpInfo("_standard_gamma_grad", ember._standard_gamma_grad, _alpha_x, FLOATS,
           covers=("_standard_gamma_grad",), differentiable=False,
           tolerances={"float32": (1e-4, 1e-5)}),
]
