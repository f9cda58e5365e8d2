"""The negative binomial distribution: the number of successes (probability ``probs``) before
``total_count`` failures; sampled as a gamma-Poisson mixture."""
from __future__ import annotations

import ember

from .. import Size
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import _BinaryProbsLogits, _set_count_and_param, lazy_property

__all__ = ["NegativeBinomial"]


def _logsigmoid(x):
    return ember.nn.functional.logsigmoid(x)


class NegativeBinomial(_BinaryProbsLogits, Distribution):
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        _set_count_and_param(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(NegativeBinomial, batch_shape, _instance,
                                   ("total_count", "probs", "logits"))

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(),
                     validate_args=False)

    def sample(self, sample_shape=Size()):
        with ember.no_grad():
            return ember.poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized = self.total_count * _logsigmoid(-self.logits) + \
            value * _logsigmoid(self.logits)
        log_normalization = -ember.lgamma(self.total_count + value) + \
            ember.lgamma(1.0 + value) + ember.lgamma(self.total_count)
        # 0 successes before 0 failures is certain: lgamma(0) terms would give nan
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
