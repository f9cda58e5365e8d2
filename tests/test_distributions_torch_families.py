"""The torch.distributions families added for issue #30 item 3 (FisherSnedecor,
GeneralizedPareto, InverseGamma, LKJCholesky, LogisticNormal, NegativeBinomial, VonMises,
Weibull, Wishart and transforms.CumulativeDistributionTransform) against torch.distributions
(values, moments, entropies, gradients of log_prob, shapes, argument validation, KL) and
scipy.stats (samples, by KS tests or moments with fixed seeds)."""
import math
import warnings

import numpy as np
import pytest
import scipy.stats as st

import ember
from ember import distributions as E

RNG = np.random.default_rng(30)


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


def _spd(n, b=()):
    x = RNG.standard_normal(b + (n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _simplex(*s):
    x = RNG.uniform(0.1, 1, s)
    return x / x.sum(-1, keepdims=True)


def _lkj_values(s):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return torch.distributions.LKJCholesky(3, torch.tensor([0.5, 1.0, 2.5])).sample(s[:1]) \
        .numpy()


# name -> (positional args, keyword args, values of shape (5,) + batch + event, the parameters
# log_prob is differentiated in)
CASES = {
    "Weibull": ((RNG.uniform(0.5, 2, 3), RNG.uniform(0.5, 3, 3)), {},
                lambda s: RNG.uniform(0.1, 3, s), ("scale", "concentration")),
    "InverseGamma": ((np.array([0.7, 2.5, 4.0]), RNG.uniform(0.5, 3, 3)), {},
                     lambda s: RNG.uniform(0.1, 3, s), ()),
    "FisherSnedecor": ((np.array([1.0, 3.0, 7.0]), np.array([1.5, 3.0, 9.0])), {},
                       lambda s: RNG.uniform(0.1, 3, s), ("df1", "df2")),
    # concentration 0 takes the exponential branch
    "GeneralizedPareto": ((RNG.standard_normal(4), RNG.uniform(0.5, 3, 4),
                           np.array([0.3, 0.0, -0.2, 0.7])), {},
                          lambda s: RNG.uniform(2.5, 4.5, s), ("loc", "scale", "concentration")),
    "NegativeBinomial": ((RNG.uniform(1, 5, 3),), dict(probs=RNG.uniform(0.1, 0.9, 3)),
                         lambda s: RNG.integers(0, 8, s).astype(float), ("total_count", "probs")),
    "NegativeBinomial_logits": ((np.array([0.0, 2.0, 3.5]),), dict(logits=RNG.normal(size=3)),
                                lambda s: RNG.integers(0, 8, s).astype(float), ("logits",)),
    "LogisticNormal": ((RNG.normal(size=(2, 3)), RNG.uniform(0.5, 2, (2, 3))), {},
                       lambda s: _simplex(*s[:-1], 4), ("loc", "scale")),
    "VonMises": ((RNG.normal(size=4), np.array([0.01, 0.5, 3.0, 10.0])), {},
                 lambda s: RNG.normal(size=s) * 3, ("loc", "concentration")),
    "Wishart": ((np.array([3.5, 6.0]),), dict(covariance_matrix=_spd(3, (2,))),
                lambda s: _spd(3, s[:-2]), ("df", "covariance_matrix")),
    "Wishart_precision": ((np.array([4.0]),), dict(precision_matrix=_spd(2, (1,))),
                          lambda s: _spd(2, s[:-2]), ("precision_matrix",)),
    "Wishart_scale_tril": ((5.0,), dict(scale_tril=np.linalg.cholesky(_spd(3))),
                           lambda s: _spd(3, s[:-2]), ("scale_tril",)),
    "LKJCholesky": ((3, np.array([0.5, 1.0, 2.5])), {}, _lkj_values, ("concentration",)),
}


@pytest.fixture(autouse=True)
def _torch_float64():
    """torch's GeneralizedPareto compares float64 parameters with a default-dtype 0 (an error
    unless the default dtype is float64 too)."""
    try:
        import torch
    except ImportError:
        yield
        return
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def _family(name):
    return name.split("_")[0]


def _build(lib, name, requires_grad=False):
    conv = ember.tensor if lib is E else __import__("torch").tensor

    def c(v):
        return conv(v, requires_grad=requires_grad) if isinstance(v, np.ndarray) else v
    args, kwargs, _, _ = CASES[name]
    return getattr(lib, _family(name))(*map(c, args), **{k: c(v) for k, v in kwargs.items()})


def _close(a, b, what, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(_np(a), _np(b), rtol=rtol, atol=atol, err_msg=what)


@pytest.mark.parametrize("name", list(CASES))
def test_against_torch(name):
    torch = pytest.importorskip("torch")
    from torch import distributions as T
    e, t = _build(E, name), _build(T, name)
    assert tuple(e.batch_shape) == tuple(t.batch_shape)
    assert tuple(e.event_shape) == tuple(t.event_shape)
    assert e.has_rsample == t.has_rsample
    assert type(e.support).__name__ == type(t.support).__name__
    for prop in ("mean", "variance", "stddev", "mode"):
        try:
            want = getattr(t, prop)
        except NotImplementedError:
            with pytest.raises(NotImplementedError):
                getattr(e, prop)
            continue
        _close(getattr(e, prop), want, prop)
    try:
        want = t.entropy()
    except NotImplementedError:
        want = None
    if want is not None:
        _close(e.entropy(), want, "entropy")
    x = CASES[name][2]((5,) + tuple(e.batch_shape) + tuple(e.event_shape))
    _close(e.log_prob(ember.tensor(x)), t.log_prob(torch.tensor(x)), "log_prob")
    u = RNG.uniform(0.05, 0.95, (5,) + tuple(e.batch_shape))
    for fn, arg in (("cdf", x), ("icdf", u)):
        try:
            want = getattr(t, fn)(torch.tensor(arg))
        except NotImplementedError:
            continue
        _close(getattr(e, fn)(ember.tensor(arg)), want, fn)
    s, ts = e.sample((4,)), t.sample((4,))
    assert tuple(s.shape) == tuple(ts.shape) and s.dtype.name == str(ts.dtype).split(".")[-1]
    assert bool(e.support.check(s).all())
    ex, tx = e.expand((2,) + tuple(e.batch_shape)), t.expand((2,) + tuple(t.batch_shape))
    assert type(ex) is type(e)
    assert tuple(ex.batch_shape) == tuple(tx.batch_shape)
    x2 = CASES[name][2]((2,) + tuple(ex.batch_shape) + tuple(e.event_shape))
    _close(ex.log_prob(ember.tensor(x2)), tx.log_prob(torch.tensor(x2)), "expanded log_prob")


def _with_leaves(lib, name):
    """The distribution built from parameters that are leaves requiring grad, and the leaves
    (by argument position or keyword)."""
    conv = ember.tensor if lib is E else __import__("torch").tensor
    args, kwargs, _, _ = CASES[name]
    leaves = {}

    def leaf(key, v):
        if isinstance(v, np.ndarray):
            v = leaves[key] = conv(v, requires_grad=True)
        return v
    d = getattr(lib, _family(name))(*(leaf(i, v) for i, v in enumerate(args)),
                                    **{k: leaf(k, v) for k, v in kwargs.items()})
    return d, leaves


@pytest.mark.parametrize("name", list(CASES))
def test_log_prob_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    from torch import distributions as T
    (e, le), (t, lt) = _with_leaves(E, name), _with_leaves(T, name)
    x = CASES[name][2]((3,) + tuple(e.batch_shape) + tuple(e.event_shape))
    ge = ember.autograd.grad(e.log_prob(ember.tensor(x)).sum(), list(le.values()))
    gt = torch.autograd.grad(t.log_prob(torch.tensor(x)).sum(), list(lt.values()))
    for key, a, b in zip(le, ge, gt):
        a, b = _np(a), _np(b)
        if key == "scale_tril":
            # log_prob reads the lower triangle only; torch's cholesky_solve backward also
            # returns a (meaningless) gradient for the upper one
            assert not np.triu(a, 1).any()
            a, b = np.tril(a), np.tril(b)
        _close(a, b, f"d log_prob / d {key}", rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", [n for n in CASES if _build(E, n).has_rsample])
def test_rsample_differentiates_in_every_parameter(name):
    e, leaves = _with_leaves(E, name)
    ember.manual_seed(3)
    grads = ember.autograd.grad(e.rsample((10,)).sum(), list(leaves.values()))
    for key, g in zip(leaves, grads):
        assert np.isfinite(_np(g)).all() and np.abs(_np(g)).sum() > 0, key


def test_weibull_rsample_gradient_is_exact():
    """scale * E^(1/k): d/dscale = sample / scale, d/dk = -sample log(E) / k^2."""
    scale = ember.tensor([1.5, 0.7], dtype=ember.float64, requires_grad=True)
    k = ember.tensor([2.0, 0.8], dtype=ember.float64, requires_grad=True)
    ember.manual_seed(0)
    s = E.Weibull(scale, k).rsample((50,))
    gs, gk = ember.autograd.grad(s.sum(), [scale, k])
    sn = _np(s)
    _close(gs, (sn / _np(scale)).sum(0), "d/dscale")
    e = (sn / _np(scale)) ** _np(k)
    _close(gk, (-sn * np.log(e) / _np(k) ** 2).sum(0), "d/dk", rtol=1e-8)


def test_fisher_snedecor_rsample_gradient_matches_the_mean():
    """The pathwise gradient of the sample mean estimates d/d df2 of df2 / (df2 - 2)."""
    df2 = ember.tensor(12.0, dtype=ember.float64, requires_grad=True)
    ember.manual_seed(11)
    s = E.FisherSnedecor(ember.tensor(5.0, dtype=ember.float64), df2).rsample((200000,))
    (g,) = ember.autograd.grad(s.mean(), [df2])
    assert abs(float(g) - (-2 / (12.0 - 2) ** 2)) < 0.004


# -- samples by distribution ---------------------------------------------------------------------
N = 4000
KS = [
    (lambda: E.Weibull(1.5, 0.8), st.weibull_min(0.8, scale=1.5)),
    (lambda: E.InverseGamma(3.0, 2.0), st.invgamma(3.0, scale=2.0)),
    (lambda: E.FisherSnedecor(4.0, 7.0), st.f(4.0, 7.0)),
    (lambda: E.GeneralizedPareto(0.5, 2.0, 0.3), st.genpareto(0.3, loc=0.5, scale=2.0)),
    (lambda: E.GeneralizedPareto(0.5, 2.0, -0.4), st.genpareto(-0.4, loc=0.5, scale=2.0)),
    (lambda: E.GeneralizedPareto(0.0, 1.5, 0.0), st.genpareto(0.0, scale=1.5)),
    (lambda: E.VonMises(1.0, 2.0), st.vonmises(2.0, loc=1.0)),
    (lambda: E.VonMises(-2.5, 0.05), st.vonmises(0.05, loc=-2.5)),
]


def _ks_pvalue(dist, ref, n=N):
    x = _np(dist.sample((n,))).astype(np.float64)
    if isinstance(dist, E.VonMises):   # angles in [-pi, pi); scipy's support is loc +- pi
        loc = float(dist.loc)
        x = np.mod(x - loc + np.pi, 2 * np.pi) - np.pi + loc
    return st.kstest(x, ref.cdf).pvalue


@pytest.mark.parametrize("i", range(len(KS)))
def test_samples_follow_scipy(i):
    make, ref = KS[i]
    ember.manual_seed(100 + i)
    assert _ks_pvalue(make(), ref) > 1e-3


def test_negative_binomial_sample_frequencies():
    ember.manual_seed(4)
    n, p = 3.5, 0.4   # torch's probs is the success probability: scipy's p is 1 - probs
    x = _np(E.NegativeBinomial(n, probs=ember.tensor(p, dtype=ember.float64)).sample((20000,)))
    assert np.all(x == np.round(x)) and x.min() >= 0
    ref = st.nbinom(n, 1 - p)
    k = np.arange(12)
    freq = np.array([(x == j).mean() for j in k])
    assert np.all(np.abs(freq - ref.pmf(k)) < 5 * np.sqrt(ref.pmf(k) * (1 - ref.pmf(k)) / 20000)
                  + 1e-3)


def test_logistic_normal_samples_are_stick_broken_normals():
    ember.manual_seed(5)
    loc, scale = np.array([0.3, -1.0]), np.array([0.5, 2.0])
    y = _np(E.LogisticNormal(ember.tensor(loc), ember.tensor(scale)).sample((N,)))
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-12)
    z = np.log(y[:, :-1] / (1 - np.cumsum(y, -1)[:, :-1])) + np.log(np.arange(2, 0, -1))
    for j in range(2):
        assert st.kstest(z[:, j], st.norm(loc[j], scale[j]).cdf).pvalue > 1e-3


def test_wishart_sample_moments_match_scipy():
    ember.manual_seed(6)
    cov = _spd(3)
    df = 5.5
    x = _np(E.Wishart(ember.tensor(df), covariance_matrix=ember.tensor(cov)).sample((20000,)))
    ref = st.wishart(df, cov)
    se = np.sqrt(ref.var() / 20000)
    assert np.all(np.abs(x.mean(0) - ref.mean()) < 5 * se)
    np.testing.assert_allclose(x.var(0), ref.var(), rtol=0.1)
    assert bool(E.constraints.positive_definite.check(ember.tensor(x)).all())
    # the log-determinant's distribution: a sum of log chi2(df - i) plus log det(cov)
    chi = sum(np.log(st.chi2(df - i).rvs(20000, random_state=i)) for i in range(3))
    assert st.ks_2samp(np.linalg.slogdet(x)[1], chi + np.linalg.slogdet(cov)[1]).pvalue > 1e-3


@pytest.mark.parametrize("eta", [0.5, 1.0, 3.0])
def test_lkj_cholesky_samples_have_the_lkj_law(eta):
    """Every off-diagonal correlation of LKJ(d, eta) is 2 Beta(b, b) - 1, b = eta - 1 + d / 2,
    and log_prob's density ratios have mean 1 under the samples (E_eta[p_eta2 / p_eta] = 1),
    which checks sampler and log_prob together. PyTorch 2.13's sampler fails both for d >= 3
    (rows' Beta parameters; mean ratio 0.59 for eta 1 -> 2 at d = 4)."""
    ember.manual_seed(7)
    d, n = 4, 20000
    dist = E.LKJCholesky(d, ember.tensor(eta, dtype=ember.float64))
    L = dist.sample((n,))
    Ln = _np(L)
    C = Ln @ np.swapaxes(Ln, -1, -2)
    np.testing.assert_allclose(np.diagonal(C, 0, -2, -1), 1.0, rtol=1e-12)
    b = eta - 1 + d / 2
    for i, j in ((1, 0), (2, 1), (3, 0), (3, 2)):
        assert st.kstest((C[:, i, j] + 1) / 2, st.beta(b, b).cdf).pvalue > 1e-3, (i, j)
    for eta2 in (eta * 0.8, eta * 1.5):
        other = E.LKJCholesky(d, ember.tensor(eta2, dtype=ember.float64))
        w = _np((other.log_prob(L) - dist.log_prob(L)).exp())
        assert abs(w.mean() - 1) < 5 * w.std() / math.sqrt(n) + 1e-3


# -- validation, KL, transforms ------------------------------------------------------------------
BAD = [
    lambda: E.Weibull(-1.0, 1.0, validate_args=True),
    lambda: E.Weibull(1.0, 0.0, validate_args=True),
    lambda: E.InverseGamma(1.0, -2.0, validate_args=True),
    lambda: E.FisherSnedecor(0.0, 1.0, validate_args=True),
    lambda: E.GeneralizedPareto(0.0, -1.0, 0.1, validate_args=True),
    lambda: E.NegativeBinomial(-1.0, probs=ember.tensor(0.5), validate_args=True),
    lambda: E.NegativeBinomial(2.0, probs=ember.tensor(1.0), validate_args=True),
    lambda: E.NegativeBinomial(2.0),
    lambda: E.LogisticNormal(0.0, -1.0, validate_args=True),
    lambda: E.VonMises(ember.tensor(0.0), ember.tensor(-1.0), validate_args=True),
    lambda: E.LKJCholesky(1, 1.0),
    lambda: E.LKJCholesky(3, -1.0, validate_args=True),
    lambda: E.Wishart(1.5, covariance_matrix=ember.eye(3, dtype=ember.float64)),
    lambda: E.Wishart(4.0, covariance_matrix=-ember.eye(3, dtype=ember.float64),
                      validate_args=True),
    lambda: E.Wishart(4.0, scale_tril=ember.ones(3)),
]


@pytest.mark.parametrize("i", range(len(BAD)))
def test_bad_arguments_raise_value_error(i):
    with pytest.raises(ValueError):
        BAD[i]()


@pytest.mark.parametrize("make, value", [
    (lambda: E.Weibull(1.0, 2.0, validate_args=True), -1.0),
    (lambda: E.InverseGamma(1.0, 2.0, validate_args=True), 0.0),
    (lambda: E.FisherSnedecor(1.0, 2.0, validate_args=True), -0.5),
    (lambda: E.GeneralizedPareto(1.0, 2.0, -0.5, validate_args=True), 5.5),
    (lambda: E.NegativeBinomial(2.0, probs=ember.tensor(0.5), validate_args=True), 1.5),
    (lambda: E.LogisticNormal(ember.zeros(2), 1.0, validate_args=True), [0.5, 0.6, 0.1]),
])
def test_values_outside_the_support_raise_value_error(make, value):
    with pytest.raises(ValueError):
        make().log_prob(ember.tensor(value, dtype=ember.float32))


def test_kl_divergences_match_torch():
    """No closed forms are registered for these families in torch; the generic rules apply:
    transformed pairs with equal transforms, and Wishart's Bregman divergence."""
    torch = pytest.importorskip("torch")
    from torch import distributions as T
    pairs = [
        ("InverseGamma", ((np.array(2.0), np.array([3.0, 1.0])), (np.array(1.5), np.array(0.5)))),
        ("LogisticNormal", ((RNG.normal(size=3), RNG.uniform(0.5, 2, 3)),
                            (RNG.normal(size=3), RNG.uniform(0.5, 2, 3)))),
        ("Wishart", ((np.array([4.0, 5.0]), _spd(3, (2,))), (np.array([6.0, 3.5]), _spd(3)))),
    ]
    for name, (pa, qa) in pairs:
        out = []
        for lib, conv in ((E, ember.tensor), (T, torch.tensor)):
            c = [[conv(v) if isinstance(v, np.ndarray) else v for v in a] for a in (pa, qa)]
            if name == "Wishart":
                p, q = (lib.Wishart(a[0], covariance_matrix=a[1]) for a in c)
            else:
                p, q = (getattr(lib, name)(*a) for a in c)
            out.append(lib.kl_divergence(p, q))
        _close(out[0], out[1], name, rtol=1e-9)
    with pytest.raises(NotImplementedError):   # as torch: the transforms' scales differ
        E.kl_divergence(E.Weibull(1.0, 2.0), E.Weibull(2.0, 2.0))


def test_edge_values_match_torch():
    torch = pytest.importorskip("torch")
    from torch import distributions as T
    # no successes before no failures: probability 1 (lgamma(0) would give nan)
    for lib, conv in ((E, ember.tensor), (T, torch.tensor)):
        d = lib.NegativeBinomial(conv([0.0, 2.0]), probs=conv([0.3, 0.3]))
        np.testing.assert_allclose(_np(d.log_prob(conv([0.0, 0.0]))), [0.0, 2 * math.log(0.7)])
    # moments that do not exist are nan (F, generalized Pareto) or inf (inverse gamma)
    f = E.FisherSnedecor(ember.tensor([1.0, 5.0]), ember.tensor([1.5, 3.0]))
    assert np.isnan(_np(f.mean))[0] and np.isnan(_np(f.variance)).all()
    assert np.isnan(_np(f.mode))[0] and not np.isnan(_np(f.mode))[1]
    g = E.InverseGamma(ember.tensor([0.5, 1.5]), 1.0)
    assert np.isinf(_np(g.mean))[0] and np.isinf(_np(g.variance)).all()
    gp = E.GeneralizedPareto(0.0, 1.0, ember.tensor([1.5, 0.6, 0.2]))
    np.testing.assert_array_equal(np.isnan(_np(gp.mean)), [True, False, False])
    np.testing.assert_array_equal(np.isnan(_np(gp.variance)), [True, True, False])


def test_wishart_redraws_singular_samples_and_warns_only_then():
    w = E.Wishart(ember.tensor(4.0, dtype=ember.float64),
                  covariance_matrix=ember.eye(2, dtype=ember.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no "Singular sample" warning on regular draws
        w.rsample((50,))
    real, calls = w._bartlett_sampling, []

    def first_singular(shape=()):
        calls.append(shape)
        s = real(shape)
        return s * 0 if len(calls) == 1 else s
    w._bartlett_sampling = first_singular
    with pytest.warns(UserWarning, match="Singular sample"):
        s = w.rsample((3,))
    assert len(calls) == 2 and bool(E.constraints.positive_definite.check(s).all())
    with pytest.warns(UserWarning, match="Low df"):
        E.Wishart(ember.tensor(2.5), covariance_matrix=ember.eye(3))


def test_cumulative_distribution_transform_builds_a_copula_like_torch():
    torch = pytest.importorskip("torch")
    from torch import distributions as T
    loc, cov = RNG.normal(size=2), _spd(2)
    u = RNG.uniform(0.05, 0.95, (5, 2))
    out = []
    for lib, conv in ((E, ember.tensor), (T, torch.tensor)):
        t = lib.transforms.CumulativeDistributionTransform(lib.Normal(0.0, 1.0))
        assert t.bijective and t.sign == 1 and t.with_cache(1)._cache_size == 1
        copula = lib.TransformedDistribution(
            lib.MultivariateNormal(conv(loc), covariance_matrix=conv(cov)), [t])
        out.append((copula.log_prob(conv(u)), t.inv(conv(u)), repr(t.codomain)))
    _close(out[0][0], out[1][0], "copula log_prob")
    _close(out[0][1], out[1][1], "inverse")
    assert E.transforms.CumulativeDistributionTransform is E.CumulativeDistributionTransform


def test_module_paths_are_torchs():
    import ember.distributions.fishersnedecor as f
    import ember.distributions.lkj_cholesky as lkj
    import ember.distributions.von_mises as vm
    assert f.FisherSnedecor is E.FisherSnedecor and lkj.LKJCholesky is E.LKJCholesky
    assert vm.VonMises is E.VonMises


# -- OpenCL --------------------------------------------------------------------------------------
SPD2 = _spd(2)
OPENCL = [
    ("Weibull", lambda d: E.Weibull(ember.tensor([1.5, 0.5], device=d), 2.0)),
    ("InverseGamma", lambda d: E.InverseGamma(ember.tensor([3.0, 4.0], device=d), 2.0)),
    ("FisherSnedecor", lambda d: E.FisherSnedecor(ember.tensor([3.0, 5.0], device=d), 9.0)),
    ("GeneralizedPareto", lambda d: E.GeneralizedPareto(
        ember.tensor([0.0, 1.0], device=d), 2.0, ember.tensor([0.2, -0.2], device=d))),
    ("NegativeBinomial", lambda d: E.NegativeBinomial(
        ember.tensor([2.0, 5.0], device=d), probs=ember.tensor([0.3, 0.6], device=d))),
    ("LogisticNormal", lambda d: E.LogisticNormal(ember.tensor([0.1, -0.3], device=d), 0.7)),
    ("VonMises", lambda d: E.VonMises(ember.tensor([0.5, -1.0], device=d),
                                      ember.tensor([1.0, 4.0], device=d))),
    ("Wishart", lambda d: E.Wishart(ember.tensor([4.0, 5.0], device=d),
                                    covariance_matrix=ember.tensor(SPD2, device=d))),
    ("LKJCholesky", lambda d: E.LKJCholesky(3, ember.tensor([0.5, 2.0], device=d))),
]


@pytest.mark.skipif(not ember.opencl.is_available(), reason="no OpenCL device")
@pytest.mark.parametrize("name, make", OPENCL, ids=[n for n, _ in OPENCL])
def test_opencl_matches_cpu(name, make):
    """Samples drawn on OpenCL lie in the support, and log_prob/entropy/moments of them agree
    with the CPU's (float32 there)."""
    cl, cpu = make("opencl"), make("cpu")
    ember.manual_seed(8)
    s = cl.sample((6,))
    assert s.device.type == "opencl" and bool(cl.support.check(s).all())
    a, b = cl.log_prob(s), cpu.log_prob(s.cpu())
    assert a.device.type == "opencl"
    _close(a.cpu(), b, "log_prob", rtol=2e-5, atol=2e-5)
    for prop in ("mean", "variance"):
        try:
            want = getattr(cpu, prop)
        except NotImplementedError:
            continue
        _close(getattr(cl, prop).cpu(), want, prop, rtol=2e-5, atol=2e-6)
