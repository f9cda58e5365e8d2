"""The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019), by
``probs`` or ``logits``: density proportional to ``p^x (1 - p)^(1 - x)``.

Its normalizing constant, mean and variance are 0/0 at ``probs = 0.5``; inside ``lims``
(0.499, 0.501) they are read from their Taylor expansions around 0.5, as torch's are, and the
exact branch sees ``probs`` cut to ``lims[0]`` there so its NaNs never reach a gradient.
``log_prob`` is torch's ``-binary_cross_entropy_with_logits`` plus the log normalizer, so its
gradient at a logit of 0 is torch's.
"""
from __future__ import annotations

import ember

import math

from .. import Size
from . import constraints
from .exp_family import ExponentialFamily
from .utils import (_bce_with_logits, _set_probs_or_logits, broadcast_all, clamp_probs,
                    lazy_property, logits_to_probs, probs_to_logits)

__all__ = ["ContinuousBernoulli"]


def _em():
    return ember


class ContinuousBernoulli(ExponentialFamily):
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        param = _set_probs_or_logits(self, probs, logits)
        if probs is not None:
            # validated before the clamp below, which would make any value pass
            if validate_args is not None and \
                    not self.arg_constraints["probs"].check(param).all():
                raise ValueError("The parameter probs has invalid values")
            self.probs = self._param = clamp_probs(param)
        self._lims = lims
        super().__init__(param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(ContinuousBernoulli, batch_shape, _instance,
                                   ("probs", "logits"), copied=("_lims",))

    def _new(self, *args, **kwargs):
        return self._param.new(*args, **kwargs)

    def _outside_unstable_region(self):
        return self.probs.le(self._lims[0]).logical_or(self.probs.gt(self._lims[1]))

    def _cut_probs(self):
        return _em().where(self._outside_unstable_region(), self.probs, self._lims[0])

    def _cont_bern_log_norm(self):
        """The log normalizing constant as a function of ``probs``."""
        em = _em()
        cut = self._cut_probs()
        below_half = em.where(cut.le(0.5), cut, 0.0)
        above_half = em.where(cut.ge(0.5), cut, 1.0)
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - em.where(
            cut.le(0.5), (-2.0 * below_half).log1p(), (2.0 * above_half - 1.0).log())
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return em.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return _em().where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut = self._cut_probs()
        variances = cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2) + \
            1.0 / ((-cut).log1p() - cut.log()).pow(2)
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return _em().where(self._outside_unstable_region(), variances, taylor)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.size()

    def sample(self, sample_shape=Size()):
        em = _em()
        u = em.rand(tuple(self._extended_shape(sample_shape)), dtype=self.probs.dtype,
                    device=self.probs.device)
        with em.no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=Size()):
        em = _em()
        u = em.rand(tuple(self._extended_shape(sample_shape)), dtype=self.probs.dtype,
                    device=self.probs.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value) + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        em = _em()
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = em.where(self._outside_unstable_region(), cdfs, value)
        return em.where(value.le(0.0), 0.0, em.where(value.ge(1.0), 1.0, unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        exact = ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p()) / \
            (cut.log() - (-cut).log1p())
        return _em().where(self._outside_unstable_region(), exact, value)

    def entropy(self):
        log_probs0 = (-self.probs).log1p()
        log_probs1 = self.probs.log()
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        """The log normalizing constant as a function of the natural parameter."""
        em = _em()
        outside = x.le(self._lims[0] - 0.5).logical_or(x.gt(self._lims[1] - 0.5))
        cut = em.where(outside, x, self._lims[0] - 0.5)
        log_norm = em.special.expm1(cut).abs().log() - cut.abs().log()
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return em.where(outside, log_norm, taylor)
