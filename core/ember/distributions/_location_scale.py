"""``loc + scale * X`` for a standard X symmetric and unimodal about 0: the parameters, their
constraints, the support and the centre that Normal, Laplace and Cauchy share."""
from __future__ import annotations

from . import constraints
from .utils import broadcast_all


class LocationScale:
    """Mixed in before the distribution base class."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc
