"""The categorical distribution with one-hot vectors as samples."""
from __future__ import annotations

import ember

from .. import Size
from . import constraints
from .categorical import Categorical, _OfCategorical
from .distribution import Distribution
from .utils import _forwarded

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]


def _one_hot(indices, n, like):
    return ember.nn.functional.one_hot(indices, n).to(like.dtype)


class OneHotCategorical(_OfCategorical, Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._init_over(Categorical(probs, logits), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_over(OneHotCategorical, batch_shape, _instance)

    _param = _forwarded("_categorical._param")

    mean = _forwarded("_categorical.probs")

    @property
    def mode(self):
        probs = self._categorical.probs
        return _one_hot(probs.argmax(-1), probs.shape[-1], probs)

    @property
    def variance(self):
        p = self._categorical.probs
        return p * (1 - p)

    def sample(self, sample_shape=Size()):
        indices = self._categorical.sample(Size(sample_shape))
        return _one_hot(indices, self._categorical._num_events, self._categorical.probs)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = ember.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand(n, *self.batch_shape, n)
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """Samples with the straight-through gradient estimator (Bengio et al. 2013)."""

    has_rsample = True

    def rsample(self, sample_shape=Size()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
