"""ember.distributions against torch.distributions (when installed) and scipy.stats: values,
log-probabilities, moments, entropies, KL divergences, sample moments with fixed seeds,
reparameterized gradients, transforms and argument validation."""
import itertools
import math

import numpy as np
import pytest
import scipy.stats as st

import ember
from ember import distributions as E

RNG = np.random.default_rng(0)


def _pos(*s):
    return RNG.uniform(0.5, 3.0, s)


def _real(*s):
    return RNG.standard_normal(s)


def _unit(*s):
    return RNG.uniform(0.1, 0.9, s)


def _simplex(*s):
    x = RNG.uniform(0.1, 1, s)
    return x / x.sum(-1, keepdims=True)


def _spd(n, b=()):
    x = RNG.standard_normal(b + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


# name -> (constructor kwargs, values in the support of shape sample + batch (+ event))
CASES = {
    "Normal": (dict(loc=_real(3), scale=_pos(3)), lambda s: _real(*s)),
    "LogNormal": (dict(loc=_real(3), scale=_pos(3)), lambda s: _pos(*s)),
    "Uniform": (dict(low=np.zeros(3), high=_pos(3) + 1), lambda s: _unit(*s)),
    "Exponential": (dict(rate=_pos(3)), lambda s: _pos(*s)),
    "Laplace": (dict(loc=_real(3), scale=_pos(3)), lambda s: _real(*s)),
    "Cauchy": (dict(loc=_real(3), scale=_pos(3)), lambda s: _real(*s)),
    "Gumbel": (dict(loc=_real(3), scale=_pos(3)), lambda s: _real(*s)),
    "Gamma": (dict(concentration=_pos(3), rate=_pos(3)), lambda s: _pos(*s)),
    "Chi2": (dict(df=_pos(3)), lambda s: _pos(*s)),
    "Beta": (dict(concentration1=_pos(3), concentration0=_pos(3)), lambda s: _unit(*s)),
    "StudentT": (dict(df=_pos(3) + 2, loc=_real(3), scale=_pos(3)), lambda s: _real(*s)),
    "Dirichlet": (dict(concentration=_pos(2, 4)), lambda s: _simplex(*(s + (4,)))),
    "Bernoulli": (dict(probs=_unit(3)), lambda s: RNG.integers(0, 2, s).astype(float)),
    "Binomial": (dict(total_count=np.full(3, 10.0), probs=_unit(3)),
                 lambda s: RNG.integers(0, 11, s).astype(float)),
    "Categorical": (dict(logits=_real(2, 5)), lambda s: RNG.integers(0, 5, s)),
    "OneHotCategorical": (dict(probs=_simplex(2, 5)), lambda s: np.eye(5)[RNG.integers(0, 5, s)]),
    "Multinomial": (dict(total_count=6, probs=_simplex(2, 4)),
                    lambda s: RNG.multinomial(6, [0.25] * 4, s).astype(float)),
    "Poisson": (dict(rate=_pos(3)), lambda s: RNG.integers(0, 6, s).astype(float)),
    "Geometric": (dict(probs=_unit(3)), lambda s: RNG.integers(0, 6, s).astype(float)),
    "MultivariateNormal": (dict(loc=_real(2, 3), covariance_matrix=_spd(3, (2,))),
                           lambda s: _real(*(s + (3,)))),
    "LowRankMultivariateNormal": (dict(loc=_real(2, 3), cov_factor=_real(2, 3, 2),
                                       cov_diag=_pos(2, 3)), lambda s: _real(*(s + (3,)))),
    "RelaxedBernoulli": (dict(temperature=np.array(0.7), probs=_unit(3)), lambda s: _unit(*s)),
    "RelaxedOneHotCategorical": (dict(temperature=np.array(0.7), probs=_simplex(2, 4)),
                                 lambda s: _simplex(*(s + (4,)))),
    # 0.5 and 0.4995: the Taylor branch of the normalizer, mean and variance
    "ContinuousBernoulli": (dict(probs=np.array([0.2, 0.5, 0.4995, 0.7])),
                            lambda s: _unit(*s)),
    "HalfNormal": (dict(scale=_pos(3)), lambda s: _pos(*s)),
    "HalfCauchy": (dict(scale=_pos(3)), lambda s: _pos(*s)),
    "Pareto": (dict(scale=np.full(3, 0.5), alpha=_pos(3) + 2), lambda s: _pos(*s)),
    "Kumaraswamy": (dict(concentration1=_pos(3), concentration0=_pos(3)),
                    lambda s: _unit(*s)),
}


def _build(lib, name, params):
    conv = ember.tensor if lib is E else __import__("torch").tensor
    return getattr(lib, name)(**{k: conv(v) if isinstance(v, np.ndarray) else v
                                 for k, v in params.items()})


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


@pytest.mark.parametrize("name", list(CASES))
def test_against_torch(name):
    torch = pytest.importorskip("torch")
    from torch import distributions as T
    params, values = CASES[name]
    e, t = _build(E, name, params), _build(T, name, params)
    assert tuple(e.batch_shape) == tuple(t.batch_shape)
    assert tuple(e.event_shape) == tuple(t.event_shape)
    for prop in ("mean", "variance", "stddev", "mode"):
        try:
            want = getattr(t, prop)
        except NotImplementedError:
            continue
        np.testing.assert_allclose(_np(getattr(e, prop)), _np(want), rtol=1e-6, atol=1e-8,
                                   err_msg=prop)
    try:
        want = t.entropy()
    except NotImplementedError:
        want = None
    if want is not None:
        np.testing.assert_allclose(_np(e.entropy()), _np(want), rtol=1e-6, atol=1e-8)
    x = values((5,) + tuple(e.batch_shape))
    np.testing.assert_allclose(_np(e.log_prob(ember.tensor(x))),
                               _np(t.log_prob(torch.tensor(x))), rtol=1e-6, atol=1e-8)
    for fn, arg in (("cdf", x), ("icdf", _unit(*np.shape(x)))):
        try:
            want = getattr(t, fn)(torch.tensor(arg))
        except (NotImplementedError, ValueError):
            continue
        np.testing.assert_allclose(_np(getattr(e, fn)(ember.tensor(arg))), _np(want),
                                   rtol=1e-6, atol=1e-8, err_msg=fn)
    s, ts = e.sample((4,)), t.sample((4,))
    assert tuple(s.shape) == tuple(ts.shape) and s.dtype.name == str(ts.dtype).split(".")[-1]
    assert e.has_rsample == t.has_rsample
    ex = e.expand((2,) + tuple(e.batch_shape))
    assert tuple(ex.batch_shape) == (2,) + tuple(e.batch_shape)
    assert repr(e).replace("ember.Size", "torch.Size").split("(")[0] == \
        repr(t).split("(")[0]


_TRANSFORMED = ["LogNormal", "Gumbel", "RelaxedBernoulli", "RelaxedOneHotCategorical",
                "HalfNormal", "HalfCauchy", "Pareto", "Kumaraswamy"]


@pytest.mark.parametrize("name", _TRANSFORMED)
def test_transformed_family_expand(name):
    """expand of a family built on TransformedDistribution: the same class, its own parameters
    expanded too, and log-probabilities and moments as torch's expanded twin gives them."""
    torch = pytest.importorskip("torch")
    from torch import distributions as T
    params, values = CASES[name]
    e, t = _build(E, name, params), _build(T, name, params)
    shape = (2,) + tuple(e.batch_shape)
    ex, tx = e.expand(shape), t.expand(shape)
    assert type(ex) is type(e) and tuple(ex.batch_shape) == tuple(tx.batch_shape)
    assert ex._validate_args == e._validate_args
    for key in tx.__dict__:
        want = tx.__dict__[key]
        if key in ex.__dict__ and isinstance(want, torch.Tensor) and key in params:
            np.testing.assert_array_equal(_np(ex.__dict__[key]), _np(want), err_msg=key)
    x = values((3,) + shape)
    np.testing.assert_allclose(_np(ex.log_prob(ember.tensor(x))),
                               _np(tx.log_prob(torch.tensor(x))), rtol=1e-6, atol=1e-8)
    try:
        want = tx.mean
    except NotImplementedError:
        return
    np.testing.assert_allclose(_np(ex.mean), _np(want), rtol=1e-6, atol=1e-8)


def _kl_params():
    return {
        "Normal": dict(loc=_real(3), scale=_pos(3)),
        "Uniform": dict(low=_unit(3) * 0.3, high=_unit(3) * 0.3 + 0.6),
        "Exponential": dict(rate=_pos(3)), "Laplace": dict(loc=_real(3), scale=_pos(3)),
        "Cauchy": dict(loc=_real(3), scale=_pos(3)), "Gumbel": dict(loc=_real(3), scale=_pos(3)),
        "Gamma": dict(concentration=_pos(3), rate=_pos(3)),
        "Beta": dict(concentration1=_pos(3), concentration0=_pos(3)),
        "Bernoulli": dict(probs=_unit(3)),
        "Binomial": dict(total_count=np.full(3, 10.0), probs=_unit(3)),
        "Categorical": dict(probs=_simplex(3, 4)), "OneHotCategorical": dict(probs=_simplex(3, 4)),
        "Poisson": dict(rate=_pos(3)), "Geometric": dict(probs=_unit(3)),
        "Dirichlet": dict(concentration=_pos(3, 4)),
        "MultivariateNormal": dict(loc=_real(3, 2), covariance_matrix=_spd(2, (3,))),
        "LowRankMultivariateNormal": dict(loc=_real(3, 2), cov_factor=_real(3, 2, 1),
                                          cov_diag=_pos(3, 2)),
        "ContinuousBernoulli": dict(probs=np.array([0.2, 0.5, 0.8])),
        "HalfNormal": dict(scale=_pos(3)), "Pareto": dict(scale=_pos(3), alpha=_pos(3) + 2),
    }


def test_kl_divergence_matches_torch_for_every_pair():
    torch = pytest.importorskip("torch")
    from torch import distributions as T
    P = _kl_params()
    compared = 0
    for a, b in itertools.product(P, P):
        try:
            want = _np(T.kl_divergence(_build(T, a, P[a]), _build(T, b, P[b])))
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                E.kl_divergence(_build(E, a, P[a]), _build(E, b, P[b]))
            continue
        got = _np(E.kl_divergence(_build(E, a, P[a]), _build(E, b, P[b])))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=f"{a} || {b}")
        compared += 1
    assert compared >= 50


def test_kl_normal_closed_form_without_torch():
    p, q = E.Normal(0.3, 1.2), E.Normal(-1.0, 0.7)
    want = math.log(0.7 / 1.2) + (1.2 ** 2 + 1.3 ** 2) / (2 * 0.7 ** 2) - 0.5
    assert abs(float(E.kl_divergence(p, q)) - want) < 1e-6
    # Monte Carlo agreement for a pair without a closed form check elsewhere
    ember.manual_seed(3)
    p, q = E.Gamma(2.0, 1.5), E.Gamma(3.0, 0.8)
    x = p.sample((200000,))
    mc = float((p.log_prob(x) - q.log_prob(x)).mean())
    assert abs(mc - float(E.kl_divergence(p, q))) < 0.02


def test_register_kl_dispatches_to_the_most_specific_pair():
    class MyNormal(E.Normal):
        pass

    @E.register_kl(MyNormal, E.Normal)
    def _mine(p, q):
        return ember.tensor(42.0)

    assert float(E.kl_divergence(MyNormal(0.0, 1.0), E.Normal(0.0, 1.0))) == 42.0
    assert float(E.kl_divergence(E.Normal(0.0, 1.0), MyNormal(0.0, 1.0))) == 0.0


# -- scipy references (run without torch) --------------------------------------------------------
SCIPY = [
    (lambda: E.Normal(1.0, 2.0), st.norm(1.0, 2.0), np.linspace(-3, 4, 9)),
    (lambda: E.Gamma(2.5, 1.5), st.gamma(2.5, scale=1 / 1.5), np.linspace(0.1, 5, 9)),
    (lambda: E.Beta(2.0, 3.5), st.beta(2.0, 3.5), np.linspace(0.05, 0.95, 9)),
    (lambda: E.StudentT(4.0, 0.5, 2.0), st.t(4.0, 0.5, 2.0), np.linspace(-3, 4, 9)),
    (lambda: E.Laplace(0.5, 2.0), st.laplace(0.5, 2.0), np.linspace(-3, 4, 9)),
    (lambda: E.Cauchy(0.5, 2.0), st.cauchy(0.5, 2.0), np.linspace(-3, 4, 9)),
    (lambda: E.Gumbel(0.5, 2.0), st.gumbel_r(0.5, 2.0), np.linspace(-3, 4, 9)),
    (lambda: E.Exponential(1.7), st.expon(scale=1 / 1.7), np.linspace(0.1, 4, 9)),
    (lambda: E.LogNormal(0.2, 0.7), st.lognorm(0.7, scale=math.exp(0.2)), np.linspace(0.1, 4, 9)),
    (lambda: E.Uniform(-1.0, 3.0), st.uniform(-1.0, 4.0), np.linspace(-0.5, 2.5, 9)),
    (lambda: E.Chi2(3.0), st.chi2(3.0), np.linspace(0.1, 6, 9)),
]


@pytest.mark.parametrize("i", range(len(SCIPY)))
def test_continuous_log_prob_entropy_and_moments_match_scipy(i):
    make, ref, x = SCIPY[i]
    d = make()
    xt = ember.tensor(x, dtype=ember.float64)
    np.testing.assert_allclose(_np(d.log_prob(xt.float())), ref.logpdf(x), rtol=2e-5, atol=2e-5)
    if np.isfinite(ref.entropy()):
        np.testing.assert_allclose(float(d.entropy()), ref.entropy(), rtol=1e-5)
    if np.isfinite(ref.mean()):
        np.testing.assert_allclose(float(d.mean), ref.mean(), rtol=1e-5)
    try:
        cdf = d.cdf(xt.float())
    except NotImplementedError:
        return
    np.testing.assert_allclose(_np(cdf), ref.cdf(x), rtol=1e-5, atol=1e-6)


def test_discrete_log_prob_matches_scipy():
    k = np.arange(0, 8, dtype=np.float64)
    np.testing.assert_allclose(_np(E.Poisson(2.5).log_prob(ember.tensor(k))),
                               st.poisson(2.5).logpmf(k), rtol=1e-6)
    np.testing.assert_allclose(_np(E.Binomial(7, probs=ember.tensor(0.3)).log_prob(
        ember.tensor(k))), st.binom(7, 0.3).logpmf(k), rtol=1e-5)
    np.testing.assert_allclose(_np(E.Geometric(0.3).log_prob(ember.tensor(k))),
                               st.geom(0.3, loc=-1).logpmf(k), rtol=1e-6)
    x = np.array([2.0, 1.0, 3.0])
    np.testing.assert_allclose(float(E.Multinomial(6, probs=ember.tensor([0.2, 0.3, 0.5]))
                                     .log_prob(ember.tensor(x))),
                               st.multinomial(6, [0.2, 0.3, 0.5]).logpmf(x), rtol=1e-6)
    cov = _spd(3)
    v = _real(4, 3)
    np.testing.assert_allclose(
        _np(E.MultivariateNormal(ember.zeros(3, dtype=ember.float64),
                                 ember.tensor(cov)).log_prob(ember.tensor(v))),
        st.multivariate_normal(np.zeros(3), cov).logpdf(v), rtol=1e-6)
    alpha = np.array([1.5, 2.0, 3.0])
    s = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(float(E.Dirichlet(ember.tensor(alpha)).log_prob(ember.tensor(s))),
                               st.dirichlet(alpha).logpdf(s), rtol=1e-6)


# -- samples ------------------------------------------------------------------------------------
MOMENTS = [
    (lambda d: E.Normal(ember.tensor(1.5, device=d), 2.0), 1.5, 4.0),
    (lambda d: E.Gamma(ember.tensor(2.5, device=d), 1.5), 2.5 / 1.5, 2.5 / 1.5 ** 2),
    (lambda d: E.Gamma(ember.tensor(0.4, device=d), 2.0), 0.2, 0.1),
    (lambda d: E.Beta(ember.tensor(2.0, device=d), 3.0), 0.4, 2 * 3 / (25 * 6)),
    (lambda d: E.Exponential(ember.tensor(0.5, device=d)), 2.0, 4.0),
    (lambda d: E.Laplace(ember.tensor(-1.0, device=d), 0.5), -1.0, 0.5),
    (lambda d: E.Poisson(ember.tensor(4.0, device=d)), 4.0, 4.0),
    (lambda d: E.Poisson(ember.tensor(40.0, device=d)), 40.0, 40.0),
    (lambda d: E.Binomial(20, probs=ember.tensor(0.3, device=d)), 6.0, 4.2),
    (lambda d: E.Binomial(500, probs=ember.tensor(0.8, device=d)), 400.0, 80.0),
    (lambda d: E.Geometric(ember.tensor(0.3, device=d)), 0.7 / 0.3, 0.7 / 0.09),
    (lambda d: E.Bernoulli(ember.tensor(0.3, device=d)), 0.3, 0.21),
    (lambda d: E.Uniform(ember.tensor(-1.0, device=d), 3.0), 1.0, 16 / 12),
    (lambda d: E.StudentT(ember.tensor(6.0, device=d)), 0.0, 1.5),
    (lambda d: E.Gumbel(ember.tensor(0.5, device=d), 2.0), 0.5 + 2 * 0.5772156649, math.pi ** 2 * 4 / 6),
    (lambda d: E.Chi2(ember.tensor(3.0, device=d)), 3.0, 6.0),
    (lambda d: E.LogNormal(ember.tensor(0.0, device=d), 0.5), math.exp(0.125),
     (math.exp(0.25) - 1) * math.exp(0.25)),
]
N = 100000


def _devices():
    out = ["cpu"]
    if ember.opencl.is_available():
        out.append("opencl")
    return out


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("i", range(len(MOMENTS)))
def test_sample_moments(device, i):
    """Sample mean and variance within 5 standard errors of the exact values."""
    make, mean, var = MOMENTS[i]
    ember.manual_seed(1234)
    x = _np(make(device).sample((N,))).astype(np.float64)
    assert abs(x.mean() - mean) < 5 * math.sqrt(var / N)
    # the variance of the sample variance needs the fourth moment: a loose bound from it
    assert abs(x.var() - var) < 0.05 * var + 5 * math.sqrt(2 * var * var / N)


@pytest.mark.parametrize("device", _devices())
def test_categorical_and_dirichlet_frequencies(device):
    ember.manual_seed(5)
    p = np.array([0.1, 0.2, 0.3, 0.4])
    s = _np(E.Categorical(ember.tensor(p, device=device)).sample((N,)))
    freq = np.bincount(s, minlength=4) / N
    assert np.all(np.abs(freq - p) < 5 * np.sqrt(p * (1 - p) / N))
    alpha = np.array([1.0, 2.0, 3.0])
    d = _np(E.Dirichlet(ember.tensor(alpha, device=device)).sample((N,)))
    np.testing.assert_allclose(d.sum(-1), 1.0, rtol=1e-5)
    assert np.all(np.abs(d.mean(0) - alpha / 6) < 0.005)


def test_multivariate_normal_sample_covariance():
    ember.manual_seed(2)
    cov = _spd(3)
    x = _np(E.MultivariateNormal(ember.tensor([1.0, -1.0, 0.5], dtype=ember.float64),
                                 ember.tensor(cov)).sample((N,)))
    np.testing.assert_allclose(np.cov(x.T), cov, rtol=0.05, atol=0.05)
    np.testing.assert_allclose(x.mean(0), [1.0, -1.0, 0.5], atol=0.05)


def test_sampling_uses_the_device_generator_and_manual_seed_reproduces():
    ember.manual_seed(7)
    a = _np(E.Gamma(ember.tensor([0.5, 3.0]), 1.0).sample((5,)))
    ember.manual_seed(7)
    b = _np(E.Gamma(ember.tensor([0.5, 3.0]), 1.0).sample((5,)))
    np.testing.assert_array_equal(a, b)
    g = ember.Generator().manual_seed(11)
    c = _np(ember._standard_gamma(ember.full((5,), 2.0), generator=g))
    g.manual_seed(11)
    np.testing.assert_array_equal(c, _np(ember._standard_gamma(ember.full((5,), 2.0),
                                                                  generator=g)))


# -- gradients ----------------------------------------------------------------------------------
def test_reparameterized_gradients_are_unbiased():
    """d/dtheta E[f(x)] by rsample against the closed form, for implicit (gamma, beta,
    Dirichlet) and location-scale reparameterizations."""
    ember.manual_seed(0)
    a = ember.tensor(2.5, dtype=ember.float64, requires_grad=True)
    b = ember.tensor(1.5, dtype=ember.float64, requires_grad=True)
    x = E.Gamma(a, b).rsample((200000,))
    (x * x).mean().backward()  # E[x^2] = a(a+1)/b^2
    assert abs(float(a.grad) - (2 * 2.5 + 1) / 1.5 ** 2) < 0.05
    assert abs(float(b.grad) + 2 * 2.5 * 3.5 / 1.5 ** 3) < 0.1
    c1 = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    c0 = ember.tensor(3.0, dtype=ember.float64, requires_grad=True)
    E.Beta(c1, c0).rsample((200000,)).mean().backward()  # E = c1 / (c1 + c0)
    assert abs(float(c1.grad) - 3.0 / 25) < 0.005 and abs(float(c0.grad) + 2.0 / 25) < 0.005
    alpha = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    E.Dirichlet(alpha).rsample((200000,))[:, 0].mean().backward()
    np.testing.assert_allclose(_np(alpha.grad), [5 / 36, -1 / 36, -1 / 36], atol=0.005)
    loc = ember.tensor(0.5, requires_grad=True)
    scale = ember.tensor(2.0, requires_grad=True)
    (E.Normal(loc, scale).rsample((100000,)) ** 2).mean().backward()
    assert abs(float(loc.grad) - 1.0) < 0.05 and abs(float(scale.grad) - 4.0) < 0.1


def test_log_prob_gradients_gradcheck():
    loc = ember.tensor([0.3, -0.2], dtype=ember.float64, requires_grad=True)
    scale = ember.tensor([1.1, 0.7], dtype=ember.float64, requires_grad=True)
    x = ember.tensor([0.5, 0.1], dtype=ember.float64)
    assert ember.autograd.gradcheck(lambda m, s: E.Normal(m, s).log_prob(x), (loc, scale))
    c = ember.tensor([1.5, 2.5], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a: E.Beta(a[0], a[1]).log_prob(
        ember.tensor(0.3, dtype=ember.float64)), (c,))
    assert ember.autograd.gradgradcheck(lambda a: E.Gamma(a, 2.0).entropy(), (c,))
    L = ember.tensor(np.linalg.cholesky(_spd(3)), requires_grad=True)
    mu = ember.tensor(_real(3), requires_grad=True)
    v = ember.tensor(_real(3))
    assert ember.autograd.gradcheck(lambda m, s: E.MultivariateNormal(m, scale_tril=s.tril())
                                    .log_prob(v), (mu, L))


def test_standard_gamma_grad_matches_finite_differences_of_the_cdf():
    """The implicit gradient dx/dalpha = -(dF/dalpha) / f at fixed F(x; alpha)."""
    import scipy.special as sp
    alpha = np.array([0.3, 1.0, 2.5, 7.0, 15.0, 40.0])
    x = np.array([0.2, 0.9, 2.0, 6.5, 16.0, 38.0])
    h = 1e-6
    dF = (sp.gammainc(alpha + h, x) - sp.gammainc(alpha - h, x)) / (2 * h)
    pdf = st.gamma(alpha).pdf(x)
    want = -dF / pdf
    got = _np(ember._standard_gamma_grad(ember.tensor(alpha), ember.tensor(x)))
    np.testing.assert_allclose(got, want, rtol=2e-3)


# -- transforms and constraints -------------------------------------------------------------------
TRANSFORMS = [
    ("ExpTransform", (), (), lambda s: _real(*s)),
    ("SigmoidTransform", (), (), lambda s: _real(*s)),
    ("TanhTransform", (), (), lambda s: _real(*s) * 0.5),
    ("SoftplusTransform", (), (), lambda s: _real(*s)),
    ("AffineTransform", (0.5, -2.0), (), lambda s: _real(*s)),
    ("PowerTransform", (2.5,), (), lambda s: _pos(*s)),
    ("StickBreakingTransform", (), (), lambda s: _real(*s)),
    ("LowerCholeskyTransform", (), (), lambda s: _real(*(s + (3,)))),
    ("CorrCholeskyTransform", (), (), lambda s: _real(*s[:-1] + (3,)) * 0.5),
]


@pytest.mark.parametrize("name,args,kwargs,values", TRANSFORMS)
def test_transforms_match_torch(name, args, kwargs, values):
    torch = pytest.importorskip("torch")
    from torch.distributions import transforms as TT
    e = getattr(E.transforms, name)(*args)
    t = getattr(TT, name)(*args)
    x = values((4, 3))
    ye, yt = e(ember.tensor(x)), t(torch.tensor(x))
    np.testing.assert_allclose(_np(ye), _np(yt), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_np(e.inv(ye)), _np(t.inv(yt)), rtol=1e-5, atol=1e-7)
    try:
        want = t.log_abs_det_jacobian(torch.tensor(x), yt)
    except NotImplementedError:
        return
    np.testing.assert_allclose(_np(e.log_abs_det_jacobian(ember.tensor(x), ye)), _np(want),
                               rtol=1e-6, atol=1e-8)
    assert e.domain.event_dim == t.domain.event_dim
    assert e.codomain.event_dim == t.codomain.event_dim


@pytest.mark.parametrize("constraint", ["real", "positive", "unit_interval", "simplex",
                                        "lower_cholesky", "positive_definite",
                                        "greater_than", "interval", "corr_cholesky"])
def test_biject_to_and_transform_to_land_in_the_constraint(constraint):
    c = getattr(E.constraints, constraint)
    if constraint == "greater_than":
        c = c(2.0)
    elif constraint == "interval":
        c = c(-1.0, 3.0)
    shape = {"simplex": (5, 3), "lower_cholesky": (5, 3, 3), "positive_definite": (5, 3, 3),
             "corr_cholesky": (5, 3)}.get(constraint, (5, 4))
    x = ember.tensor(_real(*shape))
    for registry in (E.transform_to, E.biject_to):
        try:
            t = registry(c)
        except NotImplementedError:
            assert registry is E.biject_to and constraint in ("lower_cholesky",
                                                             "positive_definite")
            continue
        y = t(x)
        assert bool(c.check(y).all()), (registry, constraint)
        if registry is E.biject_to:
            np.testing.assert_allclose(_np(t.inv(y)), _np(x), rtol=1e-5, atol=1e-6)


def test_transformed_distribution_and_compose_transform():
    base = E.Normal(ember.zeros(3, dtype=ember.float64), 1.0)
    tr = [E.transforms.AffineTransform(1.0, 2.0), E.transforms.ExpTransform()]
    d = E.TransformedDistribution(base, tr)
    x = ember.tensor(_pos(4, 3))
    ref = st.lognorm(2.0, scale=math.e).logpdf(_np(x))
    np.testing.assert_allclose(_np(d.log_prob(x)), ref, rtol=1e-6)
    np.testing.assert_allclose(_np(d.cdf(x)), st.lognorm(2.0, scale=math.e).cdf(_np(x)),
                               rtol=1e-6)
    c = E.transforms.ComposeTransform(tr)
    np.testing.assert_allclose(_np(c.inv(c(x))), _np(x), rtol=1e-6)
    assert c.inv.inv is c


def test_independent_and_mixture_same_family():
    loc, scale = _real(4, 3), _pos(4, 3)
    ind = E.Independent(E.Normal(ember.tensor(loc), ember.tensor(scale)), 1)
    assert tuple(ind.batch_shape) == (4,) and tuple(ind.event_shape) == (3,)
    x = _real(4, 3)
    np.testing.assert_allclose(_np(ind.log_prob(ember.tensor(x))),
                               st.norm(loc, scale).logpdf(x).sum(-1), rtol=1e-6)
    w = np.array([0.3, 0.7])
    mix = E.MixtureSameFamily(E.Categorical(ember.tensor(w)),
                              E.Normal(ember.tensor([-1.0, 2.0], dtype=ember.float64),
                                       ember.tensor([0.5, 1.5], dtype=ember.float64)))
    v = np.linspace(-3, 4, 7)
    ref = np.log(w[0] * st.norm(-1, 0.5).pdf(v) + w[1] * st.norm(2, 1.5).pdf(v))
    np.testing.assert_allclose(_np(mix.log_prob(ember.tensor(v))), ref, rtol=1e-6)
    np.testing.assert_allclose(float(mix.mean), 0.3 * -1 + 0.7 * 2, rtol=1e-6)
    ember.manual_seed(4)
    s = _np(mix.sample((N,)))
    assert abs(s.mean() - 1.1) < 0.03


# -- validation ---------------------------------------------------------------------------------
def test_invalid_parameters_raise_torchs_errors():
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(2,\)\) "
                                         r"of distribution Normal\(loc: ember.Size\(\[2\]\), "
                                         r"scale: ember.Size\(\[2\]\)\) to satisfy the "
                                         r"constraint GreaterThan\(lower_bound=0.0\)"):
        E.Normal(ember.zeros(2), ember.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified"):
        E.Bernoulli()
    with pytest.raises(ValueError, match=r"within the support \(Simplex\(\)\)"):
        E.Dirichlet(ember.ones(3)).log_prob(ember.tensor([0.5, 0.6, 0.1]))
    with pytest.raises(ValueError, match="to be within the support"):
        E.Exponential(1.0).log_prob(ember.tensor(-1.0))
    with pytest.raises(ValueError, match="The right-most size of value must match event_shape"):
        E.Dirichlet(ember.ones(3)).log_prob(ember.ones(4) / 4)
    with pytest.raises(ValueError, match="must be a Tensor"):
        E.Normal(0.0, 1.0).log_prob(0.5)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix"):
        E.MultivariateNormal(ember.zeros(2))
    # validation off: the same parameters are accepted
    d = E.Normal(ember.zeros(2), ember.tensor([1.0, -1.0]), validate_args=False)
    assert d.scale.shape == (2,)
    E.Distribution.set_default_validate_args(False)
    try:
        E.Normal(0.0, -1.0)
    finally:
        E.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        E.Distribution.set_default_validate_args("yes")


@pytest.mark.parametrize("value_shape", [(3,), (4, 3), (1,), ()])
def test_normal_log_prob_without_grad_matches_the_differentiable_path(value_shape):
    # log_prob without autograd works in place on one temporary: it must broadcast either way,
    # leave ``value`` untouched and agree with the differentiable formula and scipy
    loc, scale = _real(3), _pos(3)
    v = _real(*value_shape)
    d = E.Normal(ember.tensor(loc), ember.tensor(scale))
    value = ember.tensor(v)
    got = d.log_prob(value)
    np.testing.assert_array_equal(_np(value), v)
    want = st.norm.logpdf(v, loc, scale)
    np.testing.assert_allclose(_np(got), want, rtol=1e-12, atol=1e-12)
    loc_g = ember.tensor(loc, requires_grad=True)
    differentiable = E.Normal(loc_g, ember.tensor(scale)).log_prob(value)
    np.testing.assert_allclose(_np(differentiable.detach()), _np(got), rtol=1e-12, atol=1e-12)
    mixed = d.log_prob(value.float())  # float32 value, float64 parameters: promotes
    assert mixed.dtype == ember.float64
    np.testing.assert_allclose(_np(mixed), want, rtol=1e-6, atol=1e-6)


def test_normal_log_prob_under_vmap_with_an_unbatched_value():
    # the in-place path must not run on transformed tensors: an unbatched temporary can't take
    # a batched scale in place
    from ember.func import vmap
    loc, scale, v = _real(3), _pos(4, 3), _real(3)
    got = vmap(lambda s: E.Normal(ember.tensor(loc), s, validate_args=False).log_prob(
        ember.tensor(v)))(ember.tensor(scale))
    np.testing.assert_allclose(_np(got), st.norm.logpdf(v, loc, scale), rtol=1e-12)
