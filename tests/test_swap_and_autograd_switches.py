"""utils.swap_tensors and autograd.is/set_multithreading_enabled, against torch."""
from __future__ import annotations

import threading
import weakref

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def test_swap_tensors_exchanges_contents_like_torch():
    for lib in (ember, torch):
        a = lib.ones(2, requires_grad=True)
        b = lib.nn.Parameter(lib.zeros(3, dtype=lib.float64))
        b.tag = "param"
        ia, ib = id(a), id(b)
        lib.utils.swap_tensors(a, b)
        assert id(a) == ia and id(b) == ib
        assert type(a) is lib.nn.Parameter and type(b) is lib.Tensor
        assert a.tag == "param" and not hasattr(b, "tag")
        assert tuple(a.shape) == (3,) and a.dtype == lib.float64
        np.testing.assert_array_equal(b.detach().numpy(), np.ones(2))
        assert a.requires_grad and b.requires_grad


def test_swap_tensors_refuses_weakrefs_like_torch():
    for lib in (ember, torch):
        a, b = lib.ones(1), lib.zeros(1)
        ref = weakref.ref(a)
        with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref"):
            lib.utils.swap_tensors(a, b)
        del ref


def test_swapped_leaf_gets_its_own_gradient():
    for lib in (ember, torch):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([5.0, 7.0], requires_grad=True)
        lib.utils.swap_tensors(a, b)
        (a * a).sum().backward()
        np.testing.assert_array_equal(a.grad.numpy(), [10.0, 14.0])
        assert b.grad is None


def test_backward_through_a_graph_recorded_before_the_swap_raises():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3).sum()
    other = ember.tensor([0.0, 0.0], requires_grad=True)
    ember.utils.swap_tensors(x, other)
    with pytest.raises(RuntimeError, match="poisoned by swap_tensors"):
        y.backward()


def test_multithreading_switch_like_torch():
    for autograd in (ember.autograd, torch.autograd):
        assert autograd.is_multithreading_enabled() is True
        with autograd.set_multithreading_enabled(False):
            assert autograd.is_multithreading_enabled() is False
            seen = []
            t = threading.Thread(target=lambda: seen.append(autograd.is_multithreading_enabled()))
            t.start()
            t.join()
            assert seen == [True]  # per thread
        assert autograd.is_multithreading_enabled() is True
        autograd.set_multithreading_enabled(False)
        assert autograd.is_multithreading_enabled() is False
        autograd.set_multithreading_enabled(True)


def test_backward_unchanged_with_multithreading_off():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    with ember.autograd.set_multithreading_enabled(False):
        (x.exp()).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
