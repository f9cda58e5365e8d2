"""Activation modules: thin wrappers over ``nn.functional`` that print like PyTorch's."""
from __future__ import annotations

import warnings

from ... import _dtype
from ...ops.factories import full
from .. import functional as F
from .._activation import _softmax2d
from ..parameter import Parameter
from ._functional_module import _FunctionalModule
from .module import Module
from ..._warn import user_stacklevel

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Mish", "ELU", "SELU", "CELU",
           "Hardtanh", "Hardsigmoid", "Hardswish", "Softplus", "Softsign", "Sigmoid", "Tanh",
           "LogSigmoid", "Tanhshrink", "Threshold", "RReLU", "GLU", "PReLU", "Softmax", "Softmin",
           "LogSoftmax", "Hardshrink", "Softshrink", "Softmax2d"]


class _Inplace(_FunctionalModule):
    __constants__ = ["inplace"]
    _options = ("inplace",)

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class ReLU(_Inplace):
    _fn = staticmethod(F.relu)


class SiLU(_Inplace):
    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    _fn = staticmethod(F.mish)


class SELU(_Inplace):
    _fn = staticmethod(F.selu)


class Hardsigmoid(_Inplace):
    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self):
        return ""   # PyTorch prints Hardsigmoid() even in place


class Hardswish(_Inplace):
    _fn = staticmethod(F.hardswish)

    def extra_repr(self):
        return ""


class Sigmoid(_FunctionalModule):
    _fn = staticmethod(F.sigmoid)


class Tanh(_FunctionalModule):
    _fn = staticmethod(F.tanh)


class Softsign(_FunctionalModule):
    _fn = staticmethod(F.softsign)


class LogSigmoid(_FunctionalModule):
    _fn = staticmethod(F.logsigmoid)


class Tanhshrink(_FunctionalModule):
    _fn = staticmethod(F.tanhshrink)


class LeakyReLU(_FunctionalModule):
    __constants__ = ["inplace", "negative_slope"]
    _fn = staticmethod(F.leaky_relu)
    _options = ("negative_slope", "inplace")

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__(negative_slope=negative_slope, inplace=inplace)


class GELU(Module):
    __constants__ = ["approximate"]

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class _AlphaActivation(_FunctionalModule):
    """ELU's and CELU's options; a private base, so CELU is not an ELU, as in PyTorch
    (``isinstance(nn.CELU(), nn.ELU)`` is False)."""
    __constants__ = ["alpha", "inplace"]
    _options = ("alpha", "inplace")

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha=alpha, inplace=inplace)


class ELU(_AlphaActivation):
    _fn = staticmethod(F.elu)


class CELU(_AlphaActivation):
    _fn = staticmethod(F.celu)


class Hardtanh(_FunctionalModule):
    __constants__ = ["min_val", "max_val", "inplace"]
    _fn = staticmethod(F.hardtanh)
    _options = ("min_val", "max_val", "inplace")

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None,
                 max_value=None):
        if min_value is not None:
            warnings.warn("keyword argument `min_value` is deprecated and renamed to `min_val`",
                          FutureWarning, stacklevel=user_stacklevel())
            min_val = min_value
        if max_value is not None:
            warnings.warn("keyword argument `max_value` is deprecated and renamed to `max_val`",
                          FutureWarning, stacklevel=user_stacklevel())
            max_val = max_value
        if max_val <= min_val:
            raise AssertionError(f"max_val ({max_val}) must be greater than min_val "
                                 f"({min_val})")
        super().__init__(min_val=min_val, max_val=max_val, inplace=inplace)


class ReLU6(Hardtanh):
    """``Hardtanh(0., 6.)``, as PyTorch defines it: ``min_val``/``max_val`` are attributes."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Softplus(_FunctionalModule):
    __constants__ = ["beta", "threshold"]
    _fn = staticmethod(F.softplus)
    _options = ("beta", "threshold")

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__(beta=beta, threshold=threshold)


class Threshold(_FunctionalModule):
    __constants__ = ["threshold", "value", "inplace"]
    _fn = staticmethod(F.threshold)
    _options = ("threshold", "value", "inplace")

    def __init__(self, threshold, value, inplace=False):
        super().__init__(threshold=threshold, value=value, inplace=inplace)


class RReLU(_FunctionalModule):
    __constants__ = ["lower", "upper", "inplace"]
    _options = ("lower", "upper", "inplace")

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__(lower=lower, upper=upper, inplace=inplace)

    def forward(self, input):
        # the training flag goes between the options: sampled slopes only in training
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)


class GLU(_FunctionalModule):
    __constants__ = ["dim"]
    _fn = staticmethod(F.glu)
    _options = ("dim",)

    def __init__(self, dim=-1):
        super().__init__(dim=dim)


class PReLU(Module):
    __constants__ = ["num_parameters"]

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        dt = dtype if dtype is not None else _dtype.get_default_dtype()
        self.weight = Parameter(full((num_parameters,), float(init), dtype=dt, device=device))

    def reset_parameters(self):
        self.weight.data.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _SoftmaxBase(Module):
    __constants__ = ["dim"]
    _fn = None

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("dim", None)

    def forward(self, input):
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax(_SoftmaxBase):
    _fn = staticmethod(F.softmax)


class Softmin(_SoftmaxBase):
    _fn = staticmethod(F.softmin)


class LogSoftmax(_SoftmaxBase):
    _fn = staticmethod(F.log_softmax)


class _Shrink(_FunctionalModule):
    __constants__ = ["lambd"]
    _options = ("lambd",)

    def __init__(self, lambd=0.5):
        super().__init__(lambd=lambd)

    def extra_repr(self):
        return f"{self.lambd}"   # the value alone, as PyTorch prints it


class Hardshrink(_Shrink):
    _fn = staticmethod(F.hardshrink)


class Softshrink(_Shrink):
    _fn = staticmethod(F.softshrink)

    def extra_repr(self):
        return str(self.lambd)   # str, not format: a 0-d tensor prints as tensor(...), as in PyTorch


class Softmax2d(Module):
    """Softmax over the channels of every spatial location."""

    def forward(self, input):
        return _softmax2d(input)


# torch defines MultiheadAttention in torch.nn.modules.activation; scripts name it there
from .multihead import MultiheadAttention  # noqa: E402,F401
