"""Factories: constants and ranges made directly on the device."""
from __future__ import annotations

import ember

from . import OpInfo, SampleInput


def _on(fn):
    """Factory entries take no tensor: each sample carries only the device."""
    def samples(dtype):
        yield SampleInput(dtype, lambda dev, dt=dtype: ((dev, getattr(ember, dt)), {}))
    return samples


NUMERIC = ("float32", "float64", "int64", "int32")
OPS = [
    OpInfo("zeros", lambda d, dt: ember.zeros(2, 3, dtype=dt, device=d), _on(None),
           NUMERIC + ("bool",), covers=("full",), differentiable=False),
    OpInfo("full", lambda d, dt: ember.full((4,), 7, dtype=dt, device=d), _on(None), NUMERIC,
           covers=("full",), differentiable=False),
    OpInfo("arange", lambda d, dt: ember.arange(1, 20, 3, dtype=dt, device=d), _on(None),
           NUMERIC, covers=("arange",), differentiable=False),
    OpInfo("arange float step", lambda d, dt: ember.arange(0.0, 2.0, 0.25, dtype=dt, device=d),
           _on(None), ("float32", "float64"), covers=("arange",), differentiable=False),
    OpInfo("linspace", lambda d, dt: ember.linspace(-1, 3, 9, dtype=dt, device=d), _on(None),
           ("float32", "float64"), covers=("linspace",), differentiable=False),
    OpInfo("eye", lambda d, dt: ember.eye(3, 5, dtype=dt, device=d), _on(None),
           NUMERIC + ("bool",), covers=("eye",), differentiable=False),
    OpInfo("empty shape", lambda d, dt: ember.empty(2, 0, 3, dtype=dt, device=d), _on(None),
           NUMERIC, covers=("empty",), differentiable=False),
]
