"""``ember.nn.functional``: the functional forms of the layers, one namespace as in torch.

Each subject lives in its own module: ``_linear`` (linear, bilinear), ``_activation``,
``_dropout``, ``_normalization``, ``_embedding`` (embedding, embedding_bag, one_hot),
``_padding``, ``_conv`` and ``_pool`` (convolution and pooling), ``_fractional_pool``,
``_loss`` and ``_margin_loss``, ``_distance``, ``_attention``, ``_sampling`` (interpolate) and
``_grid`` (grid_sample, affine_grid); fold/unfold and the pixel shuffles are ops
(``ember.ops.spatial``). Activations, dropout, embedding, padding and most losses compose
existing ops, so autograd records them through those ops and every backend runs them unchanged.
Convolution, pooling and batch/layer/group norm are ops of their own (``ember.ops.nn``: one op
forward and one backward, native kernels per backend); the functions check arguments with
PyTorch's messages and call them.
"""
from __future__ import annotations

from . import (_activation, _attention, _conv, _distance, _dropout, _embedding,
               _fractional_pool, _grid, _linear, _loss, _margin_loss, _normalization, _padding,
               _pool, _sampling)
from ._activation import *  # noqa: F401,F403
from ._attention import *  # noqa: F401,F403
from ._attention import _canonical_mask, _none_or_dtype  # noqa: F401 - torch's helpers
from ._conv import *  # noqa: F401,F403
from ._distance import *  # noqa: F401,F403
from ._dropout import *  # noqa: F401,F403
from ._embedding import *  # noqa: F401,F403
from ._fractional_pool import *  # noqa: F401,F403
from ._grid import *  # noqa: F401,F403
from ._linear import *  # noqa: F401,F403
from ._loss import *  # noqa: F401,F403
from ._margin_loss import *  # noqa: F401,F403
from ._normalization import *  # noqa: F401,F403
from ._padding import *  # noqa: F401,F403
from ._pool import *  # noqa: F401,F403
from ._sampling import *  # noqa: F401,F403
from ..ops.spatial import (channel_shuffle, fold, native_channel_shuffle, pixel_shuffle,
                           pixel_unshuffle, unfold)

__all__ = [name for module in (_activation, _attention, _conv, _distance, _dropout, _embedding,
                               _fractional_pool, _grid, _linear, _loss, _margin_loss,
                               _normalization, _padding, _pool, _sampling)
           for name in module.__all__] + ["fold", "unfold", "pixel_shuffle", "pixel_unshuffle",
                                          "channel_shuffle", "native_channel_shuffle"]
