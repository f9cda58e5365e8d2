"""The categorical distribution over {0, ..., K-1}, by ``probs`` or ``logits`` (last dim)."""
from __future__ import annotations

import math
import ember

from .. import Size
from . import constraints
from .distribution import Distribution
from .utils import _forwarded, finfo, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical"]


class _OfCategorical:
    """``probs``, ``logits`` and ``param_shape`` of a family built on the Categorical
    ``_categorical`` (OneHotCategorical, Multinomial, ExpRelaxedCategorical)."""

    probs = _forwarded("_categorical.probs")

    logits = _forwarded("_categorical.logits")

    param_shape = _forwarded("_categorical.param_shape")

    def _init_over(self, categorical, validate_args):
        """The distribution over ``categorical`` (kept as ``_categorical``): its batch shape,
        and an event of one of its outcomes' size."""
        self._categorical = categorical
        super().__init__(categorical.batch_shape, categorical.param_shape[-1:],
                         validate_args=validate_args)

    def _expand_over(self, cls, batch_shape, _instance, **kept):
        """``expand`` for a ``cls`` whose state is ``_categorical`` and the attributes ``kept``."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        for name, value in kept.items():
            setattr(new, name, value)
        new._categorical = self._categorical.expand(batch_shape)
        return self._init_expanded(new, batch_shape)


class Categorical(Distribution):
    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else Size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = Size(batch_shape)
        param_shape = tuple(batch_shape) + (self._num_events,)
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(*param_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(*param_shape)
            new._param = new.logits
        new._num_events = self._num_events
        return self._init_expanded(new, batch_shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return ember.full(tuple(self._extended_shape()), math.nan, dtype=self.probs.dtype,
                          device=self.probs.device)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.mean

    def sample(self, sample_shape=Size()):
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events)
        with ember.no_grad():
            samples_2d = ember.multinomial(probs_2d, sample_shape.numel(), True).T
        return samples_2d.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = ember.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        logits = self.logits.clamp(min=finfo(self.logits.dtype).min)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = ember.arange(self._num_events, dtype=ember.int64, device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand(-1, *self._batch_shape)
        return values
