"""The losses of ``torch.nn.functional`` beyond ``_loss.py``: margin, embedding, multi-label,
triplet, Poisson and Gaussian NLL, and ``linear_cross_entropy``; each written in ember ops with
PyTorch's formulas (so every backend runs it and autograd sees through it). ``ctc_loss`` is an
op (``ember/ops/ctc.py``)."""
from __future__ import annotations

import math

from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops import elementwise as _ew
from ._loss import _reduction

__all__ = ["margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
           "soft_margin_loss", "multilabel_soft_margin_loss", "multilabel_margin_loss",
           "multi_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss",
           "poisson_nll_loss", "gaussian_nll_loss", "linear_cross_entropy"]


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _tensors(fn, **named):
    for name, t in named.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(t).__name__}")


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
    eps = 1e-12
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
    from .functional import logsigmoid
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
    from ..ops import factories as _fac
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
    hinge = (1 - xy.unsqueeze(-1) + x.unsqueeze(-2)).clamp_min(0)  # (N, J, C)
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
    z = (margin - xy + x).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, y).unsqueeze(1)
    from ..ops import factories as _fac
    others = _fac.arange(c, device=x.device).unsqueeze(0).ne(y.unsqueeze(1))
    z = z * others
    loss = z.sum(1) / c
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the p-norm pairwise distance."""
    from ._distance import pairwise_distance
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
    from ._distance import pairwise_distance
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


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log likelihood of ``target ~ Poisson(input)`` (``exp(input)`` with
    ``log_input``), plus Stirling's approximation of ``log(target!)`` when ``full``."""
    _tensors("poisson_nll_loss", input=input, target=target)
    reduction = _reduction(reduction, size_average, reduce)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        stirling = target * target.log() - target + 0.5 * (2 * math.pi * target).log()
        loss = loss + _ew.where(target.gt(1), stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps))`` (+ ``0.5 log 2 pi``
    when ``full``); the clamp does not change var's gradient, as in PyTorch."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_full((), float(var))
    _tensors("gaussian_nll_loss", input=input, target=target, var=var)
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif input.shape[:-1] == var.shape[:-1] and var.shape[-1] == 1:
            pass
        elif var.ndim != 0:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    with no_grad():
        # a data-dependent check, which ember.func.vmap cannot run on a batched var
        if type(var) is Tensor and bool(var.lt(0).any()):
            raise ValueError("var has negative entry/entries")
        shift = var.clamp_min(eps) - var
    var = var + shift
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """``cross_entropy`` of the logits ``input @ linear_weight^T (+ linear_bias)``;
    ``linear_weight`` is (C, *out_features, in_features) for a K-dimensional loss. PyTorch's
    ``options`` choose a chunked schedule of the same computation; ember computes the reference
    form whatever they say."""
    from ._loss import cross_entropy
    from ..ops import linalg as _la
    _tensors("linear_cross_entropy", input=input, linear_weight=linear_weight, target=target)
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches = tuple(input.shape[:-1])
    in_features = input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"expected equal input and linear_weight last dimensions "
                           f"(in_features), got {input.shape[-1]} and {linear_weight.shape[-1]}, "
                           f"respectively")
    num_classes = linear_weight.shape[0]
    out_features = tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (num_classes, *out_features):
        raise RuntimeError(f"expected linear_bias shape {(num_classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, (N, "
                           f"{in_features}), got unbatched input with shape {tuple(input.shape)}")
    logits_shape = (*batches, num_classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains probabilities")
    logits = _la.matmul(input, linear_weight.reshape(-1, in_features).t()).reshape(logits_shape)
    if linear_bias is not None:
        logits = logits + linear_bias
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)
