"""Entries for ``ember.ops.embedding_bag`` through ``F.embedding_bag``: sum (with and without
per-sample weights), mean and max, offsets with an empty bag, 2-D inputs, padding_idx and
include_last_offset. The gradient check runs ``embedding_bag_backward``."""
from __future__ import annotations

import ember
from ember.nn import functional as F

from ._cases import entry

_BOTH = ("embedding_bag", "embedding_bag_backward")


def _idx(values):
    return ("fn", lambda dev, dt: ember.tensor(values, dtype=ember.int64, device=dev))


_I = _idx([1, 2, 0, 3, 3, 5, 5, 4])
_OFF = _idx([0, 2, 2, 4])
_OFF_LAST = _idx([0, 2, 2, 4, 8])

OPS = [
    entry("embedding_bag sum", lambda w, i, o, **kw: F.embedding_bag(i, w, o, mode="sum", **kw),
          ("empty bag", [((6, 3), "x"), _I, _OFF], {}),
          ("include_last_offset, transposed weight", [((6, 3), "l"), _I, _OFF_LAST],
           dict(include_last_offset=True)),
          ("padding_idx 3", [((6, 4), "x"), _I, _OFF], dict(padding_idx=3)),
          covers=_BOTH),
    entry("embedding_bag per_sample_weights",
          lambda w, i, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
          ("sum", [((6, 3), "x"), _I, _OFF, ((8,), "x")], {}), covers=_BOTH),
    entry("embedding_bag mean", lambda w, i, o, **kw: F.embedding_bag(i, w, o, mode="mean", **kw),
          ("empty bag", [((6, 3), "x"), _I, _OFF], {}),
          ("padding_idx", [((6, 3), "x"), _I, _OFF], dict(padding_idx=5)),
          covers=_BOTH),
    entry("embedding_bag max", lambda w, i, o, **kw: F.embedding_bag(i, w, o, mode="max", **kw),
          ("empty bag", [((6, 3), "x"), _I, _OFF], {}),
          ("padding_idx", [((6, 3), "l"), _I, _OFF], dict(padding_idx=3)),
          covers=_BOTH),
    entry("embedding_bag 2-D input", lambda w, i: F.embedding_bag(i, w, mode="mean"),
          ("[2, 3] bags", [((6, 3), "x"), _idx([[1, 2, 3], [4, 4, 0]])], {}), covers=_BOTH),
]


def _backward(w, i, o, g, mode, psw=None):
    """The backward op on its own (as autograd runs it), with a given output gradient."""
    from ember.ops import embedding_bag as eb
    code = eb._MODES[mode]
    _, offset2bag, bag_size, max_indices = eb.embedding_bag_op(w, i, o, code, psw, False, -1)
    return eb.embedding_bag_backward_op(g, i, offset2bag, bag_size, max_indices, w.shape[0],
                                        code, psw, -1)


OPS += [
    entry(f"embedding_bag_backward {mode}", lambda w, i, o, g, mode=mode: _backward(w, i, o, g,
                                                                                   mode),
          ("empty bag", [((6, 3), "x"), _I, _OFF, ((4, 3), "l")], {}),
          covers=("embedding_bag_backward",))
    for mode in ("sum", "mean", "max")]
