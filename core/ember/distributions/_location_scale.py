"""Families symmetric and unimodal about ``loc`` (mean and mode ``loc``), and among them the
location-scale ones, ``loc + scale * X`` for a standard X: the parameters, their constraints and
the support that Normal, Laplace and Cauchy share."""
from __future__ import annotations

from . import constraints
from .utils import broadcast_all


class Centred:
    """Mixed in before the distribution base class: mean and mode are ``loc`` (the circular mean
    for VonMises; Cauchy, which has no mean, overrides it)."""

    @property
    def mean(self):
        return self.loc

    mode = mean


class LocationScale(Centred):
    """Mixed in before the distribution base class."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)
