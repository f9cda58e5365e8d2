"""Entries for ``ember.ops.distances``: cdist at every p case (direct and matrix-product
paths, broadcast batch dims), pdist, dist, and the nn distance functions."""
from __future__ import annotations

import ember
from ember.nn import functional as F

from ._cases import entry
from ember.ops.distances import _cdist_backward_op

_BOTH = ("_cdist_forward", "_cdist_backward")
_LOOSE = {"float32": (1e-4, 1e-5)}
_PAIR = [("[2,4,3] x [2,5,3]", [((2, 4, 3), "x"), ((2, 5, 3), "x")], {}),
         ("broadcast batch, transposed", [((3, 1, 4, 2), "x"), ((2, 5, 2), "l")], {})]

OPS = [entry(f"cdist p={p}", lambda a, b, p=p: ember.cdist(a, b, p=p), *_PAIR, covers=_BOTH,
             tolerances=_LOOSE) for p in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf"))]
OPS += [
    entry("cdist euclid mm", lambda a, b: ember.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
          *_PAIR, tolerances={"float32": (1e-3, 1e-4), "float64": (1e-7, 1e-7)}),
    entry("pdist", lambda x, p: ember.pdist(x, p),
          ("p 2", [((5, 3), "x"), ("const", 2.0)], {}),
          ("p 1", [((4, 2), "l"), ("const", 1.0)], {}), covers=_BOTH, tolerances=_LOOSE),
    entry("dist", lambda a, b: ember.dist(a, b, 3), ("broadcast", [((3, 4), "x"), ((4,), "x")], {}),
          tolerances=_LOOSE),
    entry("pairwise_distance", lambda a, b: F.pairwise_distance(a, b, p=1.5),
          ("rows", [((3, 4), "x"), ((3, 4), "l")], {}), tolerances=_LOOSE),
    entry("cosine_similarity", lambda a, b: F.cosine_similarity(a, b, dim=-1),
          ("broadcast", [((3, 4), "x"), ((4,), "x")], {}), tolerances=_LOOSE),
]
# the backward op called directly: its values (and meta shapes) beside the gradient checks above
OPS += [
    entry("_cdist_backward", lambda g, a, b: _cdist_backward_op(g, a, b, 2.0, ember.cdist(a, b)),
          ("p 2", [((2, 4, 5), "x"), ((2, 4, 3), "x"), ((2, 5, 3), "x")], {}),
          covers=("_cdist_backward",), differentiable=False, tolerances=_LOOSE),
]
