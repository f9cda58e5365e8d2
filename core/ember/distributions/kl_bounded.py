"""KL divergences of pairs with ``ContinuousBernoulli``, ``HalfNormal`` or ``Pareto`` (torch's
closed forms, from its ``kl.py``): registered with ``register_kl`` when ``kl`` is imported.
Pairs whose supports do not nest are infinite."""
from __future__ import annotations

import math

from .beta import Beta
from .continuous_bernoulli import ContinuousBernoulli
from .exponential import Exponential
from .gamma import Gamma
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .kl import (_infinite_like, _kl_normal_normal, _where_inf, _x_log_x, register_kl)
from .laplace import Laplace
from .normal import Normal
from .pareto import Pareto
from .uniform import Uniform


# -- same family -------------------------------------------------------------------------------
@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * (p.scale / q.scale).log() - alpha_ratio.log() + alpha_ratio - 1
    return _where_inf(p.support.lower_bound < q.support.lower_bound, result)


# -- with a continuous Bernoulli ----------------------------------------------------------------
def _cross_entropy_continuous_bernoulli(p, q):
    """-E_p[log q] - H(p) for q continuous Bernoulli, from p's entropy and mean."""
    return -p.entropy() - p.mean * q.logits - (-q.probs).log1p() - q._cont_bern_log_norm()


@register_kl(Beta, ContinuousBernoulli)
def _kl_beta_continuous_bernoulli(p, q):
    return _cross_entropy_continuous_bernoulli(p, q)


@register_kl(Uniform, ContinuousBernoulli)
def _kl_uniform_continuous_bernoulli(p, q):
    outside = p.high.ge(q.support.upper_bound).logical_or(p.low.le(q.support.lower_bound))
    return _where_inf(outside, _cross_entropy_continuous_bernoulli(p, q))


@register_kl(ContinuousBernoulli, Exponential)
def _kl_continuous_bernoulli_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * p.mean


@register_kl(ContinuousBernoulli, Normal)
def _kl_continuous_bernoulli_normal(p, q):
    t1 = -p.entropy()
    t2 = 0.5 * (math.log(2.0 * math.pi) + (q.loc / q.scale).square()) + q.scale.log()
    t3 = (p.variance + p.mean.square() - 2.0 * q.loc * p.mean) / (2.0 * q.scale.square())
    return t1 + t2 + t3


@register_kl(ContinuousBernoulli, Uniform)
def _kl_continuous_bernoulli_uniform(p, q):
    result = -p.entropy() + (q.high - q.low).log()
    outside = q.low.ge(p.support.lower_bound).logical_or(q.high.le(p.support.upper_bound))
    return _where_inf(outside, result)


# -- Pareto against the others ------------------------------------------------------------------
@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    scale_rate = p.scale * q.rate
    result = (p.alpha / scale_rate).log() - p.alpha.reciprocal() + \
        p.alpha * scale_rate / (p.alpha - 1) - 1
    return _where_inf(p.alpha <= 1, result)


@register_kl(Pareto, Gamma)
def _kl_pareto_gamma(p, q):
    common = p.scale.log() + p.alpha.reciprocal()
    t1 = p.alpha.log() - common
    t2 = q.concentration.lgamma() - q.concentration * q.rate.log()
    t3 = (1 - q.concentration) * common
    t4 = q.rate * p.alpha * p.scale / (p.alpha - 1)
    return _where_inf(p.alpha <= 1, t1 + t2 + t3 + t4 - 1)


@register_kl(Pareto, Normal)
def _kl_pareto_normal(p, q):
    var_normal = 2 * q.scale.pow(2)
    common = p.scale / (p.alpha - 1)
    t1 = (math.sqrt(2 * math.pi) * q.scale * p.alpha / p.scale).log()
    t2 = p.alpha.reciprocal()
    t3 = p.alpha * common.pow(2) / (p.alpha - 2)
    t4 = (p.alpha * common - q.loc).pow(2)
    return _where_inf(p.alpha <= 2, t1 - t2 + (t3 + t4) / var_normal - 1)


@register_kl(Uniform, Pareto)
def _kl_uniform_pareto(p, q):
    width = p.high - p.low
    t1 = (q.alpha * q.scale.pow(q.alpha) * width).log()
    t2 = (_x_log_x(p.high) - _x_log_x(p.low) - width) / width
    return _where_inf(p.low < q.support.lower_bound, t2 * (q.alpha + 1) - t1)


# -- supports that do not nest: infinite ---------------------------------------------------------
def _infinite(param):
    def kl(p, q):
        return _infinite_like(getattr(p, param))
    kl.__name__ = f"_kl_infinity_{param}"
    return kl


for _p, _q, _param in [
        (Beta, Pareto, "concentration1"), (ContinuousBernoulli, Pareto, "probs"),
        (Exponential, ContinuousBernoulli, "rate"), (Exponential, Pareto, "rate"),
        (Gamma, ContinuousBernoulli, "concentration"), (Gamma, Pareto, "concentration"),
        (Gumbel, ContinuousBernoulli, "loc"), (Gumbel, Pareto, "loc"),
        (Laplace, ContinuousBernoulli, "loc"), (Laplace, Pareto, "loc"),
        (Normal, ContinuousBernoulli, "loc"), (Normal, Pareto, "loc"),
        (Pareto, Beta, "scale"), (Pareto, ContinuousBernoulli, "scale"),
        (Pareto, Uniform, "scale")]:
    register_kl(_p, _q)(_infinite(_param))
