"""The relaxed (Concrete / Gumbel-softmax) Bernoulli distribution on (0, 1), and its logit."""
from __future__ import annotations

import ember

from .. import Size
from . import constraints
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import SigmoidTransform
from .utils import (_BinaryProbsLogits, _forwarded, _set_probs_or_logits, broadcast_all,
                    clamp_probs)

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]


class _OfRelaxedBase:
    """``temperature``, ``logits`` and ``probs`` of a relaxed distribution, its base's (shared
    by RelaxedBernoulli and RelaxedOneHotCategorical)."""

    temperature = _forwarded("base_dist.temperature")

    logits = _forwarded("base_dist.logits")

    probs = _forwarded("base_dist.probs")


class LogitRelaxedBernoulli(_BinaryProbsLogits, Distribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        param = _set_probs_or_logits(self, probs, logits)
        super().__init__(param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(LogitRelaxedBernoulli, batch_shape, _instance,
                                   ("probs", "logits"), copied=("temperature",))

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(self.probs.expand(*shape))
        u = clamp_probs(ember.rand(shape, dtype=probs.dtype, device=probs.device))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(_OfRelaxedBase, TransformedDistribution):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(RelaxedBernoulli, batch_shape, _instance)
