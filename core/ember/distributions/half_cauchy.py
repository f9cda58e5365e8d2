"""The half-Cauchy distribution: |X| for X ~ Cauchy(0, scale)."""
from __future__ import annotations

import math

import ember

from ._folded import Folded
from .cauchy import Cauchy
from .utils import _forwarded

__all__ = ["HalfCauchy"]


class HalfCauchy(Folded):
    _folds = Cauchy

    @property
    def mean(self):
        return ember.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype,
                          device=self.scale.device)

    variance = _forwarded("base_dist.variance")
