"""Conversions and copies."""
from __future__ import annotations

import ember

from . import ALL_REAL, LAYOUTS, OpInfo, SampleInput, make_tensor


def _samples(dtype):
    for i, layout in enumerate(LAYOUTS):
        yield SampleInput(f"{dtype}[3, 4] {layout}",
                          lambda dev, i=i, lay=layout, dt=dtype: (
                              (make_tensor(30 + i, (3, 4), dt, dev, layout=lay),), {}))


def _copy_into(x):
    dst = ember.zeros(3, 4, dtype=ember.float64, device=x.device)
    return dst.copy_(x)


OPS = [OpInfo(f"to {target}", lambda x, t=target: x.to(getattr(ember, t)), _samples, ALL_REAL,
              covers=("_to_copy",), differentiable=target in ("float32", "float64"))
       for target in ("float32", "float64", "int64", "int32", "bool", "float16")]
OPS += [
    OpInfo("clone", lambda x: x.clone(), _samples, ALL_REAL, covers=("clone", "_to_copy")),
    OpInfo("contiguous", lambda x: x.contiguous(), _samples, ALL_REAL, covers=("_to_copy",)),
    OpInfo("copy_", _copy_into, _samples, ALL_REAL, covers=("copy_",), differentiable=False),
]
