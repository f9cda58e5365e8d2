"""Entries for ``ember.ops.spatial``: im2col/col2im (F.unfold/F.fold) and the pixel shuffles,
with padding, dilation, stride, unbatched inputs and transposed layouts."""
from __future__ import annotations

from ember.ops import spatial as S

from . import ALL_REAL, FLOATS
from ._cases import entry

OPS = [
    entry("unfold", lambda x, **kw: S.unfold(x, **kw),
          ("k3", [((2, 3, 5, 6), "x")], dict(kernel_size=3)),
          ("k(2,3) d(2,1) p(1,2) s(2,3), transposed", [((1, 2, 7, 6), "l")],
           dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 3))),
          ("unbatched", [((2, 4, 4), "x")], dict(kernel_size=2, stride=2)),
          covers=("im2col",), dtypes=ALL_REAL),
    entry("fold", lambda x, **kw: S.fold(x, **kw),
          ("k3 overlapping", [((2, 27, 12), "x")], dict(output_size=(5, 6), kernel_size=3)),
          ("k(2,3) d(2,1) p(1,2) s(2,3)", [((1, 12, 12), "l")],
           dict(output_size=(7, 6), kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2),
                stride=(2, 3))),
          ("unbatched", [((8, 4), "x")], dict(output_size=4, kernel_size=2, stride=2)),
          covers=("col2im",), dtypes=FLOATS + ("int64",)),
    entry("pixel_shuffle", lambda x, r: S.pixel_shuffle(x, r),
          ("r2", [((2, 8, 3, 4), "x"), ("const", 2)], {}),
          ("r3 extra batch dims, transposed", [((2, 1, 9, 2, 3), "l"), ("const", 3)], {}),
          covers=("pixel_shuffle",), dtypes=ALL_REAL),
    entry("pixel_unshuffle", lambda x, r: S.pixel_unshuffle(x, r),
          ("r2", [((2, 2, 6, 4), "x"), ("const", 2)], {}),
          ("r3 unbatched, transposed", [((1, 6, 9), "l"), ("const", 3)], {}),
          covers=("pixel_unshuffle",), dtypes=ALL_REAL),
    entry("channel_shuffle", lambda x: S.channel_shuffle(x, 3),
          ("6 channels 3 groups", [((2, 6, 2, 2), "x")], {}), dtypes=ALL_REAL),
]
