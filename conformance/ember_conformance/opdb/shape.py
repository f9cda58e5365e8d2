"""Entries for ``ember.ops.shape``: cat/stack, flip, roll, repeat/tile, tril/triu."""
from __future__ import annotations

import ember

from . import ALL_REAL, LAYOUTS, OpInfo, SampleInput, make_tensor


def _one(shape, layouts=LAYOUTS):
    def samples(dtype):
        for i, layout in enumerate(layouts):
            yield SampleInput(f"{dtype}{list(shape)} {layout}",
                              lambda dev, i=i, lay=layout, dt=dtype: (
                                  (make_tensor(50 + i, shape, dt, dev, layout=lay),), {}))
    return samples


def _many(shapes):
    def samples(dtype):
        for j, layout in enumerate(("contiguous", "transposed")):
            yield SampleInput(f"{dtype} {shapes} {layout}",
                              lambda dev, j=j, lay=layout, dt=dtype: (
                                  ([make_tensor(60 + 10 * j + i, s, dt, dev, layout=lay)
                                    for i, s in enumerate(shapes)],), {}))
    return samples


S34 = _one((3, 4))
OPS = [
    OpInfo("cat", lambda ts: ember.cat(ts, 1), _many([(3, 2), (3, 4), (3, 1)]), ALL_REAL,
           covers=("cat",)),
    OpInfo("cat dim0 with empty", lambda ts: ember.cat(ts + [ember.tensor([], dtype=ts[0].dtype,
                                                                          device=ts[0].device)]),
           _many([(2, 3), (1, 3)]), ALL_REAL, covers=("cat",)),
    OpInfo("stack", lambda ts: ember.stack(ts, dim=1), _many([(3, 4), (3, 4)]), ALL_REAL,
           covers=("stack",)),
    OpInfo("stack last dim", lambda ts: ember.stack(ts, dim=-1), _many([(2, 3), (2, 3), (2, 3)]),
           ALL_REAL, covers=("stack",)),
    OpInfo("flip", lambda x: x.flip(0, 1), S34, ALL_REAL, covers=("flip",)),
    OpInfo("roll", lambda x: x.roll((1, -2), (0, 1)), S34, ALL_REAL, covers=("roll",)),
    OpInfo("roll flat", lambda x: x.roll(5), S34, ALL_REAL, covers=("roll",)),
    OpInfo("repeat", lambda x: x.repeat(2, 1, 3), S34, ALL_REAL, covers=("tile",)),
    OpInfo("tile", lambda x: x.tile(2), S34, ALL_REAL, covers=("tile",)),
    OpInfo("tril", lambda x: x.tril(1), S34, ALL_REAL, covers=("tril",)),
    OpInfo("triu", lambda x: x.triu(-1), _one((2, 3, 4), ("contiguous", "transposed")),
           ALL_REAL, covers=("triu",)),
]
