"""The Wishart distribution over positive-definite matrices (degrees of freedom ``df``, scale
given by covariance, precision or its Cholesky factor). Samples by the Bartlett decomposition
(chi-distributed diagonal, standard normal strictly-lower part), reparameterized through
``Chi2.rsample``; singular samples are drawn again up to ``max_try_correction`` times."""
from __future__ import annotations

import math
import warnings
from numbers import Number
import ember

from .. import Size
from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import _precision_to_scale_tril
from .utils import finfo, lazy_property
from .._warn import user_stacklevel

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _mvdigamma(x, p):
    """The multivariate digamma function: sum_i digamma(x - i / 2), i < p."""
    if not bool(x.gt((p - 1) / 2).all()):
        raise ValueError(f"Wishart: the multivariate digamma function needs arguments above "
                         f"{(p - 1) / 2}")
    steps = ember.arange(p, dtype=x.dtype, device=x.device).div(2)
    return ember.digamma(x.unsqueeze(-1) - steps.expand(*x.shape, p)).sum(-1)


class Wishart(ExponentialFamily):
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None]
        if len(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        param = given[0]
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(param.shape[:-2])
            self.df = ember.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = Size(ember.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(*batch_shape)
        event_shape = Size(param.shape[-2:])
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        full = tuple(batch_shape) + (-1, -1)
        if scale_tril is not None:
            self.scale_tril = param.expand(*full)
        elif covariance_matrix is not None:
            self.covariance_matrix = param.expand(*full)
        else:
            self.precision_matrix = param.expand(*full)
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur "
                          "for ndim - 1 < df < ndim.", stacklevel=user_stacklevel())
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = ember.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._bartlett_chi2()

    def _bartlett_chi2(self):
        """Chi2(df - i) for the i-th diagonal entry of the Bartlett factor."""
        L = self._unbroadcasted_scale_tril
        p = self._event_shape[-1]
        steps = ember.arange(p, dtype=L.dtype, device=L.device)
        return Chi2(df=self.df.unsqueeze(-1) - steps.expand(*self._batch_shape, p))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(*cov_shape)
        new.df = self.df.expand(*batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(*cov_shape))
        super(Wishart, new).__init__(batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._bartlett_chi2()
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, *self._event_shape)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(*self._batch_shape, *self._event_shape)

    @lazy_property
    def precision_matrix(self):
        L = self._unbroadcasted_scale_tril
        identity = ember.eye(self._event_shape[-1], device=L.device, dtype=L.dtype)
        return ember.cholesky_solve(identity, L).expand(*self._batch_shape, *self._event_shape)

    def _df_matrix(self, df):
        return df.view(*self._batch_shape, 1, 1)

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = ember.where(factor > 0, factor, math.nan)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (V.pow(2) + diag.unsqueeze(-1) * diag.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=Size()):
        """L A A^T L^T with A lower triangular: sqrt(chi2(df - i)) on the diagonal and
        standard normals below it."""
        p = self._event_shape[-1]
        chi = self._dist_chi2.rsample(sample_shape).sqrt()
        chi = chi.clamp(min=finfo(chi.dtype).eps)
        below = ember.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p, p),
                            dtype=chi.dtype, device=chi.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (ember.diag_embed(chi) + below)
        return chol @ chol.mT

    def _singular(self, sample):
        """Per sample index: whether any matrix of its batch is not positive definite."""
        bad = ~self.support.check(sample)
        return bad.amax(self._batch_dims) if self._batch_shape else bad

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        """Bartlett samples. Singular ones (possible for df close to the dimension) are drawn
        again, up to ``max_try_correction`` (10) times, with a warning; any still singular are
        returned as they are (their ``log_prob`` is -inf)."""
        if max_try_correction is None:
            max_try_correction = 10
        sample_shape = Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        singular = self._singular(sample)
        if bool(singular.any()):
            warnings.warn("Singular sample detected.", stacklevel=user_stacklevel())
            event_dims = (1,) * (len(self._batch_shape) + 2)
            for _ in range(max_try_correction):
                again = self._bartlett_sampling(sample_shape)
                sample = ember.where(singular.view(*singular.shape, *event_dims), again, sample)
                singular = self._singular(sample)
                if not bool(singular.any()):
                    break
        return sample

    def _log_det_scale(self):
        L = self._unbroadcasted_scale_tril
        return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        trace = ember.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(
            dim1=-2, dim2=-1).sum(dim=-1)
        return (-nu * (p * _LOG_2 / 2 + self._log_det_scale()) - ember.mvlgamma(nu / 2, p=p) +
                (nu - p - 1) / 2 * ember.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        return ((p + 1) * (p * _LOG_2 / 2 + self._log_det_scale()) +
                ember.mvlgamma(nu / 2, p=p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p=p) +
                nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return (y + (p + 1) / 2) * (-ember.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p) + \
            ember.mvlgamma(y + (p + 1) / 2, p=p)
