"""Conv1d/2d/3d and ConvTranspose1d/2d/3d with PyTorch's arguments, initialization and
repr. The maths is in ``nn/_conv.py``; non-zero padding modes are ``F.pad``'s, applied first."""
from __future__ import annotations

import math

from .. import _conv as C
from .._padding import pad as _pad
from .. import init
from .linear import _factory, _weight_and_bias
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


class _ConvNd(Module):
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding",
                     "in_channels", "out_channels", "kernel_size"]
    _nsp = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 transposed, output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        n = self._nsp
        name = type(self).__name__
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size = C.ntuple(kernel_size, n, "kernel_size", name)
        stride = C.ntuple(stride, n, "stride", name)
        dilation = C.ntuple(dilation, n, "dilation", name)
        if isinstance(padding, str):
            if padding not in {"same", "valid"}:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = C.ntuple(padding, n, "padding", name)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {sorted(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.transposed, self.groups = dilation, transposed, groups
        self.output_padding = C.ntuple(output_padding, n, "output_padding", name)
        self.padding_mode = padding_mode
        # (lo, hi) per spatial dim, for padding modes other than zeros
        if padding == "same":
            self._mode_pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                               for k, d in zip(kernel_size, dilation)]
        elif padding == "valid":
            self._mode_pads = [(0, 0)] * n
        else:
            self._mode_pads = [(p, p) for p in padding]
        shape = ((in_channels, out_channels // groups) if transposed else
                 (out_channels, in_channels // groups)) + kernel_size
        _weight_and_bias(self, shape, bias, out_channels, _factory(device, dtype))
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_(a=sqrt(5)) is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), PyTorch's default
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        n = self._nsp
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input, weight, bias):
        fn = type(self)._fn
        if self.padding_mode != "zeros":
            # F.pad takes (lo, hi) pairs from the last dim backwards
            pads = tuple(v for lo_hi in reversed(self._mode_pads) for v in lo_hi)
            return fn(_pad(input, pads, self.padding_mode), weight, bias,
                      self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over an input of shape (N, C_in, L) or (C_in, L)."""
    _nsp = 1
    _fn = staticmethod(C.conv1d)


class Conv2d(_Conv):
    """2-D convolution over an input of shape (N, C_in, H, W) or (C_in, H, W)."""
    _nsp = 2
    _fn = staticmethod(C.conv2d)


class Conv3d(_Conv):
    """3-D convolution over an input of shape (N, C_in, D, H, W) or (C_in, D, H, W)."""
    _nsp = 3
    _fn = staticmethod(C.conv3d)


class _ConvTransposeNd(_ConvNd):
    _fn = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of "
                             f"ints, not {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        """The output_padding that makes the result ``output_size`` (PyTorch's rule)."""
        if output_size is None:
            return self.output_padding
        n = self._nsp
        lead = 2 if input.ndim == n + 2 else 1
        output_size = list(output_size)
        if len(output_size) == lead + n:
            output_size = output_size[lead:]
        if len(output_size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must have "
                             f"{n} or {lead + n} elements (got {len(output_size)})")
        mins = [(input._shape[d + lead] - 1) * self.stride[d] - 2 * self.padding[d] +
                self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        maxs = [m + s - 1 for m, s in zip(mins, self.stride)]
        for size, lo, hi in zip(output_size, mins, maxs):
            if size < lo or size > hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {mins} to {maxs} (for an input of "
                                 f"{list(input._shape[lead:])})")
        return tuple(s - m for s, m in zip(output_size, mins))

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, op,
                              self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution (the gradient of Conv1d with respect to its input)."""
    _nsp = 1
    _fn = staticmethod(C.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution (the gradient of Conv2d with respect to its input)."""
    _nsp = 2
    _fn = staticmethod(C.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution (the gradient of Conv3d with respect to its input)."""
    _nsp = 3
    _fn = staticmethod(C.conv_transpose3d)
