"""Resampling in ``ember.nn.functional``: ``interpolate`` (and the deprecated ``upsample*``)
over the ``upsample`` op, with PyTorch's argument rules (size vs scale_factor,
recompute_scale_factor, align_corners only for interpolating modes, antialias for 4-D
bilinear/bicubic). ``grid_sample``/``affine_grid`` are in ``_grid.py``."""
from __future__ import annotations

import math
import warnings

from .._tensor import Tensor
from ..ops import resampling as _rs
from .._warn import user_stacklevel

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]

_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")
_OP_MODE = {"nearest": "nearest", "nearest-exact": "nearest-exact", "area": "area",
            "linear": "linear", "bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}
_NEEDS = {"linear": 3, "bilinear": 4, "trilinear": 5, "bicubic": 4}


def _is_integer(x):
    return isinstance(x, int) and not isinstance(x, bool) or \
        isinstance(x, Tensor) and x.ndim == 0 and not x.is_floating_point()


def _per_spatial_dim(input, value, name, given_as, expected_form):
    """``value`` as one entry per spatial dim of ``input`` (a single value repeats); a sequence
    of another length is PyTorch's ValueError."""
    dim = input.ndim - 2
    if not isinstance(value, (list, tuple)):
        return [value] * dim
    if len(value) != dim:
        raise ValueError(
            f"Input and {name} must have the same number of spatial dimensions, but got input "
            f"with spatial dimensions of {list(input.shape[2:])} and {given_as} {value}. Please "
            f"provide input tensor in (N, C, d1, d2, ...,dK) format and {expected_form} format.")
    return list(value)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Down/up-sample ``input`` (N, C, d1[, d2[, d3]]) to ``size`` or by ``scale_factor``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    dim = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        scale_factors = None
        sizes = _per_spatial_dim(input, size, "output", "output size of",
                                 "output size in (o1, o2, ...,oK)")
        if isinstance(size, (list, tuple)) and not all(_is_integer(x) for x in size):
            raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] "
                            f"or Tuple[int, int, int], but got size with types "
                            f"{[type(x) for x in size]}")
        output_size = [int(x) for x in sizes]
    elif scale_factor is not None:
        output_size = None
        scale_factors = [float(s) for s in _per_spatial_dim(
            input, scale_factor, "scale_factor", "scale_factor of shape",
            "scale_factor in (s1, s2, ...,sK)")]
    else:
        raise ValueError("either size or scale_factor should be defined")
    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        output_size = [math.floor(float(input.shape[i + 2]) * scale_factors[i])
                       for i in range(dim)]
        scale_factors = None
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes "
                         "and requires a 4-D tensor as input")
    if mode not in _OP_MODE or input.ndim not in (3, 4, 5):
        raise NotImplementedError(
            f"interpolate: Input Error: Only 3D, 4D and 5D input Tensors supported (got "
            f"{input.ndim}D) for the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})")
    need = _NEEDS.get(mode)
    if need is not None and input.ndim != need:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {need}D input")
    if output_size is None:
        output_size = _rs.output_size_of(input.shape, None, scale_factors)
    op_mode = _OP_MODE[mode]
    if antialias:
        op_mode += "_aa"
    if mode == "area":
        scale_factors = None
    return _rs.upsample(input, output_size, op_mode, bool(align_corners), scale_factors)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of ``interpolate``."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` "
                  "instead.", stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use "
                  "`nn.functional.interpolate` instead.", stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
