"""The ``torch.*`` forms of functions that live in ``nn.functional`` (issue #25): PyTorch
exposes its native ops there with their native signatures (losses take ``reduction`` as the
enum 0/1/2 = none/mean/sum, ``embedding`` takes the weight first, ``dropout`` a positional
``train``). Each calls the functional form (imported when called: the core does not import nn
at start-up)."""
from __future__ import annotations

__all__ = ["alpha_dropout", "feature_alpha_dropout", "dropout", "feature_dropout", "bilinear",
           "binary_cross_entropy_with_logits", "constant_pad_nd", "cosine_embedding_loss",
           "cosine_similarity", "ctc_loss", "embedding", "embedding_bag", "hardshrink",
           "hinge_embedding_loss", "instance_norm", "kl_div", "margin_ranking_loss",
           "pairwise_distance", "poisson_nll_loss", "prelu", "rms_norm", "triplet_margin_loss",
           "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "batch_norm", "group_norm", "layer_norm", "adaptive_avg_pool1d",
           "adaptive_max_pool1d", "avg_pool1d", "max_pool1d", "max_pool1d_with_indices",
           "max_pool2d", "max_pool3d"]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _F():
    from .nn import functional
    return functional


def _reduction(reduction, fn):
    if isinstance(reduction, str):
        return reduction
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{fn}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got "
                         f"{reduction}")
    return _REDUCTIONS[reduction]


def alpha_dropout(input, p, train):
    return _F().alpha_dropout(input, p, train)


def feature_alpha_dropout(input, p, train):
    return _F().feature_alpha_dropout(input, p, train)


def dropout(input, p, train):
    return _F().dropout(input, p, train)


def feature_dropout(input, p, train):
    """Channel dropout over dims 0 (batch) and 1 (channels), whatever the rank."""
    from .nn._dropout import _channel_dropout
    return _channel_dropout(input, p, train, False, input.ndim >= 2, "feature_dropout")


def bilinear(input1, input2, weight, bias=None):
    return _F().bilinear(input1, input2, weight, bias)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return _F().binary_cross_entropy_with_logits(
        input, target, weight, pos_weight=pos_weight,
        reduction=_reduction(reduction, "binary_cross_entropy_with_logits"))


def constant_pad_nd(input, pad, value=0):
    return _F().pad(input, pad, "constant", value)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F().cosine_embedding_loss(input1, input2, target, margin,
                                      reduction=_reduction(reduction, "cosine_embedding_loss"))


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    return _F().cosine_similarity(x1, x2, dim, eps)


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1,
             zero_infinity=False):
    return _F().ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         _reduction(reduction, "ctc_loss"), zero_infinity)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    return _F().embedding(indices, weight, None if padding_idx < 0 else padding_idx,
                          scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """PyTorch's native form: mode 0/1/2 = sum/mean/max, and the four outputs (output,
    offset2bag, bag_size, max_indices)."""
    from .ops.embedding_bag import embedding_bag_outputs
    names = {0: "sum", 1: "mean", 2: "max"}
    if mode not in names:
        raise ValueError(f"embedding_bag(): mode must be 0 (sum), 1 (mean) or 2 (max), got "
                         f"{mode}")
    return embedding_bag_outputs(indices, weight, offsets, None, 2, scale_grad_by_freq,
                                 names[mode], sparse, per_sample_weights, include_last_offset,
                                 padding_idx)


def hardshrink(input, lambd=0.5):
    return _F().hardshrink(input, lambd)


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    return _F().hinge_embedding_loss(input, target, margin,
                                     reduction=_reduction(reduction, "hinge_embedding_loss"))


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled):
    return _F().instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                              momentum, eps)


def kl_div(input, target, reduction=1, *, log_target=False):
    return _F().kl_div(input, target, reduction=_reduction(reduction, "kl_div"),
                       log_target=log_target)


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    return _F().margin_ranking_loss(input1, input2, target, margin,
                                    reduction=_reduction(reduction, "margin_ranking_loss"))


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    return _F().pairwise_distance(x1, x2, p, eps, keepdim)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    return _F().poisson_nll_loss(input, target, log_input, full, eps=eps,
                                 reduction=_reduction(reduction, "poisson_nll_loss"))


def prelu(input, weight):
    return _F().prelu(input, weight)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    return _F().rms_norm(input, normalized_shape, weight, eps)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction=1):
    return _F().triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                    reduction=_reduction(reduction, "triplet_margin_loss"))


# -- convolution, normalisation and pooling in their native argument order ---------------------
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv2d(input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _F().conv3d(input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _F().conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _F().conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    return _F().conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups,
                                 dilation)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled=True):
    """``torch.batch_norm``: the weight and bias come before the running statistics."""
    return _F().batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
                           eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return _F().group_norm(input, num_groups, weight, bias, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5, cudnn_enable=True):
    return _F().layer_norm(input, normalized_shape, weight, bias, eps)


def adaptive_avg_pool1d(input, output_size):
    return _F().adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """``torch.adaptive_max_pool1d`` returns (values, indices)."""
    return _F().adaptive_max_pool1d(input, output_size, return_indices=True)


def _stride(stride):
    # the native forms default stride to () — the kernel size
    return None if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else stride


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True):
    return _F().avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                           count_include_pad)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    return _F().max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode,
                           return_indices=True)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    return _F().max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)
