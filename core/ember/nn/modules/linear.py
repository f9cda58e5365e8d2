"""Identity, Linear and Bilinear, with PyTorch's default initialization."""
from __future__ import annotations

import math

from ... import _dtype
from ...ops.factories import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear"]


def _factory(device, dtype):
    return {"device": device, "dtype": dtype if dtype is not None else _dtype.get_default_dtype()}


def _weight_and_bias(module, weight_shape, bias, out_features, kw):
    """Register ``module.weight`` (uninitialised, ``weight_shape``) and ``module.bias``
    (``out_features`` values, or None when ``bias`` is false); ``reset_parameters`` fills them."""
    module.weight = Parameter(empty(weight_shape, **kw))
    if bias:
        module.bias = Parameter(empty(out_features, **kw))
    else:
        module.register_parameter("bias", None)


class Identity(Module):
    """Returns its input; takes (and ignores) any constructor arguments, like PyTorch's."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ W.T + b`` with ``W`` of shape (out_features, in_features)."""

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        kw = _factory(device, dtype)
        self.in_features = in_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in_features), bias, out_features, kw)
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight._shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with ``A`` of shape (out_features, in1_features, in2_features)."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None,
                 dtype=None):
        super().__init__()
        kw = _factory(device, dtype)
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        _weight_and_bias(self, (out_features, in1_features, in2_features), bias, out_features,
                         kw)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight._shape[1]) if self.weight._shape[1] else 0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """torch's class for MultiheadAttention.out_proj (a Linear; the name shows in reprs),
    where torch defines it, so ``torch.nn.modules.linear.NonDynamicallyQuantizableLinear``
    names it under ``ember run`` (a safe-globals list for ``torch.load`` does)."""
