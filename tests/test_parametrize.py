"""nn.utils.parametrize, nn.utils.parametrizations (weight_norm, spectral_norm, orthogonal) and
the legacy weight_norm/spectral_norm hooks: behaviour, errors, and torch step by step."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.utils import parametrizations as PZ
from ember.nn.utils import parametrize as P

RNG = np.random.default_rng(5)


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).mT

    def right_inverse(self, a):
        return a.triu()


class Double(nn.Module):
    def forward(self, x):
        return x * 2

    def right_inverse(self, x):
        return x / 2


class Flat(nn.Module):
    def forward(self, x):
        return x.flatten()


class ToDouble(nn.Module):
    def forward(self, x):
        return x.double()


class RankOne(nn.Module):
    def forward(self, x, y):
        return x.unsqueeze(-1) @ y.unsqueeze(-2)

    def right_inverse(self, z):
        return z[:, 0].clone(), z[0].clone() / z[0, 0]


def test_register_access_assign_and_train():
    m = nn.Linear(5, 5)
    P.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert type(nn.Linear(2, 2)) is nn.Linear  # only this instance changed class
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight")
    assert not P.is_parametrized(m, "bias")
    assert P.type_before_parametrizations(m) is nn.Linear
    w = m.weight
    assert ember.equal(w, w.mT)
    a = ember.rand(5, 5)
    a = a + a.mT
    m.weight = a
    assert ember.allclose(m.weight, a)
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    original = m.parametrizations.weight.original
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    m(ember.randn(3, 5)).pow(2).sum().backward()
    g = original.grad.clone()
    opt.step()
    assert ember.equal(m.weight, m.weight.mT)  # still symmetric after the step
    assert g.abs().sum().item() > 0 and ember.equal(g, g.triu())  # only the free part moves
    assert "(parametrizations): ModuleDict" in repr(m)


def test_chained_parametrizations_and_remove():
    m = nn.Linear(4, 4)
    w0 = m.weight.detach().clone()
    P.register_parametrization(m, "weight", Double())
    P.register_parametrization(m, "weight", Double())
    # the first right_inverse halved the original; the second parametrization only applies
    assert ember.allclose(m.weight, w0 * 2) and len(m.parametrizations.weight) == 2
    m.weight = w0  # right_inverse runs last-registered first
    assert ember.allclose(m.parametrizations.weight.original, w0 / 4)
    assert ember.allclose(m.weight, w0)
    P.remove_parametrizations(m, "weight", leave_parametrized=True)
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    assert isinstance(m.weight, nn.Parameter) and ember.allclose(m.weight, w0)
    m2 = nn.Linear(4, 4)
    w2 = m2.weight.detach().clone()
    P.register_parametrization(m2, "weight", Double())
    P.remove_parametrizations(m2, "weight", leave_parametrized=False)
    assert ember.allclose(m2.weight, w2 / 2)  # the original, as right_inverse left it


def test_several_originals():
    m = nn.Linear(3, 4)
    P.register_parametrization(m, "weight", RankOne())
    names = sorted(n for n, _ in m.named_parameters())
    assert names == ["bias", "parametrizations.weight.original0",
                     "parametrizations.weight.original1"]
    assert m.weight.shape == (4, 3)
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    P.remove_parametrizations(m, "weight")
    assert m.weight.shape == (4, 3)


def test_cached_computes_once():
    calls = []

    class Counting(nn.Module):
        def forward(self, x):
            calls.append(1)
            return x

    m = nn.Linear(2, 2)
    P.register_parametrization(m, "weight", Counting())
    calls.clear()
    with P.cached():
        m.weight
        m.weight
        with P.cached():
            m.weight
    assert len(calls) == 1
    m.weight
    assert len(calls) == 2


def test_buffers_and_transfer():
    m = nn.BatchNorm1d(3)
    P.register_parametrization(m, "running_mean", Double())
    assert "parametrizations.running_mean.original" in m.state_dict()
    a, b = nn.Linear(3, 3), nn.Linear(3, 3)
    P.register_parametrization(a, "weight", Symmetric())
    P.transfer_parametrizations_and_params(a, b)
    assert P.is_parametrized(b, "weight")
    assert b.parametrizations.weight.original is a.parametrizations.weight.original


@pytest.mark.parametrize("call, error, words", [
    (lambda: P.register_parametrization(nn.Linear(2, 2), "nope", Double()), ValueError,
     "does not have a parameter, a buffer, or a parametrized element with name 'nope'"),
    (lambda: P.remove_parametrizations(nn.Linear(2, 2), "weight"), ValueError,
     "does not have a parametrization on weight"),
    (lambda: P.register_parametrization(nn.Linear(2, 3), "weight", Flat()), ValueError,
     "may not change the shape of the tensor, unless `unsafe` flag is enabled"),
    (lambda: P.register_parametrization(nn.Linear(2, 3), "weight", ToDouble()), ValueError,
     "may not change the dtype of the tensor"),
    (lambda: P.register_parametrization(nn.Linear(2, 2), "weight", lambda x: x), TypeError,
     "must be an ember.nn.Module"),
    (lambda: PZ.orthogonal(nn.Linear(2, 2), orthogonal_map="qr"), ValueError,
     'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". Got: qr'),
    (lambda: PZ.orthogonal(nn.Linear(2, 2), "bias"), ValueError,
     "Expected a matrix or batch of matrices. Got a tensor of 1 dimensions."),
    (lambda: PZ.spectral_norm(nn.Linear(2, 2), n_power_iterations=0), ValueError,
     "Expected n_power_iterations to be positive, but got n_power_iterations=0"),
    (lambda: PZ.spectral_norm(nn.Linear(2, 2), dim=3), IndexError, "Dimension out of range"),
    (lambda: nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=-1), ValueError,
     "Expected n_power_iterations to be positive"),
])
def test_errors(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_serializing_a_parametrized_module_whole_is_refused():
    m = PZ.weight_norm(nn.Linear(2, 2))
    import pickle
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)
    import copy
    c = copy.deepcopy(m)
    assert ember.allclose(c.weight, m.weight) and c.weight is not m.weight


# -- orthogonal ---------------------------------------------------------------------------------
@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(4, 4), (6, 3), (3, 6)])
@pytest.mark.parametrize("triv", [True, False])
def test_orthogonal_stays_orthogonal_through_training(orth_map, shape, triv):
    ember.manual_seed(0)
    m = nn.Linear(shape[1], shape[0], dtype=ember.float64)
    PZ.orthogonal(m, orthogonal_map=orth_map, use_trivialization=triv)
    opt = ember.optim.SGD(m.parameters(), lr=0.05)
    for _ in range(3):
        opt.zero_grad()
        m(ember.randn(5, shape[1], dtype=ember.float64)).pow(2).sum().backward()
        opt.step()
    q = m.weight
    k = min(shape)
    gram = q.mT @ q if shape[0] >= shape[1] else q @ q.mT
    np.testing.assert_allclose(gram.detach().numpy(), np.eye(k), atol=1e-10)


def test_orthogonal_keeps_an_orthogonal_initial_weight():
    m = nn.Linear(4, 4, dtype=ember.float64)
    q, _ = np.linalg.qr(RNG.standard_normal((4, 4)))
    with ember.no_grad():
        m.weight.copy_(ember.tensor(q))
    PZ.orthogonal(m)
    np.testing.assert_allclose(m.weight.detach().numpy(), q, atol=1e-12)


def test_matrix_functions_against_scipy():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    from ember.nn.utils import _orthogonal as maps
    a = RNG.standard_normal((2, 5, 5))
    for scale in (0.1, 3.0, 40.0):
        got = maps.matrix_exp(ember.tensor(a * scale)).numpy()
        want = np.stack([scipy_linalg.expm(x * scale) for x in a])
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10 * np.abs(want).max())
    s = a - np.swapaxes(a, -1, -2)
    m = np.eye(5) - s / 2
    b = RNG.standard_normal((2, 5, 3))
    np.testing.assert_allclose(maps.solve(ember.tensor(m), ember.tensor(b)).numpy(),
                               np.linalg.solve(m, b), rtol=1e-10, atol=1e-12)
    # gradients of the composites against finite differences
    x = ember.tensor(s[0] * 0.3, requires_grad=True)
    assert ember.autograd.gradcheck(maps.matrix_exp, (x,))
    mm = ember.tensor(m[0], requires_grad=True)
    bb = ember.tensor(b[0], requires_grad=True)
    assert ember.autograd.gradcheck(maps.solve, (mm, bb))


def _torch():
    return pytest.importorskip("torch")


def _pair(torch, make):
    """The same layer in torch and ember, with torch's initial parameters."""
    t = make(torch.nn)
    e = make(nn)
    with ember.no_grad():
        for (name, p) in e.named_parameters():
            p.copy_(ember.tensor(dict(t.named_parameters())[name].detach().numpy()))
    return t, e


def _close(e, t, tol=1e-5):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5)])
def test_orthogonal_matches_torch(orth_map, shape):
    torch = _torch()
    torch.manual_seed(0)
    t, e = _pair(torch, lambda mod: mod.Linear(shape[1], shape[0], dtype=getattr(
        torch if mod is torch.nn else ember, "float64")))
    torch.nn.utils.parametrizations.orthogonal(t, orthogonal_map=orth_map,
                                               use_trivialization=False)
    PZ.orthogonal(e, orthogonal_map=orth_map, use_trivialization=False)
    if orth_map != "householder":  # no right inverse: the original is the weight as is
        _close(e.parametrizations.weight.original, t.parametrizations.weight.original, 1e-12)
    else:
        _close(e.parametrizations.weight.original, t.parametrizations.weight.original, 1e-10)
    _close(e.weight, t.weight, 1e-9)
    x = np.random.default_rng(1).standard_normal((2, shape[1]))
    t(torch.tensor(x)).pow(2).sum().backward()
    e(ember.tensor(x)).pow(2).sum().backward()
    _close(e.parametrizations.weight.original.grad, t.parametrizations.weight.original.grad,
           1e-9)


def test_orthogonal_with_trivialization_matches_torch_on_square_weights():
    torch = _torch()
    torch.manual_seed(0)
    t, e = _pair(torch, lambda mod: mod.Linear(4, 4, dtype=getattr(
        torch if mod is torch.nn else ember, "float64")))
    torch.nn.utils.parametrizations.orthogonal(t)
    PZ.orthogonal(e)
    _close(e.parametrizations.weight[0].base, t.parametrizations.weight[0].base, 1e-10)
    _close(e.weight, t.weight, 1e-10)


# -- weight_norm / spectral_norm against torch --------------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_matches_torch(dim):
    torch = _torch()
    torch.manual_seed(0)
    t, e = _pair(torch, lambda mod: mod.Conv2d(2, 3, 3))
    torch.nn.utils.parametrizations.weight_norm(t, dim=dim)
    PZ.weight_norm(e, dim=dim)
    _close(e.parametrizations.weight.original0, t.parametrizations.weight.original0)
    x = np.random.default_rng(2).standard_normal((1, 2, 5, 5)).astype(np.float32)
    t(torch.tensor(x)).sum().backward()
    e(ember.tensor(x)).sum().backward()
    _close(e.weight, t.weight)
    for k in ("original0", "original1"):
        _close(getattr(e.parametrizations.weight, k).grad,
               getattr(t.parametrizations.weight, k).grad, 1e-4)


def test_legacy_weight_norm_matches_torch_and_loads_into_parametrized():
    torch = _torch()
    torch.manual_seed(0)
    t, e = _pair(torch, lambda mod: mod.Linear(3, 4))
    with pytest.warns(FutureWarning):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.nn.utils.weight_norm(t)
        nn.utils.weight_norm(e)
    assert sorted(e.state_dict()) == sorted(t.state_dict()) == ["bias", "weight_g", "weight_v"]
    x = np.random.default_rng(3).standard_normal((2, 3)).astype(np.float32)
    t(torch.tensor(x)).sum().backward()
    e(ember.tensor(x)).sum().backward()
    _close(e.weight_g.grad, t.weight_g.grad)
    _close(e.weight_v.grad, t.weight_v.grad)
    # an old (hook) state dict loads into the parametrized form, as in torch
    p = PZ.weight_norm(nn.Linear(3, 4))
    p.load_state_dict(e.state_dict())
    _close(p.weight, e.weight)
    nn.utils.remove_weight_norm(e)
    assert sorted(e.state_dict()) == ["bias", "weight"]
    _close(e.weight, p.weight)


def _copy_uv(e_u, e_v, t_u, t_v):
    with ember.no_grad():
        e_u.copy_(ember.tensor(t_u.detach().numpy()))
        e_v.copy_(ember.tensor(t_v.detach().numpy()))


@pytest.mark.parametrize("kind", ["Linear", "ConvTranspose2d"])
def test_spectral_norm_parametrization_matches_torch(kind):
    torch = _torch()
    torch.manual_seed(0)
    make = (lambda mod: mod.Linear(5, 4)) if kind == "Linear" else \
        (lambda mod: mod.ConvTranspose2d(3, 2, 3))
    t, e = _pair(torch, make)
    torch.nn.utils.parametrizations.spectral_norm(t, n_power_iterations=2)
    PZ.spectral_norm(e, n_power_iterations=2)
    te, ee = t.parametrizations.weight[0], e.parametrizations.weight[0]
    assert ee.dim == te.dim
    _copy_uv(ee._u, ee._v, te._u, te._v)
    for train in (True, True, False):
        t.train(train)
        e.train(train)
        _close(e.weight, t.weight, 1e-5)
        _close(ee._u, te._u, 1e-5)


def test_legacy_spectral_norm_matches_torch():
    torch = _torch()
    torch.manual_seed(0)
    t, e = _pair(torch, lambda mod: mod.Linear(5, 4))
    torch.nn.utils.spectral_norm(t)
    nn.utils.spectral_norm(e)
    assert sorted(e.state_dict()) == sorted(t.state_dict())
    _copy_uv(e.weight_u, e.weight_v, t.weight_u, t.weight_v)
    x = np.random.default_rng(4).standard_normal((2, 5)).astype(np.float32)
    for _ in range(2):
        t(torch.tensor(x)).sum().backward()
        e(ember.tensor(x)).sum().backward()
        _close(e.weight, t.weight)
        _close(e.weight_orig.grad, t.weight_orig.grad, 1e-4)
    nn.utils.remove_spectral_norm(e)
    assert sorted(e.state_dict()) == ["bias", "weight"]
