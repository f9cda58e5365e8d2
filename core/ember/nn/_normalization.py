"""The normalizations of ``ember.nn.functional``: ``batch_norm``, ``layer_norm`` and
``group_norm`` call one native op each (``ember.ops.nn.norm``: their own backward ops);
``rms_norm``, ``normalize``, ``instance_norm`` (per sample and channel, optionally tracking
running statistics like PyTorch), ``local_response_norm`` and the legacy cross-map LRN behind
``nn.CrossMapLRN2d`` compose ember ops. The ``torch.*`` native forms (weight and bias before
the running statistics) are registered beside them."""
from __future__ import annotations

from ..dispatch.grad_mode import no_grad
from ..ops import elementwise as _ew, factories as _fac
from ..ops import linalg as _la
from ..ops import nn as _nn_ops
from ..ops import reduction as _red
from ..ops._util import require_tensor, torch_function
from ..ops.shape import cat

__all__ = ["batch_norm", "layer_norm", "group_norm", "rms_norm", "normalize", "instance_norm",
           "local_response_norm"]

_EPS = {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07,
        "float64": 2.220446049250313e-16}


def _norm_dims(input, normalized_shape, fn):
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    k = len(normalized_shape)
    if k == 0 or input.ndim < k or tuple(input._shape[-k:]) != normalized_shape:
        raise RuntimeError(f"{fn}: given normalized_shape={list(normalized_shape)}, expected "
                           f"input with shape [*, {', '.join(map(str, normalized_shape))}], but "
                           f"got input of size{list(input.shape)}")
    return normalized_shape, tuple(range(input.ndim - k, input.ndim))


def _check_affine(t, shape, fn, name):
    if t is not None and tuple(t._shape) != tuple(shape):
        raise RuntimeError(f"{fn}: expected {name} of shape {list(shape)}, got "
                           f"{list(t.shape)}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """One ``native_layer_norm`` op (NativeLayerNormBackward0)."""
    require_tensor(input, "layer_norm")
    shape, dims = _norm_dims(input, normalized_shape, "layer_norm")
    _check_affine(weight, shape, "layer_norm", "weight")
    _check_affine(bias, shape, "layer_norm", "bias")
    return _nn_ops.norm.native_layer_norm_op(input, list(shape), weight, bias, float(eps))[0]


def rms_norm(input, normalized_shape, weight=None, eps=None):
    require_tensor(input, "rms_norm")
    shape, dims = _norm_dims(input, normalized_shape, "rms_norm")
    _check_affine(weight, shape, "rms_norm", "weight")
    if eps is None:
        eps = _EPS.get(input.dtype.name, _EPS["float32"])
    out = input * _ew.unary_api["rsqrt"]((input * input).mean(dims, keepdim=True) + eps)
    return out if weight is None else out * weight


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """One ``native_group_norm`` op (NativeGroupNormBackward0)."""
    require_tensor(input, "group_norm")
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: expected at least 2 dimensions for input tensor but "
                           f"received {input.ndim}")
    n, c = input._shape[0], input._shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    _check_affine(weight, (c,), "group_norm", "weight")
    _check_affine(bias, (c,), "group_norm", "bias")
    hxw = input.numel() // (n * c) if n * c else 0
    return _nn_ops.norm.native_group_norm_op(input, weight, bias, n, c, hxw, int(num_groups),
                                             float(eps))[0]


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalize over every dim but the channel dim (1): one ``native_batch_norm`` op
    (NativeBatchNormBackward0). In training the batch statistics are used and the op updates the
    running ones in place (unbiased variance, PyTorch's momentum rule)."""
    require_tensor(input, "batch_norm")
    if input.ndim < 2:
        # PyTorch reads a 1-D input as having no channels: only empty statistics are accepted
        # and only an empty input computes (to itself)
        for name, t in (("running_mean", running_mean), ("running_var", running_var),
                        ("weight", weight), ("bias", bias)):
            if t is not None and t.numel():
                raise RuntimeError(f"{name} should contain 0 elements not {t.numel()}")
        if input.numel():
            raise IndexError("select(): index 0 out of range for tensor of size [0] at "
                             "dimension 0")
        return input.clone()
    c = input._shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_affine(t, (c,), "batch_norm", name)
    if training:
        count = input.numel() // max(c, 1)
        if count == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {input.shape}")
    if input.numel() == 0:
        # PyTorch's batch_norm returns an empty input (scaled by weight[0], shifted by
        # bias[0], so it stays in their graphs) without touching the running statistics
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("batch_norm: running_mean and running_var must be defined in "
                           "evaluation mode")
    return _nn_ops.native_batch_norm(input, weight, bias, running_mean, running_var,
                                     bool(training), momentum, eps)[0]


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    require_tensor(input, "normalize")
    denom = _la.norm(input, p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    r = input / denom
    return r if out is None else out.copy_(r)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Normalize each (sample, channel) over its spatial dims; with ``use_input_stats`` and
    running buffers, those move toward the batch mean of the instance statistics."""
    require_tensor(input, "instance_norm")
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected at least 3D input (N, C, ...), got "
                         f"{input.ndim}D input")
    n, c = input.shape[0], input.shape[1]
    spatial = tuple(range(2, input.ndim))
    bshape = (1, c) + (1,) * len(spatial)
    if use_input_stats:
        count = 1
        for d in spatial:
            count *= input.shape[d]
        if count <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {list(input.shape)}")
        var, mean = _red.var_mean(input, spatial, correction=0, keepdim=True)
        if running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mean.detach().mean((0,) + spatial),
                                                         alpha=momentum)
                if running_var is not None:
                    unbiased = var.detach() * (count / (count - 1))
                    running_var.mul_(1 - momentum).add_(unbiased.mean((0,) + spatial),
                                                        alpha=momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        mean, var = running_mean.reshape(bshape), running_var.reshape(bshape)
    out = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight.reshape(bshape)
    if bias is not None:
        out = out + bias.reshape(bshape)
    return out


def _channel_window_sum(sq, before, after):
    """Sum over channels c - before .. c + after (zero beyond the edges) of ``sq``."""
    c = sq.shape[1]
    shape = list(sq.shape)
    parts = []
    if before:
        shape[1] = before
        parts.append(sq.new_zeros(shape))
    parts.append(sq)
    if after:
        shape[1] = after
        parts.append(sq.new_zeros(shape))
    padded = cat(parts, 1) if len(parts) > 1 else sq
    total = padded.narrow(1, 0, c)
    for k in range(1, before + after + 1):
        total = total + padded.narrow(1, k, c)
    return total


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """``x / (k + alpha * mean of x^2 over the size channels around it) ** beta``."""
    require_tensor(input, "local_response_norm")
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    window = _channel_window_sum(input * input, size // 2, (size - 1) // 2)
    # PyTorch averages with avg_pool, which divides integer squares as integers
    div = window // size if not (input.is_floating_point() or input.is_complex()) \
        else window / size
    return input / (div * alpha + k).pow(beta)


def cross_map_lrn2d(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """PyTorch's legacy ``CrossMapLRN2d`` forward, running sums included: the window of
    channel c ends at c + (size-1)//2 + ... as its loop leaves it (channel 0 is never taken
    out of the running sum)."""
    require_tensor(input, "CrossMapLRN2d")
    if input.ndim != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
    c = input.shape[1]
    pre_pad = int((size - 1) / 2 + 1)
    sq = input * input
    running = sq.cumsum(1)
    ch = list(range(c))
    upper = _fac.tensor([min(j + pre_pad - 1, c - 1) for j in ch], device=input.device)
    total = running.index_select(1, upper)
    drop = [j - pre_pad for j in ch]
    if any(d >= 1 for d in drop):
        lower = _fac.tensor([max(d, 0) for d in drop], device=input.device)
        keep = _fac.tensor([1.0 if d >= 1 else 0.0 for d in drop], dtype=input.dtype,
                           device=input.device).reshape(1, c, 1, 1)
        total = total - (running.index_select(1, lower) - running.narrow(1, 0, 1)) * keep
    scale = total * (alpha / size) + k
    return input * scale.pow(-beta)


# -- the torch.* native forms -------------------------------------------------------------------
@torch_function("batch_norm")
def _torch_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
                      cudnn_enabled=True):
    """``torch.batch_norm``: the weight and bias come before the running statistics."""
    return batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


@torch_function("group_norm")
def _torch_group_norm(input, num_groups, weight=None, bias=None, eps=1e-5, cudnn_enabled=True):
    return group_norm(input, num_groups, weight, bias, eps)


@torch_function("layer_norm")
def _torch_layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5,
                      cudnn_enable=True):
    return layer_norm(input, normalized_shape, weight, bias, eps)


@torch_function("instance_norm")
def _torch_instance_norm(input, weight, bias, running_mean, running_var, use_input_stats,
                         momentum, eps, cudnn_enabled):
    return instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                         momentum, eps)


torch_function("rms_norm")(rms_norm)
