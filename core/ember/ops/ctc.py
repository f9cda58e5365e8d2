"""Connectionist temporal classification: the ``_ctc_loss`` op (behind ``F.ctc_loss``,
``nn.CTCLoss``) and its own backward op ``_ctc_loss_backward``.

``_ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, int
blank, bool zero_infinity) -> (Tensor neg_log_likelihood, Tensor log_alpha)``: log_probs (T, N,
C), targets (N, S) padded int64; per batch element the forward (alpha) recursion of Graves et
al. in log space over the blank-extended target (length 2 S_b + 1), ``log_alpha`` (N, T, 2S+1)
kept for the backward, ``-log p(target | input)`` (N,) returned (inf when no alignment exists,
whatever ``zero_infinity`` says: as in PyTorch, ``ctc_loss`` zeroes those, and the backward op
reads the infinite losses to zero their gradients).

``_ctc_loss_backward(...)`` runs the beta recursion and returns PyTorch's gradient for
log_probs, ``(exp(lp) - exp(log(sum_s alpha beta | l'(s) = c) + nll - lp)) * grad``: the
gradient of the pre-``log_softmax`` activations, which is what PyTorch returns (it differs from
the derivative in log_probs by ``exp(lp)``, which ``log_softmax``'s backward removes). Like
PyTorch's, this backward has no derivative of its own.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from . import elementwise as _ew, factories as _fac
from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative

__all__: list = []


def _ctc_meta(log_probs, targets, input_lengths, target_lengths, blank, zero_infinity):
    if log_probs.dtype not in (_dtype.float32, _dtype.float64):
        raise NotImplementedError(f"_ctc_loss: log_probs must be float32 or float64, got "
                                  f"{log_probs.dtype}")
    if log_probs.ndim != 3:
        raise RuntimeError(f"_ctc_loss: expected log_probs (T, N, C), got shape "
                           f"{list(log_probs._shape)}")
    t, n, _ = log_probs._shape
    s = targets._shape[1] if targets.ndim == 2 else 0
    return ((n,), log_probs.dtype), ((n, t, 2 * s + 1), log_probs.dtype)


def _ctc_backward_meta(grad, log_probs, targets, input_lengths, target_lengths, nll, log_alpha,
                       blank, zero_infinity):
    return tuple(log_probs._shape), log_probs.dtype


def _ctc_derivative(ctx, grads, log_probs, targets, input_lengths, target_lengths, blank,
                    zero_infinity):
    nll, log_alpha = ctx.result
    return (_ctc_loss_backward_op(grads[0], log_probs, targets, input_lengths, target_lengths,
                                  nll, log_alpha, blank, zero_infinity),)


_ctc_loss_op = define(
    "_ctc_loss(Tensor log_probs, Tensor targets, int[] input_lengths, int[] target_lengths, "
    "int blank, bool zero_infinity) -> (Tensor neg_log_likelihood, Tensor log_alpha)",
    meta=_ctc_meta,
    derivative=Derivative(_ctc_derivative, save=("log_probs", "targets", "result"),
                          diff=("log_probs",), outputs=(True, False), name="CtcLossBackward0"))
_ctc_loss_backward_op = define(
    "_ctc_loss_backward(Tensor grad, Tensor log_probs, Tensor targets, int[] input_lengths, "
    "int[] target_lengths, Tensor neg_log_likelihood, Tensor log_alpha, int blank, "
    "bool zero_infinity) -> Tensor", meta=_ctc_backward_meta)


def _lengths(x, name, n):
    if isinstance(x, Tensor):
        if x.ndim > 1:
            raise RuntimeError(f"ctc_loss: {name} must be a 1-D tensor or a sequence of ints")
        if x.dtype.category not in (_dtype.INTEGRAL,):
            raise RuntimeError(f"ctc_loss: {name} must be integral, got {x.dtype}")
        values = [int(v) for v in x._host().reshape(-1)]
    else:
        values = [int(v) for v in x]
    if len(values) != n:
        raise RuntimeError(f"Expected {name} to have value at most {n} elements per batch "
                           f"element: got {len(values)} lengths for a batch of {n}")
    return values


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """``F.ctc_loss``: the CTC loss of each batch element, reduced by ``reduction``; ``mean``
    divides each loss by its target length first (PyTorch's convention)."""

    if not isinstance(log_probs, Tensor) or not isinstance(targets, Tensor):
        raise TypeError("ctc_loss(): log_probs and targets must be Tensors")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.ndim == 1 else targets
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: log_probs must be 3-D (T, N, C) or 2-D (T, C), got "
                           f"{log_probs.ndim}-D")
    if log_probs.dtype not in (_dtype.float32, _dtype.float64):
        title = {"float16": "Half", "bfloat16": "BFloat16"}.get(log_probs.dtype.name,
                                                                log_probs.dtype.name)
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{title}'")
    t_max, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    in_len = _lengths(input_lengths, "input_lengths", n)
    tg_len = _lengths(target_lengths, "target_lengths", n)
    for b, v in enumerate(in_len):
        if not 0 <= v <= t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got "
                               f"value {v} (while checking arguments for ctc_loss_cpu)")
    if any(v < 0 for v in tg_len):
        raise RuntimeError(f"ctc_loss: target_lengths must be non-negative, got {tg_len}")
    if targets.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"ctc_loss: targets must be int64 or int32, got {targets.dtype}")
    targets = targets.to(_dtype.int64)
    s_max = max(tg_len) if tg_len else 0
    if targets.ndim == 1:  # concatenated targets: pad them into (N, S)
        if targets.shape[0] < sum(tg_len):
            raise RuntimeError(f"ctc_loss: targets has {targets.shape[0]} elements but the "
                               f"target lengths add up to {sum(tg_len)}")
        starts = np.concatenate([[0], np.cumsum(tg_len)[:-1]]).astype(np.int64)
        pos = starts[:, None] + np.minimum(np.arange(max(s_max, 1))[None, :],
                                           np.maximum(np.array(tg_len)[:, None] - 1, 0))
        if targets.shape[0] == 0:
            padded = _fac.zeros((n, s_max), dtype=_dtype.int64, device=targets.device)
        else:
            index = _fac.tensor(pos.reshape(-1)[:n * s_max] if s_max else pos[:, :0].reshape(-1),
                                dtype=_dtype.int64, device=targets.device)
            padded = targets.index_select(0, index).reshape(n, s_max)
    elif targets.ndim == 2:
        if targets.shape[0] != n or targets.shape[1] < s_max:
            raise RuntimeError(f"Expected tensor to have size at least {s_max} at dimension 1, "
                               f"but got size {targets.shape[1]} for argument #2 'targets' (while "
                               f"checking arguments for ctc_loss_cpu)")
        padded = targets[:, :s_max].contiguous() if targets.shape[1] != s_max else targets
    else:
        raise RuntimeError(f"ctc_loss: targets must be 1-D (concatenated) or 2-D (padded), got "
                           f"{targets.ndim}-D")
    nll, _ = _ctc_loss_op(log_probs, padded, tuple(in_len), tuple(tg_len), int(blank),
                          bool(zero_infinity))
    if zero_infinity:
        nll = _ew.where(nll == float("inf"), 0.0, nll)
    if reduction == "none":
        return nll[0] if unbatched else nll
    if reduction == "sum":
        return nll.sum()
    denom = _fac.tensor([max(v, 1) for v in tg_len], dtype=nll.dtype, device=nll.device)
    return (nll / denom).mean()
