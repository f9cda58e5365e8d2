"""The activation functions of ``ember.nn.functional``: each checks its arguments with
PyTorch's messages and calls the activation op (``ember.ops.elementwise``) or composes a few;
``gumbel_softmax`` samples, and the channel softmax is ``nn.Softmax2d``'s."""
from __future__ import annotations

import warnings

from ..dispatch.grad_mode import no_grad
from ..ops import elementwise as _ew
from ..ops import reduction as _red
from ..ops.elementwise import activation as _act
# torch.nn.functional's in-place forms are torch's own functions (F.celu_ is torch.celu_)
from ..ops.elementwise.activation import prelu, rrelu_, selu_, threshold_
from ..ops.elementwise.activation_nodes import celu_, hardshrink, softshrink
from ..ops.elementwise import activation_nodes as _nodes
from ..ops._util import require_tensor, torch_function
from .._warn import user_stacklevel

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "gelu", "silu", "mish", "elu",
           "elu_", "selu", "selu_", "celu", "celu_", "hardtanh", "hardtanh_", "hardsigmoid",
           "hardswish", "rrelu", "rrelu_", "softplus", "softsign", "sigmoid", "tanh",
           "logsigmoid", "tanhshrink", "threshold", "threshold_", "glu", "prelu", "softmax",
           "softmin", "log_softmax", "hardshrink", "softshrink", "gumbel_softmax"]


def relu(input, inplace=False):
    require_tensor(input, "relu")
    return input.relu_() if inplace else _ew.unary_api["relu"](input)


@torch_function("relu_")
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
    require_tensor(input, "silu")
    return input.silu_() if inplace else _ew.unary_api["silu"](input)


def mish(input, inplace=False):
    require_tensor(input, "mish")
    return input.mish_() if inplace else _ew.unary_api["mish"](input)


def elu(input, alpha=1.0, inplace=False):
    return _act.elu_(input, alpha) if inplace else _ew.elu(input, alpha)


def elu_(input, alpha=1.0, scale=1.0, input_scale=1.0):
    return _act.elu_(input, alpha, scale, input_scale)


def selu(input, inplace=False):
    require_tensor(input, "selu")
    return _act.selu_(input) if inplace else _act.selu(input)


def celu(input, alpha=1.0, inplace=False):
    require_tensor(input, "celu")
    return _nodes.celu_(input, alpha) if inplace else _nodes.celu(input, alpha)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    if inplace:
        return _act.hardtanh_(input, min_val, max_val)
    return _ew.hardtanh(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _act.hardtanh_(input, min_val, max_val)


def hardsigmoid(input, inplace=False):
    require_tensor(input, "hardsigmoid")
    return _act.hardsigmoid_(input) if inplace else _act.hardsigmoid(input)


def hardswish(input, inplace=False):
    require_tensor(input, "hardswish")
    return _act.hardswish_(input) if inplace else _act.hardswish(input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    require_tensor(input, "rrelu")
    if inplace:
        return _act.rrelu_(input, lower, upper, training)
    return _act.rrelu(input, lower, upper, training)


def softplus(input, beta=1.0, threshold=20.0):
    return _ew.softplus(input, beta, threshold)


def softsign(input):
    require_tensor(input, "softsign")
    return input / (input.abs() + 1)


def sigmoid(input):
    require_tensor(input, "sigmoid")
    return _ew.unary_api["sigmoid"](input)


def tanh(input):
    require_tensor(input, "tanh")
    return _ew.unary_api["tanh"](input)


def logsigmoid(input):
    require_tensor(input, "logsigmoid")
    return _nodes.log_sigmoid(input)


def tanhshrink(input):
    require_tensor(input, "tanhshrink")
    return input - _ew.unary_api["tanh"](input)


def threshold(input, threshold, value, inplace=False):
    require_tensor(input, "threshold")
    if inplace:
        return _act.threshold_(input, threshold, value)
    return _act.threshold(input, threshold, value)


def glu(input, dim=-1):
    require_tensor(input, "glu")
    return _nodes.glu(input, dim)


def _softmax_dim(name, ndim):
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to "
                  f"include dim=X as an argument.", UserWarning, stacklevel=user_stacklevel())
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    require_tensor(input, "softmax")
    if dim is None:
        dim = _softmax_dim("softmax", input.ndim)
    return _red.softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    require_tensor(input, "softmin")
    if dim is None:
        dim = _softmax_dim("softmin", input.ndim)
    return _red.softmax(-input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    require_tensor(input, "log_softmax")
    if dim is None:
        dim = _softmax_dim("log_softmax", input.ndim)
    return _red.log_softmax(input, dim, dtype=dtype)


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-softmax distribution; ``hard`` returns one-hot vectors whose
    gradient is the soft sample's (straight-through)."""
    require_tensor(logits, "gumbel_softmax")
    with no_grad():
        gumbels = -logits.new_empty(logits.shape).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.argmax(dim, keepdim=True)
    y_hard = y_soft.new_zeros(y_soft.shape).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def _softmax2d(input):
    """Softmax over the channel dim of (N, C, H, W) or (C, H, W)."""
    if input.ndim not in (3, 4):
        raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
    return input.softmax(-3)
