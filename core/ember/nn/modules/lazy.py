"""Lazy modules: Linear, Conv/ConvTranspose 1d/2d/3d, BatchNorm and InstanceNorm 1d/2d/3d whose
input size (in_features, in_channels, num_features) is read from the first input. Until then
their parameters are ``UninitializedParameter``s; the first forward materializes them in place,
initialises them as the regular module would, and turns the module into that class
(PyTorch's ``cls_to_become``)."""
from __future__ import annotations

from ... import _dtype
from ...ops.factories import ones, zeros
from ..parameter import UninitializedParameter
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d

__all__ = ["LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


class LazyModuleMixin:
    """Initialises the module from its first input, then becomes ``cls_to_become``."""
    cls_to_become = None

    def has_uninitialized_params(self):
        return any(isinstance(p, UninitializedParameter)
                   for p in self.parameters(recurse=False))

    def forward(self, *args, **kwargs):
        # the first forward: the input's size is known now
        self.initialize_parameters(*args, **kwargs)
        self.__class__ = self.cls_to_become
        return self.forward(*args, **kwargs)

    def _lazy_parameters(self, names, device, dtype):
        for name in names:
            if getattr(self, name, None) is not None:
                setattr(self, name, UninitializedParameter(device=device, dtype=dtype))


def _dtype_of(dtype):
    return dtype if dtype is not None else _dtype.get_default_dtype()


class LazyLinear(LazyModuleMixin, Linear):
    """``Linear`` with ``in_features`` read from the input's last dim."""
    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, out_features, bias, device, dtype)
        self._lazy_parameters(("weight", "bias"), device, _dtype_of(dtype))

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        self.in_features = input.shape[-1]
        self.weight.materialize((self.out_features, self.in_features))
        if self.bias is not None:
            self.bias.materialize((self.out_features,))
        self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    def _lazy_init(self, device, dtype):
        self._lazy_parameters(("weight", "bias"), device, _dtype_of(dtype))

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        batched = input.ndim == self._nsp + 2
        self.in_channels = input.shape[1 if batched else 0]
        if self.in_channels % self.groups:
            raise ValueError("in_channels must be divisible by groups")
        if self.transposed:
            shape = (self.in_channels, self.out_channels // self.groups, *self.kernel_size)
        else:
            shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        self.weight.materialize(shape)
        if self.bias is not None:
            self.bias.materialize((self.out_channels,))
        self.reset_parameters()


def _conv(base, transposed):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, *rest, device=None,
                 dtype=None, **kwargs):
        if transposed:
            base.__init__(self, 0, out_channels, kernel_size, stride, padding, *rest,
                          device=device, dtype=dtype, **kwargs)
        else:
            base.__init__(self, 0, out_channels, kernel_size, stride, padding, *rest,
                          device=device, dtype=dtype, **kwargs)
        self._lazy_init(device, dtype)
    name = "Lazy" + base.__name__
    return type(name, (_LazyConvMixin, base), {
        "__init__": __init__, "cls_to_become": base, "__module__": __name__,
        "__doc__": f"``{base.__name__}`` with ``in_channels`` read from the first input."})


LazyConv1d = _conv(Conv1d, False)
LazyConv2d = _conv(Conv2d, False)
LazyConvTranspose1d = _conv(ConvTranspose1d, True)
LazyConvTranspose2d = _conv(ConvTranspose2d, True)
LazyConv3d = _conv(Conv3d, False)
LazyConvTranspose3d = _conv(ConvTranspose3d, True)


class _LazyNormMixin(LazyModuleMixin):
    _channel_dim_unbatched = 1

    def _lazy_init(self, device, dtype):
        self._lazy_parameters(("weight", "bias"), device, _dtype_of(dtype))
        self._factory = {"device": device, "dtype": _dtype_of(dtype)}

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        if self.weight is None and not self.track_running_stats:
            return  # nothing to size: PyTorch leaves num_features at 0 too
        unbatched = input.ndim == self._unbatched_ndim
        self.num_features = input.shape[0 if unbatched else 1]
        for p in (self.weight, self.bias):
            if p is not None:
                p.materialize((self.num_features,))
        if self.track_running_stats:
            self.running_mean = zeros(self.num_features, **self._factory)
            self.running_var = ones(self.num_features, **self._factory)
        del self._factory
        self.reset_parameters()


def _norm(base, unbatched_ndim):
    # PyTorch's lazy norms default to affine and tracked statistics, InstanceNorm's too
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, *, bias=True):
        base.__init__(self, 0, eps, momentum, affine, track_running_stats, device, dtype,
                      bias=bias)
        self._lazy_init(device, dtype)
    return type("Lazy" + base.__name__, (_LazyNormMixin, base), {
        "__init__": __init__, "cls_to_become": base, "_unbatched_ndim": unbatched_ndim,
        "__module__": __name__,
        "__doc__": f"``{base.__name__}`` with ``num_features`` read from the first input."})


LazyBatchNorm1d = _norm(BatchNorm1d, -1)
LazyBatchNorm2d = _norm(BatchNorm2d, -1)
LazyBatchNorm3d = _norm(BatchNorm3d, -1)
LazyInstanceNorm1d = _norm(InstanceNorm1d, 2)
LazyInstanceNorm2d = _norm(InstanceNorm2d, 3)
LazyInstanceNorm3d = _norm(InstanceNorm3d, 4)
