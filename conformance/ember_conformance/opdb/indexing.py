"""Entries for ``ember.ops.indexing`` and ``ember.ops.sorting``."""
from __future__ import annotations

import ember

from . import ALL_REAL, FLOATS, LAYOUTS, OpInfo, SampleInput, make_tensor

NUMERIC = FLOATS + ("int64", "int32")


def _x(shape=(3, 4), layouts=LAYOUTS):
    def samples(dtype):
        for i, layout in enumerate(layouts):
            yield SampleInput(f"{dtype}{list(shape)} {layout}",
                              lambda dev, i=i, lay=layout, dt=dtype: (
                                  (make_tensor(70 + i, shape, dt, dev, layout=lay),), {}))
    return samples


def _idx(device, values):
    return ember.tensor(values, dtype=ember.int64, device=device)


def _setitem(index_fn, value=7):
    def run(x):
        y = x.clone()
        y[index_fn(y)] = value
        return y
    return run


def _index_with(build):
    """Ops taking index tensors: the entry builds the indices on the sample's device."""
    def run(x):
        return build(x, x.device)
    return run


X = _x()
X3 = _x((2, 3, 4), ("contiguous", "transposed"))
OPS = [
    OpInfo("getitem basic", lambda x: x[1:, ::2], X, ALL_REAL, covers=("slice",)),
    OpInfo("getitem int list", lambda x: x[[0, 2, 2]], X, ALL_REAL, covers=("index",)),
    OpInfo("getitem two tensors", _index_with(lambda x, d: x[_idx(d, [0, 2]), _idx(d, [1, 3])]),
           X, ALL_REAL, covers=("index",)),
    OpInfo("getitem non-adjacent", _index_with(lambda x, d: x[_idx(d, [1, 0]), :,
                                                              _idx(d, [3, 2])]),
           X3, ALL_REAL, covers=("index",)),
    OpInfo("getitem bool mask", lambda x: x[x > 0] if x.dtype != ember.bool else x[x],
           X, ALL_REAL, covers=("index", "nonzero")),
    OpInfo("setitem slice", _setitem(lambda y: (slice(None), slice(1, 3))), X, ALL_REAL,
           covers=("copy_",), differentiable=False),
    OpInfo("setitem advanced", _setitem(lambda y: ([0, 2], [1, 1]), value=5), X, NUMERIC,
           covers=("index_put_",), differentiable=False),
    OpInfo("setitem mask", _setitem(lambda y: y > 1, value=0), X, NUMERIC,
           covers=("index_put_",), differentiable=False),
    OpInfo("index_put accumulate",
           _index_with(lambda x, d: x.index_put((_idx(d, [0, 0, 2]),),
                                                ember.ones(3, 4, dtype=x.dtype, device=d),
                                                accumulate=True)),
           X, NUMERIC, covers=("index_put", "index_put_")),
    OpInfo("index_put", _index_with(lambda x, d: ember.index_put(
        x, (_idx(d, [2, 0, 1]), _idx(d, [1, 3, 1])), x[0, 1:] * 2)),
        X, NUMERIC, covers=("index_put", "index_put_")),
    OpInfo("gather", _index_with(lambda x, d: x.gather(1, _idx(d, [[0, 3], [1, 1], [2, 0]]))),
           X, ALL_REAL, covers=("gather",)),
    OpInfo("scatter", _index_with(lambda x, d: x.scatter(
        1, _idx(d, [[0, 3], [1, 2], [2, 0]]), ember.full((3, 2), 9, dtype=x.dtype, device=d))),
        X, NUMERIC, covers=("scatter",)),
    OpInfo("scatter value", _index_with(lambda x, d: x.scatter(0, _idx(d, [[2, 0, 1, 1]]),
                                                               value=4)),
           X, NUMERIC, covers=("scatter",), differentiable=False),
    OpInfo("scatter_add", _index_with(lambda x, d: x.scatter_add(
        1, _idx(d, [[0, 0], [1, 1], [3, 3]]), ember.ones(3, 2, dtype=x.dtype, device=d))),
        X, NUMERIC, covers=("scatter",)),
    OpInfo("index_select", _index_with(lambda x, d: x.index_select(1, _idx(d, [3, 0, 3]))),
           X, ALL_REAL, covers=("index_select",)),
    OpInfo("index_add", _index_with(lambda x, d: x.index_add(
        0, _idx(d, [2, 2]), ember.ones(2, 4, dtype=x.dtype, device=d), alpha=2)),
        X, NUMERIC, covers=("index_add",)),
    OpInfo("masked_fill", lambda x: x.masked_fill(x > 0 if x.dtype != ember.bool else x, 3),
           X, ALL_REAL, covers=("masked_fill_scalar",)),
    OpInfo("masked_fill_", lambda x: x.clone().masked_fill_(
        x > 0 if x.dtype != ember.bool else x, 3), X, ALL_REAL,
        covers=("masked_fill_scalar_",), differentiable=False),
    OpInfo("masked_fill_ tensor value", lambda x: x.clone().masked_fill_(
        x > 0 if x.dtype != ember.bool else x, x[0, 1] * 2), X, ALL_REAL,
        covers=("masked_fill_",), differentiable=False),
    OpInfo("masked_fill tensor value", lambda x: x.masked_fill(
        x > 0 if x.dtype != ember.bool else x, x[0, 1] * 2), X, ALL_REAL,
        covers=("masked_fill",)),
    OpInfo("masked_select", lambda x: x.masked_select(x > 0 if x.dtype != ember.bool else x),
           X, ALL_REAL, covers=("masked_select",)),
    OpInfo("nonzero", lambda x: x.nonzero(), X, ALL_REAL, covers=("nonzero",),
           differentiable=False),
    OpInfo("take", _index_with(lambda x, d: x.take(_idx(d, [[0, 11], [5, 5]]))), X, ALL_REAL,
           covers=("take",)),
    OpInfo("take negative, 0-d", _index_with(lambda x, d: (x.take(_idx(d, [-1, -12, 3])),
                                                           x.take(_idx(d, 4)))),
           X, NUMERIC, covers=("take",)),
    OpInfo("put", _index_with(lambda x, d: x.put(_idx(d, [[1, -1], [4, 0]]),
                                                 x[1:, 1:3] * 2)),
           X, NUMERIC, covers=("put",)),
    OpInfo("put_", _index_with(lambda x, d: x.clone().put_(_idx(d, [[1, -1], [4, 0]]),
                                                           x[1:, 1:3] * 2)),
           X, NUMERIC, covers=("put_",), differentiable=False),
    OpInfo("put accumulate", _index_with(lambda x, d: x.put(
        _idx(d, [2, 2, -3]), ember.tensor([1, 2, 3], dtype=x.dtype, device=d) * x[0, :3],
        accumulate=True)), X, NUMERIC, covers=("put",)),
    OpInfo("one_hot", lambda x: ember.one_hot(x.abs() % 4, 5), X, ("int64",),
           covers=("eq",), differentiable=False),
    OpInfo("sort", lambda x: x.sort(dim=1), X, NUMERIC + ("bool",), covers=("sort",)),
    OpInfo("sort descending", lambda x: x.sort(dim=0, descending=True, stable=True), X,
           NUMERIC, covers=("sort",)),
    OpInfo("argsort", lambda x: x.argsort(dim=-1, stable=True), X, NUMERIC, covers=("sort",),
           differentiable=False),
    OpInfo("topk", lambda x: x.topk(2, dim=1), X, NUMERIC, covers=("sort", "topk")),
    OpInfo("kthvalue", lambda x: x.kthvalue(2, dim=1), X, NUMERIC, covers=("sort", "kthvalue")),
    OpInfo("median", lambda x: x.median(dim=0), X, NUMERIC, covers=("sort", "median_dim")),
    OpInfo("nanmedian", lambda x: x.nanmedian(dim=1, keepdim=True), X, NUMERIC,
           covers=("sort", "nanmedian_dim")),
    OpInfo("median of all", lambda x: (x.median(), x.nanmedian()), X, NUMERIC,
           covers=("median_all", "nanmedian_all")),
    OpInfo("mode", lambda x: (x.abs() % 3).mode(dim=1) if x.dtype != ember.bool else
           x.mode(dim=1), X, ALL_REAL, covers=("mode",), differentiable=False),
    OpInfo("unique", lambda x: ember.unique(x.abs() % 3 if x.dtype != ember.bool else x,
                                            return_inverse=True, return_counts=True),
           X, ALL_REAL, covers=("unique",), differentiable=False),
    OpInfo("unique dim", lambda x: ember.unique(x.abs() % 2 if x.dtype != ember.bool else x,
                                                dim=0), X, ALL_REAL, covers=("unique",),
           differentiable=False),
]
