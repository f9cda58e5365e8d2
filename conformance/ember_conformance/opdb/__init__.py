"""The op database: one ``OpInfo`` per op family member, with sample inputs.

An ``OpInfo`` names the registry ops it exercises (``covers``), a callable in the public API,
the dtypes it supports, whether it is differentiable, and a sample-input generator. Sample
inputs are built by deterministic functions of a device, so the same values exist on the CPU
and on the backend under test, including the same non-contiguous layouts.

``uncovered_ops()`` lists registry ops no entry covers; the suite fails while it is non-empty,
so coverage cannot silently shrink.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import ember

FLOATS = ("float32", "float64")
INTS = ("int64", "int32")
ALL_REAL = FLOATS + INTS + ("bool",)

# layouts every tensor argument can take: the same values, different strides
LAYOUTS = ("contiguous", "transposed", "strided", "expanded")


@dataclass
class SampleInput:
    desc: str
    build: Callable          # build(device) -> (args, kwargs)


@dataclass
class OpInfo:
    name: str
    fn: Callable
    samples: Callable        # samples(dtype_name) -> iterable of SampleInput
    dtypes: tuple = FLOATS
    covers: tuple | None = None   # registry op names this entry exercises (None: (name,);
    #                               () for compositions such as nn layers, which cover none)
    differentiable: bool = True
    grad_dtypes: tuple = FLOATS
    ref: Callable | None = None          # optional numpy reference: ref(*np_args, **kwargs)
    tolerances: dict = field(default_factory=dict)   # dtype name -> (rtol, atol)
    random: bool = False     # outputs depend on the RNG: compared by properties, not values
    vmap: bool = True        # False: ember.func (like torch.func) refuses it under vmap

    def __post_init__(self):
        if self.covers is None:
            self.covers = (self.name,)


def make_tensor(seed, shape, dtype, device, *, low=-3.0, high=3.0, layout="contiguous",
                requires_grad=False):
    """A deterministic tensor: same seed → same values on every device, in ``layout``."""
    rng = np.random.default_rng(seed)
    np_dtype = ember._dtype.as_dtype(dtype).np
    shape = tuple(shape)
    if np.dtype(np_dtype).kind == "b":
        values = rng.random(shape) > 0.5
    elif np.dtype(np_dtype).kind in "iu":
        values = rng.integers(int(low), int(high) + 1, size=shape)
    elif np.dtype(np_dtype).kind == "c":
        values = rng.uniform(low, high, shape) + 1j * rng.uniform(low, high, shape)
    else:
        values = rng.uniform(low, high, shape)
    values = np.asarray(values).astype(np_dtype)
    t = _laid_out(values, layout, device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _laid_out(values, layout, device):
    shape = values.shape
    if layout == "transposed" and len(shape) >= 2:
        base = ember.tensor(np.ascontiguousarray(np.swapaxes(values, -1, -2)), device=device)
        return base.transpose(-1, -2)
    if layout == "strided" and len(shape) >= 1:
        padded = np.zeros(shape[:-1] + (shape[-1] * 2,), dtype=values.dtype)
        padded[..., ::2] = values
        base = ember.tensor(padded, device=device)
        return base.as_strided(shape, base.stride()[:-1] + (2,), 0)
    if layout == "expanded" and len(shape) >= 1:
        # an expanded (stride-0) tensor repeats its first row; the values follow from that
        return ember.tensor(values[:1], device=device).expand(*shape)
    return ember.tensor(values, device=device)


_FAMILIES = ["elementwise", "special", "views", "conversion", "factories", "reduction", "linalg",
             "decompositions", "shape", "indexing", "random", "sampling", "nn", "nn_ops", "foreach",
             "attention", "rnn", "complex", "fft",
             # issue #25's families
             "ternary", "spatial", "resampling", "grid_sampling", "embedding_bag",
             "distances", "ctc", "nn_compositions", "surface", "sparse",
             # issue #30: torch.masked, windows and the other factories
             "masked"]


def all_opinfos() -> list:
    entries = []
    for fam in _FAMILIES:
        try:
            mod = importlib.import_module(f"{__name__}.{fam}")
        except ModuleNotFoundError as e:
            if e.name == f"{__name__}.{fam}":
                continue
            raise
        entries.extend(mod.OPS)
    return entries


# registry ops exercised only through other entries or by the contract suites
CONTRACT_COVERED = {
    "_to_device": "copies contract (host <-> device, device <-> device)",
    "copy_": "copies contract and every in-place sample",
    "empty": "allocator contract",
}


def uncovered_ops() -> list:
    from ember.dispatch.dispatcher import all_ops
    covered = set(CONTRACT_COVERED)
    for info in all_opinfos():
        covered.update(info.covers)
    return sorted(n for n in all_ops() if n not in covered and "::" not in n)
