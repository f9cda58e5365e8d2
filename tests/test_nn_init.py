"""nn.init: formulas (bounds, std, gains, fans) checked statistically and against PyTorch's
documented values; reproducibility through ember.manual_seed; errors."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import init


def test_calculate_gain_table():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


def test_fans():
    assert init._calculate_fan_in_and_fan_out(ember.empty(3, 4)) == (4, 3)
    assert init._calculate_fan_in_and_fan_out(ember.empty(8, 2, 3, 5)) == (30, 120)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(ember.empty(3))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(ember.empty(3, 3), mode="fan_avg")


def _stats(t):
    a = t.detach().numpy().astype(np.float64)
    return a, a.mean(), a.std()


def test_uniform_normal_constant():
    ember.manual_seed(0)
    a, m, s = _stats(init.uniform_(ember.empty(200, 200), -2.0, 3.0))
    assert a.min() >= -2 and a.max() < 3 and abs(m - 0.5) < 0.05
    assert abs(s - 5 / math.sqrt(12)) < 0.03
    a, m, s = _stats(init.normal_(ember.empty(200, 200), 1.0, 0.5))
    assert abs(m - 1.0) < 0.01 and abs(s - 0.5) < 0.01
    assert init.constant_(ember.empty(3), 2.5).tolist() == [2.5] * 3
    assert init.ones_(ember.empty(2)).tolist() == [1.0, 1.0]
    assert init.zeros_(ember.ones(2)).tolist() == [0.0, 0.0]
    np.testing.assert_array_equal(init.eye_(ember.empty(2, 3)).numpy(), np.eye(2, 3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(ember.empty(3))


def test_init_on_parameters_does_not_record():
    p = nn.Parameter(ember.empty(4, 4))
    init.kaiming_normal_(p)
    init.xavier_uniform_(p)
    assert p.is_leaf and p.grad_fn is None and p.requires_grad


def test_xavier_and_kaiming_scales():
    ember.manual_seed(1)
    fan_in, fan_out = 300, 200
    a, _, s = _stats(init.xavier_uniform_(ember.empty(fan_out, fan_in), gain=2.0))
    bound = 2.0 * math.sqrt(6 / (fan_in + fan_out))
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.99 * bound
    _, _, s = _stats(init.xavier_normal_(ember.empty(fan_out, fan_in)))
    assert abs(s - math.sqrt(2 / (fan_in + fan_out))) < 0.002
    a, _, _ = _stats(init.kaiming_uniform_(ember.empty(fan_out, fan_in), a=math.sqrt(5)))
    assert np.abs(a).max() <= 1 / math.sqrt(fan_in) + 1e-7
    _, _, s = _stats(init.kaiming_normal_(ember.empty(fan_out, fan_in), mode="fan_out",
                                          nonlinearity="relu"))
    assert abs(s - math.sqrt(2 / fan_out)) < 0.002
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(ember.empty(0, 3))


def test_trunc_normal():
    ember.manual_seed(2)
    a, m, s = _stats(init.trunc_normal_(ember.empty(100, 100), mean=1.0, std=2.0, a=-1.0,
                                        b=2.5))
    assert a.min() >= -1.0 and a.max() <= 2.5
    from scipy import stats
    lo, hi = (-1.0 - 1.0) / 2.0, (2.5 - 1.0) / 2.0
    ref = stats.truncnorm(lo, hi, loc=1.0, scale=2.0)
    assert abs(m - ref.mean()) < 0.03 and abs(s - ref.std()) < 0.03


def test_orthogonal_dirac_sparse():
    ember.manual_seed(3)
    w = init.orthogonal_(ember.empty(4, 6), gain=2.0).numpy().astype(np.float64)
    np.testing.assert_allclose(w @ w.T, 4 * np.eye(4), atol=1e-5)
    w = init.orthogonal_(ember.empty(6, 2, 2)).numpy().reshape(6, 4).astype(np.float64)
    np.testing.assert_allclose(w.T @ w, np.eye(4), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(ember.empty(3))
    d = init.dirac_(ember.empty(4, 2, 3)).numpy()
    want = np.zeros((4, 2, 3))
    want[0, 0, 1] = want[1, 1, 1] = 1
    np.testing.assert_array_equal(d, want)
    s = init.sparse_(ember.empty(10, 5), sparsity=0.3).numpy()
    assert ((s == 0).sum(0) >= 3).all()


def test_manual_seed_reproduces_module_init():
    ember.manual_seed(42)
    a = nn.Sequential(nn.Linear(5, 4), nn.Bilinear(2, 2, 3), nn.Embedding(6, 2))
    ember.manual_seed(42)
    b = nn.Sequential(nn.Linear(5, 4), nn.Bilinear(2, 2, 3), nn.Embedding(6, 2))
    for (k, pa), pb in zip(a.state_dict().items(), b.state_dict().values()):
        np.testing.assert_array_equal(pa.numpy(), pb.numpy(), err_msg=k)
    ember.manual_seed(43)
    c = nn.Linear(5, 4)
    assert not np.array_equal(c.weight.detach().numpy(), a[0].weight.detach().numpy())


def test_generator_argument():
    g = ember.Generator().manual_seed(7)
    x = init.normal_(ember.empty(5), generator=g).numpy()
    g.manual_seed(7)
    np.testing.assert_array_equal(init.normal_(ember.empty(5), generator=g).numpy(), x)


def test_default_inits_match_torch_distribution_bounds():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    ember.manual_seed(0)
    # the same formulas: both libraries' weights fill U(-b, b) up to the documented bound b
    for make, bound in ((lambda n: n.Linear(64, 32), 1 / 8), (lambda n: n.Bilinear(8, 4, 16),
                                                             1 / math.sqrt(8))):
        for lib in (torch.nn, nn):
            w = make(lib).weight.detach().numpy()
            assert 0.95 * bound < np.abs(w).max() <= bound
    te, ee = torch.nn.Embedding(500, 20), nn.Embedding(500, 20)
    assert abs(te.weight.detach().std().item() - ee.weight.detach().std().item()) < 0.05
