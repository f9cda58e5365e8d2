"""``ember.nn.functional``: the functional forms of the layers.

Activations, dropout, embedding, padding and the rest compose existing ops, so autograd records
them through those ops and every backend runs them unchanged. Convolution, pooling and
batch/layer/group norm are ops of their own (``ember.ops.nn``: one op forward and one backward,
native kernels per backend); the functions here check arguments with PyTorch's messages and
call them.
"""
from __future__ import annotations

import warnings

from .. import _dtype
from .. import _tensor as _tensor_mod
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from ..ops import elementwise as _ew
from ..ops.elementwise import activation as _act
from ..ops import linalg as _la
from ..ops import nn as _nn_ops
from ..ops import reduction as _red
from ..ops._util import every_example

__all__ = ["linear", "bilinear", "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "gelu",
           "silu", "mish", "elu", "elu_", "selu", "selu_", "celu", "celu_", "hardtanh", "hardtanh_",
           "hardsigmoid", "hardswish", "rrelu", "rrelu_", "softplus", "softsign", "sigmoid", "tanh",
           "logsigmoid", "tanhshrink", "threshold", "threshold_", "glu", "prelu", "softmax", "softmin", "log_softmax", "dropout",
           "layer_norm", "group_norm", "rms_norm", "batch_norm", "embedding", "normalize",
           "pad", "one_hot"]

_EPS = {"float16": 0.0009765625, "bfloat16": 0.0078125, "float32": 1.1920928955078125e-07,
        "float64": 2.220446049250313e-16}


def _tensor(x, fn, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


# -- linear -------------------------------------------------------------------------------------
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: one addmm for 2-D inputs, one matmul otherwise."""
    _tensor(input, "linear")
    _tensor(weight, "linear", "weight")
    if weight.ndim not in (1, 2):
        raise RuntimeError(f"linear(): weight must be 1-D or 2-D, got shape {list(weight.shape)}")
    if input.ndim == 0:
        raise RuntimeError("linear(): input must have at least 1 dimension, got a 0-d tensor")
    if bias is not None:
        _tensor(bias, "linear", "bias")
        out_f = weight._shape[0] if weight.ndim == 2 else 1
        if bias.ndim > 1 or bias.numel() not in (1, out_f):
            raise RuntimeError(f"linear(): bias of shape {list(bias.shape)} does not match "
                               f"weight of shape {list(weight.shape)} (expected [{out_f}])")
        if input.ndim == 2 and weight.ndim == 2:
            return _la.addmm(bias, input, weight.t())
    out = _la.matmul(input, weight.t() if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    """``y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o]``."""
    _tensor(input1, "bilinear", "input1")
    _tensor(input2, "bilinear", "input2")
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), got shape "
                           f"{list(weight.shape)}")
    o, i, j = weight._shape
    if input1._shape[-1:] != (i,) or input2._shape[-1:] != (j,) or \
            input1._shape[:-1] != input2._shape[:-1]:
        raise RuntimeError(f"bilinear(): input1 {list(input1.shape)} and input2 "
                           f"{list(input2.shape)} must agree on leading dims and end in {i} and "
                           f"{j} (weight shape {list(weight.shape)})")
    # x1 @ W viewed as (i, o*j), then contract j against x2: two matmuls, no einsum
    w = weight.permute(1, 0, 2).reshape(i, o * j)
    t = _la.matmul(input1, w).reshape(*input1._shape[:-1], o, j)
    out = _la.matmul(t, input2.unsqueeze(-1)).squeeze(-1)
    return out if bias is None else out + bias


# -- activations --------------------------------------------------------------------------------
def relu(input, inplace=False):
    _tensor(input, "relu")
    return input.relu_() if inplace else _ew.unary_api["relu"](input)


def relu_(input):
    return relu(input, True)


def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    if inplace:
        return _act.leaky_relu_(input, negative_slope)
    return _ew.leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _act.leaky_relu_(input, negative_slope)


def gelu(input, approximate="none"):
    return _ew.gelu(input, approximate)


def silu(input, inplace=False):
    _tensor(input, "silu")
    return input.silu_() if inplace else _ew.unary_api["silu"](input)


def mish(input, inplace=False):
    _tensor(input, "mish")
    return input.mish_() if inplace else _ew.unary_api["mish"](input)


def elu(input, alpha=1.0, inplace=False):
    return _act.elu_(input, alpha) if inplace else _ew.elu(input, alpha)


def elu_(input, alpha=1.0):
    return _act.elu_(input, alpha)


def selu(input, inplace=False):
    _tensor(input, "selu")
    return _act.selu_(input) if inplace else _act.selu(input)


def selu_(input):
    return _act.selu_(input)


def celu(input, alpha=1.0, inplace=False):
    _tensor(input, "celu")
    return _act.celu_(input, alpha) if inplace else _act.celu(input, alpha)


def celu_(input, alpha=1.0):
    return _act.celu_(input, alpha)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if inplace:
        return _act.hardtanh_(input, min_val, max_val)
    return _ew.hardtanh(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _act.hardtanh_(input, min_val, max_val)


def hardsigmoid(input, inplace=False):
    _tensor(input, "hardsigmoid")
    return _act.hardsigmoid_(input) if inplace else _act.hardsigmoid(input)


def hardswish(input, inplace=False):
    _tensor(input, "hardswish")
    return _act.hardswish_(input) if inplace else _act.hardswish(input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    _tensor(input, "rrelu")
    if inplace:
        return _act.rrelu_(input, lower, upper, training)
    return _act.rrelu(input, lower, upper, training)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return _act.rrelu_(input, lower, upper, training)


def softplus(input, beta=1.0, threshold=20.0):
    return _ew.softplus(input, beta, threshold)


def softsign(input):
    _tensor(input, "softsign")
    return input / (input.abs() + 1)


def sigmoid(input):
    _tensor(input, "sigmoid")
    return _ew.unary_api["sigmoid"](input)


def tanh(input):
    _tensor(input, "tanh")
    return _ew.unary_api["tanh"](input)


def logsigmoid(input):
    _tensor(input, "logsigmoid")
    return -_ew.softplus(-input, 1.0, 20.0)


def tanhshrink(input):
    _tensor(input, "tanhshrink")
    return input - _ew.unary_api["tanh"](input)


def threshold(input, threshold, value, inplace=False):
    _tensor(input, "threshold")
    if inplace:
        return _act.threshold_(input, threshold, value)
    return _act.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _act.threshold_(input, threshold, value)


def glu(input, dim=-1):
    _tensor(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim} is size "
                           f"{input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * _ew.unary_api["sigmoid"](b)


def prelu(input, weight):
    _tensor(input, "prelu")
    _tensor(weight, "prelu", "weight")
    n = weight.numel()
    if n != 1:
        if input.ndim < 2 or input._shape[1] != n:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {n} and channel size = "
                               f"{input._shape[1] if input.ndim >= 2 else 1}.")
        weight = weight.reshape(n, *([1] * (input.ndim - 2)))
    return _ew.where(input > 0, input, input * weight)


def _softmax_dim(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    _tensor(input, "softmax")
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    return _red.softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    _tensor(input, "softmin")
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim)
    return _red.softmax(-input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    _tensor(input, "log_softmax")
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    return _red.log_softmax(input, dim, dtype=dtype)


# -- dropout ------------------------------------------------------------------------------------
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` (ember RNG of the input's device) and scale the
    rest by ``1/(1-p)``."""
    _tensor(input, "dropout")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0) if inplace else input * 0
    with no_grad():
        mask = input.new_empty(input.shape).bernoulli_(1.0 - p).div_(1.0 - p)
    return input.mul_(mask) if inplace else input * mask


# -- normalization ------------------------------------------------------------------------------
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
    _tensor(input, "layer_norm")
    shape, dims = _norm_dims(input, normalized_shape, "layer_norm")
    _check_affine(weight, shape, "layer_norm", "weight")
    _check_affine(bias, shape, "layer_norm", "bias")
    return _nn_ops.norm.native_layer_norm_op(input, list(shape), weight, bias, float(eps))[0]


def rms_norm(input, normalized_shape, weight=None, eps=None):
    _tensor(input, "rms_norm")
    shape, dims = _norm_dims(input, normalized_shape, "rms_norm")
    _check_affine(weight, shape, "rms_norm", "weight")
    if eps is None:
        eps = _EPS.get(input.dtype.name, _EPS["float32"])
    out = input * _ew.unary_api["rsqrt"]((input * input).mean(dims, keepdim=True) + eps)
    return out if weight is None else out * weight


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """One ``native_group_norm`` op (NativeGroupNormBackward0)."""
    _tensor(input, "group_norm")
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
    _tensor(input, "batch_norm")
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected at least 2D input (got {input.ndim}D input)")
    c = input._shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_affine(t, (c,), "batch_norm", name)
    if training:
        count = input.numel() // max(c, 1)
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {input.shape}")
    elif running_mean is None or running_var is None:
        raise RuntimeError("batch_norm: running_mean and running_var must be defined in "
                           "evaluation mode")
    return _nn_ops.native_batch_norm(input, weight, bias, running_mean, running_var,
                                     bool(training), momentum, eps)[0]


# -- embedding ----------------------------------------------------------------------------------
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by the integer ``input``; the row at ``padding_idx`` gets no
    gradient."""
    _tensor(input, "embedding")
    _tensor(weight, "embedding", "weight")
    if input.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.dtype} instead "
                           f"(while checking arguments for embedding)")
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got shape {list(weight.shape)}")
    if sparse:
        warnings.warn("embedding(sparse=True): ember computes the weight's gradient dense (its "
                      "sparse COO tensors do not flow through embedding's backward)",
                      UserWarning, stacklevel=2)
    num = weight._shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= num
    flat = input.reshape(-1)
    # under ember.compile/export the range check is index_select's own (it raises on every
    # backend): a host read here would break the graph on every embedding. On a device the
    # same holds (index_select flags a bad index on the device, raised at the next read, as
    # CUDA's device asserts): reading the indices back would stall every step
    if flat.numel() and not _tensor_mod._capture_hooks and flat.device.type == "cpu":
        every = every_example(flat)   # every example of a vmapped batch
        lo, hi = int(every.min()), int(every.max())
        if lo < 0 or hi >= num:
            raise IndexError(f"index out of range in self (embedding of {num} rows got index "
                             f"{lo if lo < 0 else hi})")
    if max_norm is not None:
        _embedding_renorm_(weight, flat, max_norm, norm_type)
    from ..ops.indexing import index_select
    out = index_select(weight, 0, flat)
    if out.requires_grad and (padding_idx is not None or scale_grad_by_freq):
        # same values, altered gradient: d(out)/d(rows) becomes 0 at padding rows, or 1/count
        frozen = out.detach()
        factor = None
        if scale_grad_by_freq:
            from ..ops.sorting import unique
            _, inv, counts = unique(flat, return_inverse=True, return_counts=True)
            factor = (1.0 / counts.to(weight.dtype)).index_select(0, inv)
        if padding_idx is not None:
            keep = (flat != padding_idx).to(weight.dtype)
            factor = keep if factor is None else factor * keep
        out = frozen + (out - frozen) * factor.unsqueeze(-1)
    return out.reshape(*input._shape, weight._shape[1])


def _embedding_renorm_(weight, flat, max_norm, norm_type):
    from ..ops.sorting import unique
    with no_grad():
        rows = unique(flat)
        sel = weight.index_select(0, rows)
        norms = sel.norm(norm_type, 1, keepdim=True)
        scale = _ew.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_copy_(0, rows, sel * scale)


# -- misc ---------------------------------------------------------------------------------------
def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    _tensor(input, "normalize")
    denom = _red.norm(input, p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    r = input / denom
    return r if out is None else out.copy_(r)


def one_hot(tensor, num_classes=-1):
    from ..ops.indexing import one_hot as _one_hot
    return _one_hot(tensor, num_classes)


def _pad_index(n, left, right, mode, device):
    """Source index of each padded position along a dim of size ``n``."""
    import numpy as np
    from ..ops.factories import from_numpy
    pos = np.arange(-left, n + right)
    if mode == "reflect":
        period = 2 * (n - 1)
        pos = np.abs(pos) % period if period else np.zeros_like(pos)
        pos = np.where(pos >= n, period - pos, pos)
    elif mode == "replicate":
        pos = np.clip(pos, 0, n - 1)
    else:  # circular
        pos = pos % n
    return from_numpy(pos.astype(np.int64)).to(device)


def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad)//2`` dims: ``pad = (left_last, right_last, left_prev, ...)``.
    Modes: constant (negative pads crop), reflect, replicate, circular."""
    _tensor(input, "pad")
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(f"pad: Padding length must be divisible by 2, got {len(pad)}")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.ndim}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and value is not None and value != 0:
        raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
    out = input
    for k in range(len(pad) // 2):
        left, right = pad[2 * k], pad[2 * k + 1]
        dim = input.ndim - 1 - k
        n = out._shape[dim]
        if mode == "constant":
            if left < 0:
                out, n, left = out.narrow(dim, -left, n + left), n + left, 0
            if right < 0:
                out, n, right = out.narrow(dim, 0, n + right), n + right, 0
            if left or right:
                from ..ops.shape import cat
                parts = []
                fill = 0 if value is None else value
                for m in (left, None, right):
                    if m is None:
                        parts.append(out)
                    elif m:
                        shape = list(out._shape)
                        shape[dim] = m
                        parts.append(out.new_full(shape, fill))
                out = cat(parts, dim)
            continue
        if left < 0 or right < 0:
            raise RuntimeError(f"pad: negative padding is only supported in constant mode, got "
                               f"{pad} with mode '{mode}'")
        if mode == "reflect" and (left >= n or right >= n):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding "
                               f"input dimension, but got: padding ({left}, {right}) at "
                               f"dimension {dim} of input {list(input.shape)}")
        if mode == "circular" and (left > n or right > n):
            raise RuntimeError(f"Padding value causes wrapping around more than once (padding "
                               f"({left}, {right}) for size {n} at dimension {dim}).")
        if left or right:
            out = out.index_select(dim, _pad_index(n, left, right, mode, out.device))
    return out


from ._conv import *  # noqa: E402,F401,F403 - convolution and pooling (nn/_conv.py, nn/_pool.py)
from ._loss import *  # noqa: E402,F401,F403 - losses (nn/_loss.py)
from ._pool_extras import *  # noqa: E402,F401,F403 - lp_pool, max_unpool
from ._fractional_pool import *  # noqa: E402,F401,F403 - fractional max pooling


# convolution, pooling and losses live in their own modules (nn-B); one namespace, like torch
from ._conv import *  # noqa: F401,F403,E402
from ._loss import *  # noqa: F401,F403,E402
from ._attention import *  # noqa: F401,F403,E402 - attention (nn/_attention.py)
from ._attention import _canonical_mask, _none_or_dtype  # noqa: F401,E402 - torch's helpers
from ._conv import __all__ as _conv_all  # noqa: E402
from ._loss import __all__ as _loss_all  # noqa: E402
from ._attention import __all__ as _attention_all  # noqa: E402

__all__ = __all__ + list(_conv_all) + list(_loss_all) + list(_attention_all)

# issue #25: functional forms whose ops live in ember/ops (re-exported) or in nn/_<topic>.py
from ..ops.spatial import (channel_shuffle, fold, native_channel_shuffle,  # noqa: E402
                           pixel_shuffle, pixel_unshuffle, unfold)
__all__ += ["fold", "unfold", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
            "native_channel_shuffle"]
from ._sampling import *  # noqa: E402,F401,F403 - interpolate, grid_sample, affine_grid
from ._sampling import __all__ as _sampling_all  # noqa: E402
__all__ += list(_sampling_all)
from ._grid import *  # noqa: E402,F401,F403 - grid_sample, affine_grid
__all__ += ["grid_sample", "affine_grid"]
from ._bags import embedding_bag  # noqa: E402,F401
__all__ += ["embedding_bag"]
from ._fractional_pool import __all__ as _fractional_all  # noqa: E402
__all__ += list(_fractional_all)
from ._distance import cosine_similarity, pairwise_distance, pdist  # noqa: E402,F401
__all__ += ["cosine_similarity", "pairwise_distance", "pdist"]
from ..ops.ctc import ctc_loss  # noqa: E402,F401
__all__ += ["ctc_loss"]
from ._activations_more import gumbel_softmax, hardshrink, softshrink  # noqa: E402,F401
__all__ += ["gumbel_softmax", "hardshrink", "softshrink"]
from ._dropout import *  # noqa: E402,F401,F403 - channel and alpha dropout
from ._dropout import __all__ as _dropout_all  # noqa: E402
__all__ += list(_dropout_all)
from ._losses_more import *  # noqa: E402,F401,F403 - margin, embedding, NLL-family losses
from ._losses_more import __all__ as _losses_more_all  # noqa: E402
__all__ += list(_losses_more_all)
from ._norm_more import instance_norm, local_response_norm  # noqa: E402,F401
__all__ += ["instance_norm", "local_response_norm"]
