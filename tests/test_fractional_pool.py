"""Fractional max pooling against torch (values and indices given the same samples, 2-D and
3-D, batched and not, ratios), gradients by finite differences, modules, errors, OpenCL."""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn

CASES = [(2, (2, 3, 11, 9), (3, 2), dict(output_size=(5, 4))),
         (2, (3, 10, 10), 2, dict(output_ratio=(0.5, 0.5))),
         (3, (2, 2, 7, 8, 9), (2, 3, 2), dict(output_size=(3, 4, 5))),
         (3, (1, 6, 6, 6), 2, dict(output_ratio=(0.5, 0.6, 0.7)))]


def _samples(shape, nsp, seed=1):
    batch = 1 if len(shape) == nsp + 1 else shape[0]
    channels = shape[0] if len(shape) == nsp + 1 else shape[1]
    return np.random.default_rng(seed).random((batch, channels, nsp)).astype(np.float32)


@pytest.mark.parametrize("nsp, shape, k, kw", CASES)
def test_values_and_indices_match_torch(nsp, shape, k, kw):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    s = _samples(shape, nsp)
    name = f"fractional_max_pool{nsp}d"
    ve, ie = getattr(F, name)(ember.tensor(x), k, return_indices=True,
                              _random_samples=ember.tensor(s), **kw)
    vt, it = getattr(torch.nn.functional, name)(torch.tensor(x), k, return_indices=True,
                                                _random_samples=torch.tensor(s), **kw)
    np.testing.assert_array_equal(ve.numpy(), vt.numpy())
    np.testing.assert_array_equal(ie.numpy(), it.numpy())


def test_gradients_and_modules():
    x = ember.randn(1, 2, 7, 6, dtype=ember.float64, requires_grad=True)
    s = ember.tensor(_samples((1, 2, 7, 6), 2), dtype=ember.float64)
    assert ember.autograd.gradcheck(
        lambda t: F.fractional_max_pool2d(t, 2, output_size=(3, 3), _random_samples=s), (x,))
    pool = nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)
    values, idx = pool(ember.randn(2, 3, 12, 12))
    assert values.shape == (2, 3, 6, 6) and idx.dtype == ember.int64
    unpooled = F.max_unpool2d(values, idx, 3, stride=2, output_size=(12, 12))
    assert unpooled.shape == (2, 3, 12, 12)
    assert nn.FractionalMaxPool3d(2, output_size=2)(ember.randn(1, 1, 5, 5, 5)).shape == \
        (1, 1, 2, 2, 2)


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="output size, or a pooling ratio"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(RuntimeError, match="too large relative to input"):
        F.fractional_max_pool2d(ember.randn(1, 1, 4, 4), 3, output_size=3)
    with pytest.raises(RuntimeError, match="_random_samples of shape"):
        F.fractional_max_pool2d(ember.randn(1, 1, 6, 6), 2, output_size=3,
                                _random_samples=ember.rand(1, 1, 3))


def test_opencl_matches_cpu():
    try:
        if not ember.opencl.is_available():
            pytest.skip("no OpenCL device")
    except Exception:  # noqa: BLE001
        pytest.skip("no OpenCL plug-in")
    x = ember.randn(2, 3, 9, 9)
    s = ember.rand(2, 3, 2)
    want = F.fractional_max_pool2d(x, 2, output_size=4, _random_samples=s, return_indices=True)
    got = F.fractional_max_pool2d(x.to("opencl"), 2, output_size=4,
                                  _random_samples=s.to("opencl"), return_indices=True)
    assert ember.equal(got[0].cpu(), want[0]) and ember.equal(got[1].cpu(), want[1])
