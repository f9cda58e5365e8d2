"""scatter_reduce and index_reduce against torch: every reduction, with and without the input's
own values, partial index extents, integer dtypes, gradients."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
rng = np.random.default_rng(5)
REDUCES = ["sum", "prod", "mean", "amax", "amin"]


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    x = rng.standard_normal((4, 5))
    src = rng.standard_normal((3, 4))  # torch's backward fails for a src larger than index
    idx = rng.integers(0, 5, (3, 4))
    xe, se = ember.tensor(x, requires_grad=True), ember.tensor(src, requires_grad=True)
    xt, st = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
    a = xe.scatter_reduce(1, ember.tensor(idx), se, reduce, include_self=include_self)
    b = xt.scatter_reduce(1, torch.tensor(idx), st, reduce, include_self=include_self)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12)
    w = rng.standard_normal(a.shape)
    (a * ember.tensor(w)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(se.grad.numpy(), st.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_src_larger_than_index(reduce):
    x, src = rng.standard_normal((4, 5)), rng.standard_normal((3, 7))
    idx = rng.integers(0, 5, (2, 4))
    a = ember.tensor(x).scatter_reduce(1, ember.tensor(idx), ember.tensor(src), reduce)
    b = torch.tensor(x).scatter_reduce(1, torch.tensor(idx), torch.tensor(src), reduce)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_ints_dim0(reduce):
    x = rng.integers(-5, 5, (4, 3))
    src = rng.integers(-5, 5, (6, 3))
    idx = rng.integers(0, 4, (6, 3))
    a = ember.scatter_reduce(ember.tensor(x), 0, ember.tensor(idx), ember.tensor(src), reduce)
    b = torch.scatter_reduce(torch.tensor(x), 0, torch.tensor(idx), torch.tensor(src), reduce)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    x = rng.standard_normal((5, 3))
    src = rng.standard_normal((4, 3))
    idx = np.array([0, 4, 0, 2])
    a = ember.tensor(x).index_reduce(0, ember.tensor(idx), ember.tensor(src), reduce,
                                     include_self=include_self)
    b = torch.tensor(x).index_reduce(0, torch.tensor(idx), torch.tensor(src), reduce,
                                     include_self=include_self)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    y = ember.tensor(x)
    assert y.index_reduce_(0, ember.tensor(idx), ember.tensor(src), reduce) is y


def test_errors():
    x = ember.zeros(3, 3)
    with pytest.raises(RuntimeError, match="reduce argument must be either"):
        x.scatter_reduce(0, ember.zeros(3, 3, dtype=ember.int64), x, "max")
    with pytest.raises(RuntimeError, match="Expected dtype int64 for index"):
        x.scatter_reduce(0, ember.zeros(3, 3, dtype=ember.int32), x, "sum")
    with pytest.raises(IndexError, match="same number of elements"):
        x.index_reduce(0, ember.tensor([0, 1]), x, "amax")
