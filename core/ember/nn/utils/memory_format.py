"""Converting only the convolution weights of a model to a memory format
(``torch.nn.utils.memory_format``): channels-last weights without touching other layers."""
from __future__ import annotations

from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, kinds, memory_format):
    if isinstance(module, kinds):
        weight_data = module.weight.detach().clone(memory_format=memory_format)
        module.weight.data = weight_data.resize_(weight_data.size(), memory_format=memory_format)
    for child in module.children():
        _convert(child, kinds, memory_format)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Give the weight of every ``Conv2d``/``ConvTranspose2d`` in ``module`` (itself included)
    ``memory_format`` (e.g. ``ember.channels_last``); values and shapes are unchanged. Returns
    ``module``."""
    return _convert(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module, memory_format):
    """Give the weight of every ``Conv3d``/``ConvTranspose3d`` in ``module`` (itself included)
    ``memory_format`` (e.g. ``ember.channels_last_3d``). Returns ``module``."""
    return _convert(module, (Conv3d, ConvTranspose3d), memory_format)
