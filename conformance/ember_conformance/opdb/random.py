"""Random ops: backends draw from their own generators, so values are not compared with the
CPU — shapes, dtypes and devices are (``random=True``); the RNG contract suite checks
reproducibility and distributions."""
from __future__ import annotations

import ember

from . import FLOATS, OpInfo, SampleInput, make_tensor


def _device_only(dtype):
    yield SampleInput(dtype, lambda dev, dt=dtype: ((dev, getattr(ember, dt)), {}))


def _probs(dtype):
    yield SampleInput(dtype, lambda dev, dt=dtype: (
        (make_tensor(80, (3, 5), dt, dev, low=0.1, high=1.0),), {}))


def _target(dtype):
    yield SampleInput(dtype, lambda dev, dt=dtype: ((make_tensor(81, (4, 3), dt, dev),), {}))


def _inplace(method, *args):
    def run(x):
        y = x.clone()
        getattr(y, method)(*args)
        return y
    return run


INTS = ("int64", "int32")
OPS = [OpInfo(name, fn, samples, dtypes, covers=covers, differentiable=False, random=True)
       for name, fn, samples, dtypes, covers in [
           ("rand", lambda d, dt: ember.rand(3, 4, dtype=dt, device=d), _device_only, FLOATS,
            ("rand",)),
           ("randn", lambda d, dt: ember.randn(2, 5, dtype=dt, device=d), _device_only, FLOATS,
            ("randn",)),
           ("randint", lambda d, dt: ember.randint(-3, 7, (4, 2), dtype=dt, device=d),
            _device_only, INTS + FLOATS, ("randint",)),
           ("randperm", lambda d, dt: ember.randperm(9, dtype=dt, device=d), _device_only, INTS,
            ("randperm",)),
           ("normal", lambda d, dt: ember.normal(0.5, 2.0, (3, 3), dtype=dt, device=d),
            _device_only, FLOATS, ("normal",)),
           ("normal tensors", lambda p: ember.normal(p, p), _probs, FLOATS, ("normal",)),
           ("bernoulli", lambda p: ember.bernoulli(p), _probs, FLOATS, ("bernoulli", "bernoulli_")),
           ("multinomial", lambda p: ember.multinomial(p, 2), _probs, FLOATS,
            ("multinomial",)),
           ("uniform_", _inplace("uniform_", -1.0, 1.0), _target, FLOATS, ("uniform_",)),
           ("normal_", _inplace("normal_", 0.0, 1.0), _target, FLOATS, ("normal_",)),
           ("random_", _inplace("random_", 0, 10), _target, FLOATS + INTS, ("random_",)),
           ("exponential_", _inplace("exponential_", 2.0), _target, FLOATS,
            ("exponential_",)),
           ("bernoulli_", _inplace("bernoulli_", 0.3), _target, FLOATS, ("bernoulli_",)),
       ]]
# fill_ is deterministic: compared by value
OPS.append(OpInfo("fill_", _inplace("fill_", 2.5), _target, FLOATS + INTS, covers=("fill_",),
                  differentiable=False))
OPS.append(OpInfo("zero_", _inplace("zero_"), _target, FLOATS + INTS, covers=("zero_",),
                  differentiable=False))
