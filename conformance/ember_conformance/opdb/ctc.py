"""Entries for ``ember.ops.ctc`` through ``F.ctc_loss``: padded and concatenated targets,
repeated labels, an empty target, a short input, a non-zero blank, every reduction. The input
passes through ``log_softmax`` first, as in real use: the backward op returns PyTorch's
gradient of the pre-softmax activations, which equals the derivative only through it."""
from __future__ import annotations

import ember
from ember.nn import functional as F

from ._cases import entry

_BOTH = ("_ctc_loss", "_ctc_loss_backward")


def _long(values):
    return ("fn", lambda dev, dt: ember.tensor(values, dtype=ember.int64, device=dev))


_PADDED = _long([[1, 2, 2], [3, 1, 0], [2, 0, 0]])
_FLAT = _long([1, 2, 2, 3, 1, 2])


def _ctc(x, targets, in_len, tg_len, **kw):
    return F.ctc_loss(x.log_softmax(-1), targets, in_len, tg_len, **kw)


OPS = [
    entry("ctc_loss", _ctc,
          ("padded, repeats, empty target", [((6, 3, 4), "x"), _PADDED, ("const", [6, 5, 2]),
                                             ("const", [3, 2, 0])], dict(reduction="none")),
          ("concatenated, mean", [((6, 3, 4), "x"), _FLAT, ("const", [6, 6, 4]),
                                  ("const", [3, 2, 1])], dict(reduction="mean")),
          ("blank 3, sum", [((5, 2, 4), "x"), _long([[1, 2], [0, 0]]), ("const", [5, 3]),
                            ("const", [2, 1])], dict(blank=3, reduction="sum")),
          covers=_BOTH, tolerances={"float32": (1e-4, 1e-5)}),
]


def _ctc_backward(x, targets, in_len, tg_len, grad, blank=0, zero_infinity=False):
    """The backward op on its own, as autograd runs it, with a given gradient per sequence."""
    from ember.ops.ctc import _ctc_loss_backward_op, _ctc_loss_op
    lp = x.log_softmax(-1)
    nll, alpha = _ctc_loss_op(lp, targets, tuple(in_len), tuple(tg_len), blank, zero_infinity)
    return _ctc_loss_backward_op(grad, lp, targets, tuple(in_len), tuple(tg_len), nll, alpha,
                                 blank, zero_infinity)


OPS += [
    entry("_ctc_loss_backward", _ctc_backward,
          ("padded, empty target", [((6, 3, 4), "x"), _PADDED, ("const", [6, 5, 2]),
                                    ("const", [3, 2, 0]), ((3,), "l")], {}),
          ("impossible, zero_infinity", [((2, 3, 4), "x"), _PADDED, ("const", [2, 2, 2]),
                                         ("const", [3, 2, 1]), ((3,), "x")],
           dict(zero_infinity=True)),
          covers=("_ctc_loss_backward",), differentiable=False,
          tolerances={"float32": (1e-4, 1e-5)}),
]
