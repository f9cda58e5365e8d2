"""The margin losses of ``torch.nn.functional``: margin ranking, hinge and cosine embedding,
soft margin, multi-label and multi-class margin, triplet margin (with a distance function); each
written in ember ops with PyTorch's formulas (so every backend runs it and autograd sees
through it), with the ``torch.*`` native forms (``reduction`` as the enum 0/1/2)."""
from __future__ import annotations

from ..ops import elementwise as _ew, factories as _fac
from ..ops._util import torch_function
from ._distance import pairwise_distance
from ._loss import _reduce, _reduction, reduction_from_enum
from ._loss import _required_tensors as _tensors

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "soft_margin_loss", "multilabel_soft_margin_loss", "multilabel_margin_loss",
           "multi_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss"]


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    _tensors("margin_ranking_loss", input1=input1, input2=input2, target=target)
    reduction = _reduction(reduction, size_average, reduce)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce(loss, reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """``x`` where the target is 1, ``max(0, margin - x)`` where it is -1."""
    _tensors("hinge_embedding_loss", input=input, target=target)
    reduction = _reduction(reduction, size_average, reduce)
    zeros = input * 0
    margin_clamp = (margin - input).clamp_min(0)
    out = _ew.where(target.ne(1), margin_clamp, zeros) + _ew.where(target.ne(-1), input, zeros)
    return _reduce(out, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """``1 - cos(x1, x2)`` for target 1, ``max(0, cos(x1, x2) - margin)`` for -1."""
    _tensors("cosine_embedding_loss", input1=input1, input2=input2, target=target)
    reduction = _reduction(reduction, size_average, reduce)
    if target.ndim not in (0, 1):
        raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported, got "
                           f"{target.ndim}D")
    if target.ndim == 1 and (input1.ndim != 2 or input2.ndim != 2):
        raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    if target.ndim == 0 and (input1.ndim != 1 or input2.ndim != 1):
        raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with "
                           f"sizes {list(input1.shape)} and {list(input2.shape)}.")
    dim = input1.ndim - 1
    eps = 9.999999960041972e-13   # PyTorch's EPSILON, the float 1e-12
    prod = (input1 * input2).sum(dim)
    mag1 = (input1 * input1).sum(dim) + eps
    mag2 = (input2 * input2).sum(dim) + eps
    cos = prod / (mag1 * mag2).sqrt()
    zeros = cos * 0
    out = _ew.where(target.eq(1), 1 - cos, zeros) + \
        _ew.where(target.eq(-1), (cos - margin).clamp_min(0), zeros)
    return _reduce(out, reduction)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``."""
    _tensors("soft_margin_loss", input=input, target=target)
    reduction = _reduction(reduction, size_average, reduce)
    return _reduce((-input * target).exp().log1p(), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """Per-class logistic losses, averaged over the classes (the last dim)."""
    from .functional import logsigmoid  # cycle: ember.nn.functional
    _tensors("multilabel_soft_margin_loss", input=input, target=target)
    reduction = _reduction(reduction, size_average, reduce)
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(dim=class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction)


def _targets_mask(input, target):
    """(valid targets per position, is-target mask per class) of a multilabel target: the
    class indices up to the first -1."""
    valid = target.ge(0).to(input.dtype).cumprod(-1).bool()
    safe = target.clamp_min(0)
    is_target = _fac.zeros(input.shape, dtype=input.dtype, device=input.device)
    is_target = is_target.scatter_add(-1, safe, valid.to(input.dtype)).gt(0)
    return valid, safe, is_target


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``sum_{j in y} sum_{i not in y} max(0, 1 - (x[y_j] - x[i])) / C``; ``target`` holds class
    indices, ended by the first -1."""
    _tensors("multilabel_margin_loss", input=input, target=target)
    reduction = _reduction(reduction, size_average, reduce)
    if input.ndim not in (0, 1, 2) or tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: "
                           f"{list(target.shape)} for input of size: {list(input.shape)}")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    y = target.reshape(1, -1) if target.ndim < 2 else target
    c = x.shape[-1]
    valid, safe, is_target = _targets_mask(x, y)
    xy = x.gather(-1, safe)                                   # (N, J)
    # relu, not clamp_min(0): a hinge exactly at 0 passes no gradient (torch's kernel: z > 0)
    hinge = (1 - xy.unsqueeze(-1) + x.unsqueeze(-2)).relu()  # (N, J, C)
    keep = valid.unsqueeze(-1).logical_and(is_target.logical_not().unsqueeze(-2))
    loss = (hinge * keep).sum((-1, -2)) / c
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """``sum_{i != y} max(0, margin - x[y] + x[i])^p / C`` (times ``weight[y]``)."""
    _tensors("multi_margin_loss", input=input, target=target)
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    y = target.reshape(-1)
    if x.ndim != 2 or y.shape[0] != x.shape[0]:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size: {list(target.shape)} "
                           f"for input of size: {list(input.shape)}")
    c = x.shape[1]
    xy = x.gather(1, y.unsqueeze(1))
    z = (margin - xy + x).relu()   # a hinge at 0 passes no gradient (torch's kernel: z > 0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, y).unsqueeze(1)
    others = _fac.arange(c, device=x.device).unsqueeze(0).ne(y.unsqueeze(1))
    z = z * others
    loss = z.sum(1) / c
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the p-norm pairwise distance."""
    _tensors("triplet_margin_loss", anchor=anchor, positive=positive, negative=negative)
    reduction = _reduction(reduction, size_average, reduce)
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a_dim}D, positive "
                           f"{p_dim}D, and negative {n_dim}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _ew.binary_api["minimum"](d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """The triplet loss with any distance (default: the Euclidean pairwise distance)."""
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, "
                         f"got {margin} instead")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim == n_dim):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a_dim}D, positive "
                           f"{p_dim}D, and negative {n_dim}D inputs")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = _ew.binary_api["minimum"](d_neg, dist(positive, negative))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


# -- the torch.* native forms -------------------------------------------------------------------
@torch_function("cosine_embedding_loss")
def _torch_cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return cosine_embedding_loss(input1, input2, target, margin,
                                 reduction=reduction_from_enum(reduction,
                                                               "cosine_embedding_loss"))


@torch_function("hinge_embedding_loss")
def _torch_hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return hinge_embedding_loss(input, target, margin,
                                reduction=reduction_from_enum(reduction, "hinge_embedding_loss"))


@torch_function("margin_ranking_loss")
def _torch_margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return margin_ranking_loss(input1, input2, target, margin,
                               reduction=reduction_from_enum(reduction, "margin_ranking_loss"))


@torch_function("triplet_margin_loss")
def _torch_triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6,
                               swap=False, reduction=1):
    return triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                               reduction=reduction_from_enum(reduction, "triplet_margin_loss"))
