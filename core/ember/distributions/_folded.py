"""``|X|`` of a distribution symmetric about 0 with a ``scale``: what HalfNormal and HalfCauchy
share (the density doubled on [0, inf), -inf below it; the cdf, icdf and entropy from the
base's)."""
from __future__ import annotations

import math

import ember

from . import constraints
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform
from .utils import _forwarded


class Folded(TransformedDistribution):
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    _folds = None  # the family folded: a location-scale class, built at loc 0

    def __init__(self, scale, validate_args=None):
        base = self._folds(0, scale, validate_args=False)
        super().__init__(base, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        # checked against the public class (the one naming _folds), as its own expand would be
        family = next(c for c in type(self).__mro__ if "_folds" in c.__dict__)
        return self._expand_params(family, batch_shape, _instance)

    scale = _forwarded("base_dist.scale")

    @property
    def mode(self):
        return ember.zeros_like(self.scale)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = ember.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return ember.where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
