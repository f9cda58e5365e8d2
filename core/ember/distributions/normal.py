"""The normal distribution N(loc, scale^2)."""
from __future__ import annotations

import math
from numbers import Number
import ember

from .. import Size, Tensor
from ._location_scale import LocationScale
from .exp_family import ExponentialFamily
from .utils import _standard_normal

__all__ = ["Normal"]


def _plain_values(*args):
    """True when no argument is differentiated or transformed (autograd, ember.func's vmap or
    jvp), so a result may be computed in place on a fresh temporary."""
    if ember.is_grad_enabled() and any(getattr(a, "requires_grad", False) for a in args):
        return False
    return all(type(a) is Tensor and not getattr(a, "_fw", None) for a in args)


_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


class Normal(LocationScale, ExponentialFamily):
    _mean_carrier_measure = 0

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Normal, batch_shape, _instance, ("loc", "scale"))

    def sample(self, sample_shape=Size()):
        return self._sample_with(ember.normal, sample_shape, self.loc, self.scale)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_scale = math.log(self.scale) if isinstance(self.scale, Number) else self.scale.log()
        z = value - self.loc if _plain_values(value, self.loc, self.scale) else None
        # (loc and scale share one shape, so z already has the result's shape)
        if z is not None and z.dtype == self.scale.dtype:
            # the same value, in place on one fresh temporary: each fresh 4 MB result costs more
            # in page faults than its arithmetic
            z.div_(self.scale)
            z.mul_(z)
            z.mul_(-0.5)
            z.sub_(log_scale)
            return z.sub_(_LOG_SQRT_2PI)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - log_scale - _LOG_SQRT_2PI

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)).erf())

    def icdf(self, value):
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()

    @property
    def _natural_params(self):
        return self.loc / self.scale.pow(2), -0.5 * self.scale.pow(2).reciprocal()

    def _log_normalizer(self, x, y):
        return -0.25 * x.pow(2) / y + 0.5 * (-math.pi / y).log()
