"""The Cauchy (Lorentz) distribution."""
from __future__ import annotations

import math
import ember

from .. import Size
from ._location_scale import LocationScale
from .distribution import Distribution

__all__ = ["Cauchy"]


class Cauchy(LocationScale, Distribution):
    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return ember.full(tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype,
                          device=self.loc.device)

    @property
    def variance(self):
        return ember.full(tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype,
                          device=self.loc.device)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = ember.rand(tuple(shape), dtype=self.loc.dtype, device=self.loc.device)
        eps = ((u - 0.5) * math.pi).tan()  # the standard Cauchy by inversion
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - \
            (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
