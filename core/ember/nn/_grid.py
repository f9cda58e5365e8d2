"""``F.grid_sample`` and ``F.affine_grid`` (ops in ``ember/ops/grid_sampling.py``)."""
from __future__ import annotations

from .._tensor import Tensor
from ..ops import grid_sampling as _gs

__all__ = ["grid_sample", "affine_grid"]

_MODES = {"bilinear": _gs.BILINEAR, "nearest": _gs.NEAREST, "bicubic": _gs.BICUBIC}
_PADDING = {"zeros": _gs.ZEROS, "border": _gs.BORDER, "reflection": _gs.REFLECTION}


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample ``input`` at the normalised points ``grid`` ([-1, 1] spans the input)."""
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDING:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    return _gs.grid_sampler(input, grid, _MODES[mode], _PADDING[padding_mode],
                            bool(align_corners))


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of the batch of affine maps ``theta`` for an output of ``size``."""
    if not isinstance(theta, Tensor):
        raise TypeError(f"affine_grid(): argument 'theta' must be Tensor, not "
                        f"{type(theta).__name__}")
    align_corners = bool(align_corners)
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(int(s) for s in size)
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
    elif len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
    else:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise ValueError(f"Expected theta of batch size {size[0]} for size {size}, got "
                         f"{theta.shape[0]}")
    return _gs.affine_grid_generator(theta, size, align_corners)
