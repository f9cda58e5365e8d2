"""The half-Cauchy distribution: |X| for X ~ Cauchy(0, scale)."""
from __future__ import annotations

import math

import ember

from ._folded import Folded
from .cauchy import Cauchy
from .utils import _forwarded

__all__ = ["HalfCauchy"]


class HalfCauchy(Folded):
    def __init__(self, scale, validate_args=None):
        super().__init__(Cauchy(0, scale, validate_args=False), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return ember.full(tuple(self._extended_shape()), math.inf, dtype=self.scale.dtype,
                          device=self.scale.device)

    variance = _forwarded("base_dist.variance")
