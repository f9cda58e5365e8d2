"""``ember.nn.init``: in-place initializers with PyTorch's names, formulas and errors.

Each fills the tensor on its own device with the ember generator of that device (or the
``generator`` given), under ``no_grad``, so ``ember.manual_seed`` reproduces an initialization.
"""
from __future__ import annotations

import math
import warnings
import numpy as np

from .._tensor import Tensor
from ..dispatch.grad_mode import no_grad
from ..ops.factories import eye as identity_matrix, from_numpy
from ..ops.random import randperm
from .._warn import user_stacklevel

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_"]


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d"]
    if nonlinearity in linear or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _check(tensor, fn):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nn.init.{fn}(): expected an ember Tensor, got {type(tensor).__name__}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in tensor._shape[2:]:
        receptive *= s
    return tensor._shape[1] * receptive, tensor._shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    _check(tensor, "uniform_")
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    _check(tensor, "normal_")
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """Normal(mean, std) truncated to [a, b], by inverse-CDF sampling (PyTorch's method)."""
    _check(tensor, "trunc_normal_")

    def norm_cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=user_stacklevel())
    with no_grad():
        lo, hi = norm_cdf((a - mean) / std), norm_cdf((b - mean) / std)
        tensor.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
        return tensor


def constant_(tensor, val):
    _check(tensor, "constant_")
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    return constant_(tensor, 1.0)


def zeros_(tensor):
    _check(tensor, "zeros_")
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    _check(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        return tensor.copy_(identity_matrix(*tensor._shape, dtype=tensor.dtype,
                                            device=tensor.device))


def dirac_(tensor, groups=1):
    """Identity for convolution weights: each output channel passes one input channel."""
    _check(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor._shape
    if sizes[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = sizes[0] // groups
    with no_grad():
        tensor.zero_()
        center = tuple(s // 2 for s in sizes[2:])
        for g in range(groups):
            for d in range(min(out_per_group, sizes[1])):
                tensor[(g * out_per_group + d, d) + center] = 1
    return tensor


def xavier_uniform_(tensor, gain=1.0, generator=None):
    _check(tensor, "xavier_uniform_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    _check(tensor, "xavier_normal_")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    _check(tensor, "kaiming_uniform_")
    if 0 in tensor._shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=user_stacklevel())
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    _check(tensor, "kaiming_normal_")
    if 0 in tensor._shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=user_stacklevel())
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal draw. The draw uses the
    tensor's device generator; the QR of this one-off init matrix runs on the host (numpy)."""
    _check(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor._shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flat = tensor.new_empty((rows, cols)).normal_(0.0, 1.0, generator=generator)
        a = flat._host().astype(np.float64)
        if rows < cols:
            a = a.T
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))  # makes the factorization unique (uniform over O(n))
        if rows < cols:
            q = q.T
        q = from_numpy(np.ascontiguousarray(q * gain)).to(tensor.device, tensor.dtype)
        return tensor.copy_(q.reshape(tensor._shape))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Normal(0, std) with a fraction ``sparsity`` of each column set to zero."""
    _check(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor._shape
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0.0, std, generator=generator)
        for c in range(cols):
            idx = randperm(rows, generator=generator, device=tensor.device)[:num_zeros]
            tensor[idx, c] = 0
    return tensor


# PyTorch's deprecated non-underscore aliases
def _deprecated(fn):
    def alias(*args, **kwargs):
        warnings.warn(f"nn.init.{fn.__name__[:-1]} is now deprecated in favor of "
                      f"nn.init.{fn.__name__}.", FutureWarning, stacklevel=user_stacklevel())
        return fn(*args, **kwargs)
    alias.__name__ = fn.__name__[:-1]
    return alias


uniform, normal, constant, eye, dirac = (_deprecated(f) for f in (uniform_, normal_, constant_,
                                                                  eye_, dirac_))
xavier_uniform, xavier_normal, kaiming_uniform, kaiming_normal, orthogonal, sparse = (
    _deprecated(f) for f in (xavier_uniform_, xavier_normal_, kaiming_uniform_, kaiming_normal_,
                             orthogonal_, sparse_))
