"""Entries for ``ember.ops.resampling`` through ``F.interpolate``: every mode at 1-D, 2-D and
3-D, size and scale_factor, align_corners, antialias, transposed layouts. The gradient check
runs ``upsample_backward`` (the op's own backward)."""
from __future__ import annotations

from ember.nn import functional as F

from . import FLOATS
from ._cases import entry
from ember.ops.resampling import upsample_backward_op

_BOTH = ("upsample", "upsample_backward")
_LOOSE = {"float32": (1e-5, 1e-6)}


def _interp(**fixed):
    return lambda x, **kw: F.interpolate(x, **fixed, **kw)


OPS = [
    entry("interpolate nearest", _interp(mode="nearest"),
          ("1-D size 9", [((2, 3, 5), "x")], dict(size=9)),
          ("2-D scale 1.7, transposed", [((1, 2, 5, 4), "l")], dict(scale_factor=1.7)),
          ("3-D down (0.6, 2, 1)", [((1, 2, 5, 3, 4), "x")], dict(scale_factor=(0.6, 2.0, 1.0))),
          covers=_BOTH, dtypes=FLOATS + ("uint8",), tolerances=_LOOSE),
    entry("interpolate nearest-exact", _interp(mode="nearest-exact"),
          ("2-D size (7, 3)", [((2, 2, 5, 4), "x")], dict(size=(7, 3))),
          covers=_BOTH, tolerances=_LOOSE),
    entry("interpolate linear", _interp(mode="linear"),
          ("align_corners", [((2, 3, 5), "x")], dict(size=8, align_corners=True)),
          ("scale 0.7", [((1, 2, 9), "l")], dict(scale_factor=0.7)),
          covers=_BOTH, tolerances=_LOOSE),
    entry("interpolate bilinear", _interp(mode="bilinear"),
          ("size (7, 3)", [((2, 2, 5, 4), "x")], dict(size=(7, 3))),
          ("align_corners scale 2", [((1, 2, 3, 4), "l")],
           dict(scale_factor=2, align_corners=True)),
          ("antialias down", [((1, 2, 9, 8), "x")], dict(size=(4, 3), antialias=True)),
          covers=_BOTH, tolerances=_LOOSE),
    entry("interpolate bicubic", _interp(mode="bicubic"),
          ("size (7, 6)", [((1, 2, 5, 4), "x")], dict(size=(7, 6))),
          ("align_corners", [((1, 1, 4, 4), "l")], dict(size=(6, 5), align_corners=True)),
          ("antialias down", [((1, 2, 9, 8), "x")], dict(size=(4, 3), antialias=True)),
          covers=_BOTH, tolerances=_LOOSE),
    entry("interpolate trilinear", _interp(mode="trilinear"),
          ("scale (1.5, 0.5, 2)", [((1, 2, 4, 6, 3), "x")], dict(scale_factor=(1.5, 0.5, 2.0))),
          covers=_BOTH, tolerances=_LOOSE),
    entry("interpolate area", _interp(mode="area"),
          ("2-D down (3, 2)", [((2, 2, 7, 5), "x")], dict(size=(3, 2))),
          ("3-D", [((1, 2, 5, 4, 6), "l")], dict(size=(2, 3, 4))),
          covers=_BOTH, tolerances=_LOOSE),
]
# the backward op called directly: its values (and meta shapes) beside the gradient checks above
OPS += [
    entry("upsample_backward", lambda g, **kw: upsample_backward_op(
        g, kw["input_size"], kw["output_size"], kw["mode"], kw["align_corners"], kw["scales"]),
          ("linear [2,3,8] -> 5", [((2, 3, 8), "x")],
           dict(input_size=[5], output_size=[8], mode="linear", align_corners=False,
                scales=[0.0])),
          ("bilinear align_corners [1,2,7,3] -> [4,5]", [((1, 2, 7, 3), "l")],
           dict(input_size=[4, 5], output_size=[7, 3], mode="linear", align_corners=True,
                scales=[0.0, 0.0])),
          covers=("upsample_backward",), tolerances=_LOOSE),
]
