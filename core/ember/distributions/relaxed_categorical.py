"""The relaxed one-hot categorical (Concrete / Gumbel-softmax) distribution on the simplex,
and its log (ExpRelaxedCategorical)."""
from __future__ import annotations

import ember

from .. import Size
from . import constraints
from .categorical import Categorical, _OfCategorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .relaxed_bernoulli import _OfRelaxedBase
from .transforms import ExpTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["ExpRelaxedCategorical", "RelaxedOneHotCategorical"]


class ExpRelaxedCategorical(_OfCategorical, Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector  # the true support is a submanifold of it
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        self._init_over(Categorical(probs, logits), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_over(ExpRelaxedCategorical, batch_shape, _instance,
                                 temperature=self.temperature)

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        u = clamp_probs(ember.rand(shape, dtype=self.logits.dtype, device=self.logits.device))
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        K = self._categorical._num_events
        logits, value = broadcast_all(self.logits, value)
        t = self.temperature if isinstance(self.temperature, ember.Tensor) else \
            ember.tensor(float(self.temperature), dtype=logits.dtype, device=logits.device)
        log_scale = ember.full_like(t, float(K)).lgamma() - t.log() * (-(K - 1))
        score = logits - value * t
        score = (score - score.logsumexp(-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_OfRelaxedBase, TransformedDistribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(RelaxedOneHotCategorical, batch_shape, _instance)
