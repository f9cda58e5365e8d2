"""Entries for the composed losses (``nn/_margin_loss.py``, ``nn/_loss.py``) and activations
(margin, embedding, multi-label, triplet, Poisson and Gaussian NLL losses; the shrinks): values
on the backend under test against the CPU, gradients and double backward against finite
differences. They cover no registry op of their own."""
from __future__ import annotations

import ember
from ember.nn import functional as F

from ._cases import entry


def _const(values, dtype=None):
    return ("fn", lambda dev, dt: ember.tensor(values, dtype=dtype or dt, device=dev))


def _signs_of(x):
    """The +-1 targets as a constant, not an operand: the losses are discontinuous in them,
    so differencing them (the jvp suite perturbs every float operand) says nothing."""
    return ember.tensor([1.0, -1.0, -1.0, 1.0], dtype=x.dtype, device=x.device)


_SIGNS = _const([1.0, -1.0, -1.0, 1.0])
_CLASSES = ("fn", lambda dev, dt: ember.tensor([2, 0, 3], dtype=ember.int64, device=dev))
_MULTI = ("fn", lambda dev, dt: ember.tensor([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 1, 0, 0]],
                                             dtype=ember.int64, device=dev))
_REDS = ("mean", "sum", "none")

OPS = [
    entry("margin_ranking_loss", lambda a, b, y, **kw: F.margin_ranking_loss(a, b, y, **kw),
          ("margin 0.3", [((4,), "x"), ((4,), "l"), _SIGNS], dict(margin=0.3)),
          ("none", [((4,), "x"), ((4,), "x"), _SIGNS], dict(reduction="none"))),
    entry("hinge_embedding_loss",
          lambda x, **kw: F.hinge_embedding_loss(x, _signs_of(x), **kw),
          ("margin 0.7", [((4,), "x")], dict(margin=0.7)),
          ("sum", [((3, 4), "l")], dict(reduction="sum"))),
    entry("cosine_embedding_loss",
          lambda a, b, **kw: F.cosine_embedding_loss(a, b, _signs_of(a), **kw),
          ("rows", [((4, 3), "x"), ((4, 3), "l")], dict(margin=-0.2))),
    entry("soft_margin_loss", lambda x, y: F.soft_margin_loss(x, y),
          ("signs", [((2, 4), "x"), _const([[1.0, -1.0, 1.0, 1.0], [-1.0, -1.0, 1.0, -1.0]])],
           {})),
    entry("multilabel_soft_margin_loss",
          lambda x, y, w=None: F.multilabel_soft_margin_loss(x, y, weight=w),
          ("weighted", [((3, 4), "x"), ((3, 4), ("f", 0.0, 1.0)), ((4,), ("f", 0.5, 2.0))], {})),
    entry("multilabel_margin_loss", lambda x, y, **kw: F.multilabel_margin_loss(x, y, **kw),
          ("rows", [((3, 4), "x"), _MULTI], {}),
          ("none", [((3, 4), "l"), _MULTI], dict(reduction="none"))),
    entry("multi_margin_loss", lambda x, y, **kw: F.multi_margin_loss(x, y, **kw),
          ("p 1", [((3, 4), "x"), _CLASSES], {}),
          ("p 2 weighted", [((3, 4), "l"), _CLASSES], dict(p=2, margin=0.5))),
    entry("triplet_margin_loss", lambda a, p, n, **kw: F.triplet_margin_loss(a, p, n, **kw),
          ("p 2", [((3, 4), "x"), ((3, 4), "x"), ((3, 4), "l")], {}),
          ("p 1 swap", [((3, 4), "x"), ((3, 4), "l"), ((3, 4), "x")], dict(p=1.0, swap=True))),
    entry("poisson_nll_loss", lambda x, y, **kw: F.poisson_nll_loss(x, y, **kw),
          ("log input, full", [((3, 4), "x"), ((3, 4), ("f", 0.0, 4.0))], dict(full=True)),
          ("rate input", [((3, 4), ("f", 0.2, 3.0)), ((3, 4), ("f", 0.0, 4.0))],
           dict(log_input=False))),
    entry("gaussian_nll_loss", lambda x, y, v, **kw: F.gaussian_nll_loss(x, y, v, **kw),
          ("full", [((3, 4), "x"), ((3, 4), "l"), ((3, 4), ("f", 0.1, 2.0))], dict(full=True)),
          ("var per row", [((3, 4), "x"), ((3, 4), "x"), ((3,), ("f", 0.1, 2.0))],
           dict(reduction="sum"))),
    entry("hardshrink", lambda x: F.hardshrink(x, 0.4), ("[3,5]", [((3, 5), "l")], {})),
    entry("softshrink", lambda x: F.softshrink(x, 0.4), ("[3,5]", [((3, 5), "x")], {})),
]


def _cross_map_lrn2d(x, size):
    from ember.nn._normalization import cross_map_lrn2d
    return cross_map_lrn2d(x, size, 0.3, 0.6, 1.5)


OPS += [
    entry("nn.instance_norm", lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
          ("affine [2,3,5]", [((2, 3, 5), "x"), ((3,), "x"), ((3,), "l")], {}),
          ("[2,3,2,3]", [((2, 3, 2, 3), "l"), ("const", None), ("const", None)], {}),
          tolerances={"float32": (1e-4, 1e-5)}),
    entry("nn.local_response_norm", lambda x, n: F.local_response_norm(x, n, 0.3, 0.6, 1.5),
          ("3-D size 3", [((2, 5, 4), "x"), ("const", 3)], {}),
          ("4-D size 2", [((1, 4, 2, 3), "l"), ("const", 2)], {})),
    entry("nn.cross_map_lrn2d", _cross_map_lrn2d,
          ("size 5", [((1, 7, 2, 2), "x"), ("const", 5)], {})),
]
