"""Tensor.set_ (every overload) and Tensor.__setstate__ against torch's behaviour."""
from __future__ import annotations

import numpy as np
import pytest

import ember


def test_set_shares_a_tensors_memory_and_geometry():
    a = ember.arange(6.0)
    b = ember.zeros(2)
    assert b.set_(a) is b
    assert b.shape == (6,) and b.data_ptr() == a.data_ptr()
    a.mul_(2)
    assert b.tolist() == a.tolist()
    c = ember.zeros(1).set_(a, 1, (2, 2), (2, 1))
    assert c.tolist() == [[2.0, 4.0], [6.0, 8.0]]


def test_set_from_a_storage_checks_bounds_and_set_empty():
    a = ember.arange(6.0)
    c = ember.zeros(1).set_(a.untyped_storage(), 1, (2, 2), (2, 1))
    assert c.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert ember.zeros(3).set_(a.untyped_storage()).shape == (6,)
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 24"):
        ember.zeros(2).set_(a.untyped_storage(), 3, (2, 2))
    assert ember.ones(3).set_().shape == (0,)
    with pytest.raises(RuntimeError, match="dtype"):
        ember.zeros(2).set_(ember.arange(3))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        ember.zeros(2, requires_grad=True).set_(ember.zeros(3))


def test_matches_torch():
    torch = pytest.importorskip("torch")
    ta, ea = torch.arange(12.0), ember.arange(12.0)
    t = torch.zeros(1).set_(ta.untyped_storage(), 2, (3, 2), (1, 3))
    e = ember.zeros(1).set_(ea.untyped_storage(), 2, (3, 2), (1, 3))
    np.testing.assert_array_equal(e.numpy(), t.numpy())


def test_setstate_legacy_forms():
    a = ember.arange(6.0)
    x = ember.zeros(0)
    x.__setstate__((a, 0, (3,), (2,)))
    assert x.tolist() == [0.0, 2.0, 4.0]
    y = ember.zeros(2)
    y.__setstate__((True, None, None))
    assert y.requires_grad
    z = ember.zeros(0)
    z.__setstate__((a, None, None, False, None))
    assert z.tolist() == a.tolist() and not z.requires_grad
