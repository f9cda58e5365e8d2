"""PixelShuffle, PixelUnshuffle and ChannelShuffle."""
from __future__ import annotations

from .. import functional as F
from ._functional_module import _FunctionalModule

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]


class PixelShuffle(_FunctionalModule):
    """(*, C*r^2, H, W) -> (*, C, H*r, W*r) (sub-pixel convolution's rearrangement)."""
    _fn = staticmethod(F.pixel_shuffle)
    _options = ("upscale_factor",)

    def __init__(self, upscale_factor):
        super().__init__(upscale_factor=upscale_factor)


class PixelUnshuffle(_FunctionalModule):
    """(*, C, H*r, W*r) -> (*, C*r^2, H, W), the inverse of PixelShuffle."""
    _fn = staticmethod(F.pixel_unshuffle)
    _options = ("downscale_factor",)

    def __init__(self, downscale_factor):
        super().__init__(downscale_factor=downscale_factor)


class ChannelShuffle(_FunctionalModule):
    """Divide the channels into ``groups`` and interleave them (ShuffleNet)."""
    _fn = staticmethod(F.channel_shuffle)
    _options = ("groups",)

    def __init__(self, groups):
        super().__init__(groups=groups)
