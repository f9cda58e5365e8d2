"""Loss functions (PyTorch's formulas, reductions and argument errors).

Where torch's loss is an op with a derivative of its own (nll_loss, binary_cross_entropy,
binary_cross_entropy_with_logits, mse_loss, smooth_l1_loss, huber_loss), ember calls the op of
the same name (``ops/nn/loss.py``), so the gradients at the kinks and the graph's nodes are
torch's; the rest compose differentiable ops as torch's Python and composite-implicit code
does. The numerically delicate ones use the stable forms PyTorch
uses: cross-entropy goes through ``log_softmax``, BCE clamps its logs at -100, and
KL-divergence uses ``xlogy`` so zero targets contribute zero.
"""
from __future__ import annotations

import math
import warnings

from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from ..ops import elementwise as _ew
from ..ops import linalg as _la
from ..ops.nn import loss as _nn_loss
from ..ops._util import _dtype_title, broadcast_shapes, every_example, torch_function
from ..ops.ctc import ctc_loss
from ..ops.reduction import log_softmax
from .._warn import user_stacklevel

__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
           "poisson_nll_loss", "gaussian_nll_loss", "linear_cross_entropy", "ctc_loss"]

_REDUCTIONS = ("none", "mean", "sum")


def legacy_reduction(size_average, reduce, emit_warning=True) -> str:
    """PyTorch's ``_Reduction.legacy_get_string``: the deprecated size_average/reduce pair."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use "
                      f"reduction='{ret}' instead.", UserWarning, stacklevel=user_stacklevel())
    return ret


def _reduction(reduction, size_average=None, reduce=None, allowed=_REDUCTIONS) -> str:
    if size_average is not None or reduce is not None:
        return legacy_reduction(size_average, reduce)
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


_REDUCTION_ENUM = {0: "none", 1: "mean", 2: "sum"}


def reduction_from_enum(reduction, fn) -> str:
    """The ``torch.*`` native forms' ``reduction``: the enum 0/1/2 = none/mean/sum."""
    if isinstance(reduction, str):
        return reduction
    if reduction not in _REDUCTION_ENUM:
        raise ValueError(f"{fn}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                         f"{reduction}")
    return _REDUCTION_ENUM[reduction]


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _tensors(op, **named):
    for name, t in named.items():
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")


def _required_tensors(op, **named):
    for name, t in named.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not {type(t).__name__}")


def _floating(op, t):
    if not (t.is_floating_point() or t.is_complex()):
        raise NotImplementedError(f"\"{op}\" not implemented for '{_dtype_title(t.dtype)}' "
                                  f"(input of dtype {t.dtype}; losses need floating point)")


def _size_warning(input, target):
    if target._shape != input._shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input size "
                      f"({input.shape}). This will likely lead to incorrect results due to "
                      f"broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=user_stacklevel())


def _pointwise(op, input, target, reduction, weight, elementwise, weight_mean="weights",
               loss_op=None, params=()):
    """The regression losses: warn on size mismatch, broadcast, then an optional weight. An
    unweighted loss of one real dtype calls ``loss_op`` (torch's op for it, with a backward of
    its own) on the broadcast operands; the rest reduce ``elementwise(input - target)``."""
    _tensors(op, input=input, target=target, weight=weight)
    _size_warning(input, target)
    _floating(op, input)
    try:
        shape = broadcast_shapes(input._shape, target._shape)
    except RuntimeError as e:
        raise RuntimeError(f"{op}: {e} (input shape {list(input._shape)}, target shape "
                           f"{list(target._shape)})") from None
    if loss_op is not None and weight is None and input.dtype is target.dtype and \
            input.is_floating_point():
        input = input if input._shape == shape else input.expand(shape)
        target = target if target._shape == shape else target.expand(shape)
        return loss_op(input, target, _nn_loss.REDUCTIONS[reduction], *params)
    loss = elementwise(input - target)
    if weight is None:
        return _reduce(loss, reduction)
    if weight._shape != input._shape:
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean":
        return loss.sum() / weight.sum() if weight_mean == "weights" else loss.mean()
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _reduction(reduction, size_average, reduce)
    return _pointwise("mse_loss", input, target, reduction, weight, lambda d: d * d,
                      loss_op=_nn_loss.mse_loss_op)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = _reduction(reduction, size_average, reduce)
    return _pointwise("l1_loss", input, target, reduction, weight, lambda d: d.abs())


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:  # the quadratic piece vanishes: plain L1 (and no division by zero)
        return _pointwise("smooth_l1_loss", input, target, reduction, None, lambda d: d.abs())
    return _pointwise("smooth_l1_loss", input, target, reduction, None,
                      lambda d: _nn_loss.smooth_l1_piece(d, beta),
                      loss_op=_nn_loss.smooth_l1_loss_op, params=(float(beta),))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    reduction = _reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    return _pointwise("huber_loss", input, target, reduction, weight,
                      lambda d: _nn_loss.huber_piece(d, delta), weight_mean="mean",
                      loss_op=_nn_loss.huber_loss_op, params=(float(delta),))


# -- classification -----------------------------------------------------------------------------
def _class_shapes(op, input, target):
    """PyTorch's nll_loss shape rules; returns (input, target) with a batch dim."""
    if input.ndim == 0:
        raise ValueError(f"{op}: expected input of 1 or more dimensions (C), (N, C) or "
                         f"(N, C, d1, ...), but got a 0-D input")
    if input.ndim == 1:
        if target.ndim > 1 or (target.ndim == 1 and target._shape[0] != 1):
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: "
                             f"{target.numel()}")
        return input.unsqueeze(0), target.reshape(1)
    if input.ndim == 2 and target.ndim > 1:
        raise RuntimeError(f"0D or 1D target tensor expected, multi-target not supported "
                           f"({op}: input of size {list(input._shape)}, target of size "
                           f"{list(target._shape)})")
    if target.ndim == 0 or input._shape[0] != target._shape[0]:
        got = target._shape[0] if target.ndim else "a 0-D target"
        raise ValueError(f"Expected input batch_size ({input._shape[0]}) to match target "
                         f"batch_size ({got}).")
    expected = input._shape[:1] + input._shape[2:]
    if target._shape != expected:
        raise RuntimeError(f"Expected target size {list(expected)}, got {list(target._shape)} "
                           f"({op}: input of size {list(input._shape)})")
    return input, target


def _class_weight(op, input, weight):
    c = input._shape[1]
    if weight is None:
        return None
    if weight.numel() != c:
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no "
                           f"classes but got weight tensor of shape: {list(weight._shape)}")
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {_dtype_title(input.dtype)} but found "
                           f"{_dtype_title(weight.dtype)} ({op}: input is {input.dtype}, weight "
                           f"is {weight.dtype})")
    return weight.reshape(c)


def _class_targets(op, input, target, ignore_index):
    """Check class indices (the one host sync, as PyTorch's CPU kernel) and make them safe."""
    if target.dtype.name not in ("int64", "uint8"):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_dtype_title(target.dtype)} ({op})")
    target = target.long()
    c = input._shape[1]
    keep = target != ignore_index
    bad = keep & ((target < 0) | (target >= c))
    if target.numel() and bool(every_example(bad).any().item()):
        first = every_example(target)[every_example(bad)][0]
        raise IndexError(f"Target {int(first.item())} is out of bounds. ({op}: "
                         f"{c} classes, ignore_index={ignore_index})")
    safe = _ew.where(keep, target, 0)
    return safe, keep


def _nll_op(op, logp, target, weight, ignore_index, reduction):
    """nll_loss of (N, C) log-probabilities as one op each way (``ember.ops.nn.loss``)."""
    if target.dtype.name not in ("int64", "uint8"):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_dtype_title(target.dtype)} ({op})")
    if weight is not None and weight.dtype is not logp.dtype:
        weight = weight.to(logp.dtype)
    return _nn_loss.nll_loss_forward_op(logp, target.long(), weight,
                                        _nn_loss.REDUCTIONS[reduction], int(ignore_index))[0]


def _nll(op, logp, target, weight, ignore_index, reduction):
    """nll_loss on batched (N, C, ...) log-probabilities and checked (N, ...) targets."""
    safe, keep = _class_targets(op, logp, target, ignore_index)
    picked = logp.gather(1, safe.unsqueeze(1)).squeeze(1)            # (N, ...)
    w = keep.to(logp.dtype)
    if weight is not None:
        w = w * weight.gather(0, safe.reshape(-1)).reshape(safe._shape)
    loss = -picked * w
    if reduction == "none":
        return loss, w, keep
    if reduction == "sum":
        return loss.sum(), w, keep
    return loss.sum() / w.sum(), w, keep


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    _tensors("nll_loss", input=input, target=target, weight=weight)
    reduction = _reduction(reduction, size_average, reduce)
    unbatched = input.ndim == 1
    x, t = _class_shapes("nll_loss", input, target)
    weight = _class_weight("nll_loss", x, weight)
    if x.ndim == 2 and (weight is None or not weight.requires_grad):
        loss = _nll_op("nll_loss", x, t, weight, ignore_index, reduction)
    else:
        loss = _nll("nll_loss", x, t, weight, ignore_index, reduction)[0]
    return loss.squeeze(0) if unbatched and reduction == "none" else loss


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    op = "cross_entropy"
    _tensors(op, input=input, target=target, weight=weight)
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    _floating(op, input)
    unbatched = input.ndim == 1
    if input._shape == target._shape and input.ndim:
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction,
                                    label_smoothing, unbatched)
    x, t = _class_shapes(op, input, target)
    weight = _class_weight(op, x, weight)
    logp = log_softmax(x, 1)
    # (class weights that require grad keep the composition: PyTorch refuses them, ember
    # differentiates them)
    if x.ndim == 2 and label_smoothing == 0 and (weight is None or not weight.requires_grad):
        nll = _nll_op(op, logp, t, weight, ignore_index, reduction)
        return nll.squeeze(0) if unbatched and reduction == "none" else nll
    nll, w, keep = _nll(op, logp, t, weight, ignore_index, reduction)
    if label_smoothing > 0:
        c = x._shape[1]
        wc = logp if weight is None else logp * weight.reshape((c,) + (1,) * (x.ndim - 2))
        smooth = -(wc.sum(1)) * keep.to(logp.dtype)
        if reduction == "mean":
            # normalized by the same weight sum as the nll part, as PyTorch does
            smooth = smooth.sum() / w.sum()
        elif reduction == "sum":
            smooth = smooth.sum()
        nll = (1 - label_smoothing) * nll + smooth * (label_smoothing / c)
    return nll.squeeze(0) if unbatched and reduction == "none" else nll


def _cross_entropy_probs(input, target, weight, ignore_index, reduction, label_smoothing,
                         unbatched):
    op = "cross_entropy"
    if ignore_index != -100:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if not target.is_floating_point():
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_dtype_title(target.dtype)} ({op}: class-probability targets, "
                           f"whose shape equals the input's, must be floating point)")
    x = input.unsqueeze(0) if unbatched else input
    t = target.unsqueeze(0) if unbatched else target
    c = x._shape[1]
    weight = _class_weight(op, x, weight)
    logp = log_softmax(x, 1)
    if label_smoothing > 0:
        t = t * (1 - label_smoothing) + label_smoothing / c
    if weight is not None:
        logp = logp * weight.reshape((c,) + (1,) * (x.ndim - 2))
    per = -(logp * t).sum(1)
    if reduction == "none":
        return per.squeeze(0) if unbatched else per
    if reduction == "sum":
        return per.sum()
    return per.sum() / (x.numel() // c) if x.numel() else per.sum() * float("nan")


# -- binary -------------------------------------------------------------------------------------
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    op = "binary_cross_entropy"
    _tensors(op, input=input, target=target, weight=weight)
    reduction = _reduction(reduction, size_average, reduce)
    if target._shape != input._shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         f"size.")
    _floating(op, input)
    if input.numel() and bool(every_example((input < 0) | (input > 1)).any().item()):
        raise RuntimeError(f"all elements of input should be between 0 and 1 ({op}: input of "
                           f"size {list(input._shape)})")
    # one op with PyTorch's derivative (ops/nn/loss.py): its logs clamped at -100, its gradient
    # (x - t) / max(x (1 - x), 1e-12), so a probability of exactly 0 or 1 differentiates as there
    return _nn_loss.binary_cross_entropy_op(input, target, weight, _nn_loss.REDUCTIONS[reduction])


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    op = "binary_cross_entropy_with_logits"
    _tensors(op, input=input, target=target, weight=weight, pos_weight=pos_weight)
    reduction = _reduction(reduction, size_average, reduce)
    if target._shape != input._shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    _floating(op, input)
    # one op with PyTorch's derivative, sigmoid(x) - t (ops/nn/loss.py): the stable forward's
    # max(x, 0) and |x| have kinks at 0 whose subgradients would not add up to it
    return _nn_loss.binary_cross_entropy_with_logits_op(input, target, weight, pos_weight,
                                                        _nn_loss.REDUCTIONS[reduction])


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    op = "kl_div"
    _tensors(op, input=input, target=target)
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    else:
        _reduction(reduction, allowed=_REDUCTIONS + ("batchmean",))
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                          "the support size.'batchmean' divides only by the batch size, and "
                          "aligns with the KL div math definition.'mean' will be changed to "
                          "behave the same as 'batchmean' in the next major release.",
                          UserWarning, stacklevel=user_stacklevel())
    _floating(op, input)
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = _ew.binary_api["xlogy"](target, target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input._shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """Negative log likelihood of ``target ~ Poisson(input)`` (``exp(input)`` with
    ``log_input``), plus Stirling's approximation of ``log(target!)`` when ``full``."""
    _required_tensors("poisson_nll_loss", input=input, target=target)
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
    _required_tensors("gaussian_nll_loss", input=input, target=target, var=var)
    if var.shape != input.shape:
        if input.shape[:-1] == var.shape:
            var = var.unsqueeze(-1)
        elif var.ndim == input.ndim and sum(v for i, v in zip(input.shape, var.shape)
                                            if i != v) == 1:
            pass          # PyTorch's homoscedastic rule: one dim of var is 1, the others match
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
    _required_tensors("linear_cross_entropy", input=input, linear_weight=linear_weight, target=target)
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


# -- the torch.* native forms (reduction as the enum 0/1/2) -------------------------------------
@torch_function("binary_cross_entropy_with_logits")
def _torch_bce_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return binary_cross_entropy_with_logits(
        input, target, weight, pos_weight=pos_weight,
        reduction=reduction_from_enum(reduction, "binary_cross_entropy_with_logits"))


@torch_function("kl_div")
def _torch_kl_div(input, target, reduction=1, *, log_target=False):
    return kl_div(input, target, reduction=reduction_from_enum(reduction, "kl_div"),
                  log_target=log_target)


@torch_function("poisson_nll_loss")
def _torch_poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return poisson_nll_loss(input, target, log_input, full, eps=eps,
                            reduction=reduction_from_enum(reduction, "poisson_nll_loss"))


@torch_function("ctc_loss")
def _torch_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
                    zero_infinity=False):
    return ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                    reduction_from_enum(reduction, "ctc_loss"), zero_infinity)
