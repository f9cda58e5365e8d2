"""The distribution samplers (``ember._standard_gamma``, ``poisson``, ``binomial``,
``_sample_dirichlet``) on every backend: moments against the exact ones with fixed seeds,
reproducibility, the implicit gamma gradient, bad input."""
import math

import numpy as np
import pytest

import ember

N = 200000


def _devices():
    return ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])


def _mean_var(x):
    x = x.cpu().numpy().astype(np.float64)
    return x.mean(0), x.var(0)


@pytest.mark.parametrize("device", _devices())
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gamma_poisson_binomial_moments(device, dtype):
    dt = getattr(ember, dtype)
    ember.manual_seed(0)
    alpha = np.array([0.05, 0.5, 1.0, 4.0, 60.0])
    m, v = _mean_var(ember._standard_gamma(ember.tensor(alpha, dtype=dt, device=device)
                                           .expand(N, 5).contiguous()))
    assert np.all(np.abs(m - alpha) < 5 * np.sqrt(alpha / N))
    assert np.all(np.abs(v - alpha) < 0.05 * alpha + 1e-3)
    lam = np.array([0.0, 0.7, 9.5, 10.0, 250.0])
    m, v = _mean_var(ember.poisson(ember.tensor(lam, dtype=dt, device=device)
                                   .expand(N, 5).contiguous()))
    assert np.all(np.abs(m - lam) < 5 * np.sqrt(lam / N) + 1e-9)
    assert np.all(np.abs(v - lam) < 0.03 * lam + 1e-9)
    n = np.array([0.0, 5.0, 40.0, 1000.0, 30.0])
    p = np.array([0.3, 0.5, 0.2, 0.9, 1.0])
    counts = ember.binomial(ember.tensor(n, dtype=dt, device=device).expand(N, 5).contiguous(),
                            ember.tensor(p, dtype=dt, device=device).expand(N, 5).contiguous())
    x = counts.cpu().numpy()
    assert np.all(x == np.floor(x)) and np.all((x >= 0) & (x <= n))
    m, v = _mean_var(counts)
    assert np.all(np.abs(m - n * p) < 5 * np.sqrt(n * p * (1 - p) / N) + 1e-9)
    assert np.all(np.abs(v - n * p * (1 - p)) < 0.03 * n * p * (1 - p) + 1e-9)


@pytest.mark.parametrize("device", _devices())
def test_dirichlet_and_reproducibility(device):
    alpha = ember.tensor([0.5, 1.0, 4.0], device=device).expand(N, 3).contiguous()
    ember.manual_seed(3)
    d = ember._sample_dirichlet(alpha)
    ember.manual_seed(3)
    d2 = ember._sample_dirichlet(alpha)
    np.testing.assert_array_equal(d.cpu().numpy(), d2.cpu().numpy())
    x = d.cpu().numpy()
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-5)
    assert np.all(np.abs(x.mean(0) - np.array([0.5, 1.0, 4.0]) / 5.5) < 0.004)


@pytest.mark.parametrize("device", _devices())
def test_implicit_gamma_gradient(device):
    ember.manual_seed(1)
    a = ember.tensor([0.6, 3.0, 20.0], dtype=ember.float64, device=device, requires_grad=True)
    x = ember._standard_gamma(a.expand(N, 3))
    x.mean(0).sum().backward()  # E[x] = alpha: d/d alpha = 1
    np.testing.assert_allclose(a.grad.cpu().numpy(), 1.0, atol=0.02)
    assert x.grad_fn.name() == "StandardGammaBackward0"


@pytest.mark.parametrize("device", _devices())
def test_tiny_shapes_and_errors(device):
    z = ember._standard_gamma(ember.zeros(3, device=device))
    assert float(z.min()) > 0  # clamped to the smallest normal number, as PyTorch does
    assert ember.poisson(ember.empty(0, device=device)).shape == (0,)
    with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be "
                                           "non-negative"):
        ember.poisson(ember.tensor([1.0, -1.0], device=device))
    with pytest.raises(NotImplementedError, match="\"poisson\" not implemented for 'Long'"):
        ember.poisson(ember.tensor([3], device=device))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        ember.binomial(ember.tensor([3.0], device=device),
                       ember.tensor([0.5], dtype=ember.float64, device=device))
    assert math.isnan(float(ember.binomial(ember.tensor([3.0], device=device),
                                           ember.tensor([math.nan], device=device))))


def test_host_samplers_draw_from_a_counter_based_device_generator():
    # the CUDA backend's Philox generator has no numpy impl: the kit's samplers key a numpy
    # Philox by its seed and a counter they reserve, so draws are reproducible and advance it
    from ember.kit.host import numpy_generator

    class Counter:
        def __init__(self, seed):
            self.seed, self.offset = seed, 0

        def take(self, n):
            start, self.offset = self.offset, self.offset + n
            return self.seed, start

    g1, g2 = Counter(7), Counter(7)
    a = numpy_generator(g1).standard_gamma(np.full(1000, 2.0))
    b = numpy_generator(g2).standard_gamma(np.full(1000, 2.0))
    c = numpy_generator(g1).standard_gamma(np.full(1000, 2.0))
    np.testing.assert_array_equal(a, b)
    assert g1.offset == 2 and not np.array_equal(a, c)
    assert abs(a.mean() - 2.0) < 0.2
