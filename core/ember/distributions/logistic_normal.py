"""The logistic-normal distribution: a Normal pushed onto the simplex by
``StickBreakingTransform``."""
from __future__ import annotations

from . import constraints
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import StickBreakingTransform
from .utils import _forwarded

__all__ = ["LogisticNormal"]


class LogisticNormal(TransformedDistribution):
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(LogisticNormal, batch_shape, _instance)

    loc = _forwarded("base_dist.base_dist.loc")

    scale = _forwarded("base_dist.base_dist.scale")
