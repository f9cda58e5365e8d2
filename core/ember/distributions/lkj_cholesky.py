"""The LKJ distribution over Cholesky factors of correlation matrices (dimension ``dim``,
``concentration`` eta: density of ``L L^T`` proportional to ``det^(eta - 1)``). Samples by the
onion method (Lewandowski, Kurowicka & Joe 2009, section 3.2) as PyTorch after NumPyro, with
the rows' Beta parameters of the paper (see ``__init__``)."""
from __future__ import annotations

import math
import ember

from .. import Size
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all, finfo

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # The onion method: row i of L has i off-diagonal entries sqrt(y_i) u_i, u_i uniform on
        # the sphere and y_i ~ Beta(i / 2, eta + (dim - 2) / 2 - (i - 1) / 2) (row 0 is e_0; its
        # Beta is unused). PyTorch 2.13 draws y_i ~ Beta(i - 1/2, ...), which agrees for i = 1
        # only: for dim >= 3 its samples miss the LKJ marginals (measured in the tests).
        marginal = self.concentration + 0.5 * (self.dim - 2)
        offset = ember.arange(self.dim - 1, dtype=self.concentration.dtype,
                              device=self.concentration.device)
        offset = ember.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(0.5 * offset + 0.5, marginal.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.size(), Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(*batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        return self._init_expanded(new, batch_shape)

    def sample(self, sample_shape=Size()):
        with ember.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = ember.randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype,
                            device=y.device).tril(-1)
            # directions uniform on the sphere for rows 1.., row 0 has none (it is e_0)
            norm = u.norm(dim=-1, keepdim=True)
            first_row = ember.arange(self.dim, device=y.device).view(-1, 1) == 0
            u_sphere = ember.where(first_row, 0.0, u / ember.where(first_row, 1.0, norm))
            w = y.sqrt() * u_sphere
            diag = (1 - (w ** 2).sum(dim=-1)).clamp(min=finfo(w.dtype).tiny).sqrt()
            return w + ember.diag_embed(diag)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ember.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize = 0.5 * dm1 * math.log(math.pi) + ember.mvlgamma(alpha - 0.5, dm1) - \
            ember.lgamma(alpha) * dm1
        return unnormalized - normalize
