"""Entries for ``ember.ops.grid_sampling`` through ``F.grid_sample`` (every mode and padding,
2-D and 3-D, points inside and outside the input) and ``F.affine_grid``."""
from __future__ import annotations

from ember.nn import functional as F

from ._cases import entry
from ember.ops.grid_sampling import grid_sampler_backward_op

_BOTH = ("grid_sampler", "grid_sampler_backward")
_LOOSE = {"float32": (1e-4, 1e-5)}


def _grid(shape, low=-1.2, high=1.2):
    return (shape, ("f", low, high))


OPS = [
    entry("grid_sample bilinear", lambda x, g, **kw: F.grid_sample(x, g, **kw),
          ("zeros", [((2, 3, 5, 4), "x"), _grid((2, 3, 2, 2))], dict(padding_mode="zeros")),
          ("border align_corners", [((1, 2, 4, 5), "l"), _grid((1, 2, 3, 2))],
           dict(padding_mode="border", align_corners=True)),
          ("reflection", [((1, 2, 4, 5), "x"), _grid((1, 4, 1, 2), -2.5, 2.5)],
           dict(padding_mode="reflection")),
          covers=_BOTH, tolerances=_LOOSE),
    entry("grid_sample nearest", lambda x, g, **kw: F.grid_sample(x, g, mode="nearest", **kw),
          ("zeros", [((2, 3, 5, 4), "x"), _grid((2, 3, 2, 2))], {}),
          ("reflection align_corners", [((1, 2, 4, 5), "x"), _grid((1, 2, 3, 2), -2, 2)],
           dict(padding_mode="reflection", align_corners=True)),
          covers=_BOTH, tolerances=_LOOSE),
    entry("grid_sample bicubic", lambda x, g, **kw: F.grid_sample(x, g, mode="bicubic", **kw),
          ("zeros", [((1, 2, 5, 4), "x"), _grid((1, 3, 2, 2))], {}),
          ("border", [((1, 2, 4, 5), "l"), _grid((1, 2, 2, 2))], dict(padding_mode="border")),
          ("reflection align_corners", [((1, 1, 4, 5), "x"), _grid((1, 2, 2, 2), -2, 2)],
           dict(padding_mode="reflection", align_corners=True)),
          covers=_BOTH, tolerances=_LOOSE),
    entry("grid_sample 3-D", lambda x, g, **kw: F.grid_sample(x, g, **kw),
          ("trilinear zeros", [((1, 2, 3, 4, 5), "x"), _grid((1, 2, 2, 2, 3))], {}),
          ("nearest border", [((1, 2, 3, 4, 5), "x"), _grid((1, 2, 1, 2, 3))],
           dict(mode="nearest", padding_mode="border")),
          covers=_BOTH, tolerances=_LOOSE),
    entry("affine_grid", lambda t, size, **kw: F.affine_grid(t, size, **kw),
          ("2-D", [((2, 2, 3), "x"), ("const", (2, 3, 4, 5))], {}),
          ("2-D align_corners", [((1, 2, 3), "x"), ("const", (1, 1, 3, 2))],
           dict(align_corners=True)),
          ("3-D", [((1, 3, 4), "x"), ("const", (1, 1, 2, 3, 4))], {})),
]
# the backward op called directly: its values (and meta shapes) beside the gradient checks above
OPS += [
    entry("grid_sampler_backward",
          lambda go, x, grid: grid_sampler_backward_op(go, x, grid, 0, 0, False),
          ("bilinear zeros", [((1, 2, 3, 3), "x"), ((1, 2, 4, 5), "x"), ((1, 3, 3, 2), "x")], {}),
          covers=("grid_sampler_backward",), differentiable=False,
          tolerances={"float32": (1e-4, 1e-5)}),
]
