"""Dropout in ``ember.nn.functional``: ``dropout``, channel dropout (``dropout1d/2d/3d``: whole
feature maps zeroed), ``alpha_dropout`` (keeps SELU's mean and variance) and
``feature_alpha_dropout``, with the ``torch.*`` native forms (a positional ``train``). Masks
come from the input device's generator."""
from __future__ import annotations

import math
import warnings

from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from ..ops._util import torch_function
from .._warn import user_stacklevel

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_ALPHA_PRIME = -_SELU_ALPHA * _SELU_SCALE


def _check(input, p, fn):
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _trivial(input, p, training, inplace):
    """The result when nothing is random: the input itself (eval, or p = 0) or zeros (p = 1:
    PyTorch returns zeros, not the dropped value's affine image); None otherwise."""
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input.mul_(0) if inplace else input * 0
    return None


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` (ember RNG of the input's device) and scale the
    rest by ``1/(1-p)``."""
    _check(input, p, "dropout")
    out = _trivial(input, p, training, inplace)
    if out is not None:
        return out
    with no_grad():
        mask = input.new_empty(input.shape).bernoulli_(1.0 - p).div_(1.0 - p)
    return input.mul_(mask) if inplace else input * mask


def _feature_mask(input, p, batched):
    """A Bernoulli(1 - p) mask over (N, C) broadcast across the feature maps."""
    shape = list(input.shape[:2] if batched else input.shape[:1]) + \
        [1] * (input.ndim - (2 if batched else 1))
    with no_grad():
        return input.new_empty(shape).bernoulli_(1.0 - p)


def _channel_dropout(input, p, training, inplace, batched, fn):
    _check(input, p, fn)
    out = _trivial(input, p, training, inplace)
    if out is not None:
        return out
    mask = _feature_mask(input, p, batched) / (1.0 - p)
    return input.mul_(mask) if inplace else input * mask


def _warn_unexpected_rank(input, spatial):
    """dropout2d/dropout3d's deprecation warning for an input that is not (N, C, *spatial) or
    (C, *spatial): it still runs, as in PyTorch."""
    if input.ndim not in (spatial + 1, spatial + 2):
        fn = f"dropout{spatial}d"
        warnings.warn(f"{fn}: Received a {input.ndim}-D input to {fn}, which is deprecated and "
                      f"will result in an error in a future release. To retain the behavior and "
                      f"silence this warning, please use dropout instead. Note that {fn} exists "
                      f"to provide channel-wise dropout on inputs with {spatial} spatial "
                      f"dimensions, a channel dimension, and an optional batch dimension (i.e. "
                      f"{spatial + 1}D or {spatial + 2}D inputs).", stacklevel=user_stacklevel())


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, L) or unbatched (C, L) inputs."""
    _check(input, p, "dropout1d")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           f"input. Note that dropout1d exists to provide channel-wise dropout on "
                           f"inputs with 1 spatial dimension, a channel dimension, and an optional "
                           f"batch dimension (i.e. 2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, input.ndim == 3, "dropout1d")


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, H, W) inputs; like PyTorch, a 3-D input is read as
    (N, C, L) (with a warning) and other ranks warn but run."""
    _check(input, p, "dropout2d")
    _warn_unexpected_rank(input, 2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
                      "1D dropout behavior is desired - input is interpreted as shape (N, C, L), "
                      "where C is the channel dim. This behavior will change in a future release "
                      "to interpret the input as one without a batch dimension, i.e. shape (C, H, "
                      "W). To maintain the 1D channel-wise dropout behavior, please switch to "
                      "using dropout1d instead.", stacklevel=user_stacklevel())
    return _channel_dropout(input, p, training, inplace, input.ndim >= 2, "dropout2d")


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, D, H, W) or unbatched (C, D, H, W) inputs."""
    _check(input, p, "dropout3d")
    _warn_unexpected_rank(input, 3)
    return _channel_dropout(input, p, training, inplace, input.ndim != 4 and input.ndim >= 2,
                            "dropout3d")


def _alpha(input, p, training, inplace, feature, fn):
    _check(input, p, fn)
    out = _trivial(input, p, training, inplace)
    if out is not None:
        return out
    keep = 1.0 - p
    a = 1.0 / math.sqrt((_ALPHA_PRIME ** 2 * p + 1) * keep)
    b = -a * _ALPHA_PRIME * p
    if feature:
        mask = _feature_mask(input, p, input.ndim >= 2)
    else:
        with no_grad():
            mask = input.new_empty(input.shape).bernoulli_(keep)
    out = (input * mask + (1 - mask) * _ALPHA_PRIME) * a + b
    return input.copy_(out) if inplace else out


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout for SELU networks: dropped units take SELU's negative saturation, then an affine
    map restores the mean and variance."""
    return _alpha(input, p, training, inplace, False, "alpha_dropout")


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """``alpha_dropout`` that drops whole channels."""
    return _alpha(input, p, training, inplace, True, "feature_alpha_dropout")


# -- the torch.* native forms -------------------------------------------------------------------
@torch_function("dropout")
def _torch_dropout(input, p, train):
    return dropout(input, p, train)


@torch_function("alpha_dropout")
def _torch_alpha_dropout(input, p, train):
    return alpha_dropout(input, p, train)


@torch_function("feature_alpha_dropout")
def _torch_feature_alpha_dropout(input, p, train):
    return feature_alpha_dropout(input, p, train)


@torch_function("feature_dropout")
def _torch_feature_dropout(input, p, train):
    """Channel dropout over dims 0 (batch) and 1 (channels), whatever the rank."""
    return _channel_dropout(input, p, train, False, input.ndim >= 2, "feature_dropout")


# the in-place native forms: torch.dropout_(input, p, train) & co
@torch_function("dropout_")
def _torch_dropout_(input, p, train):
    return dropout(input, p, train, inplace=True)


@torch_function("alpha_dropout_")
def _torch_alpha_dropout_(input, p, train):
    return alpha_dropout(input, p, train, inplace=True)


@torch_function("feature_alpha_dropout_")
def _torch_feature_alpha_dropout_(input, p, train):
    return feature_alpha_dropout(input, p, train, inplace=True)


@torch_function("feature_dropout_")
def _torch_feature_dropout_(input, p, train):
    return _channel_dropout(input, p, train, True, input.ndim >= 2, "feature_dropout_")
