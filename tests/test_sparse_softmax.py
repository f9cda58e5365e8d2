"""ember.sparse.softmax / log_softmax against torch.sparse's on random COO tensors (sparse and
dense dims, duplicates, empty slices), values and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _random_coo(shape, sparse_dims, nnz, seed):
    rng = np.random.default_rng(seed)
    idx = np.stack([rng.integers(0, shape[d], nnz) for d in range(sparse_dims)])
    vals = rng.standard_normal((nnz, *shape[sparse_dims:]))
    return idx, vals


CASES = [((4, 5), 2, 9, 0), ((4, 5), 2, 9, 1), ((3, 4, 2), 2, 7, 0), ((3, 4, 2), 2, 7, 2),
         ((3, 4, 2), 1, 3, 0), ((3, 4, 2), 1, 3, 2), ((6,), 1, 4, 0), ((2, 3, 4), 3, 10, 1),
         ((2, 3), 2, 0, 1)]


@pytest.mark.parametrize("shape,sparse_dims,nnz,dim", CASES)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_values_and_grads_match_torch(shape, sparse_dims, nnz, dim, name):
    idx, vals = _random_coo(shape, sparse_dims, nnz, seed=hash((shape, dim)) % 1000)
    tv = torch.tensor(vals, requires_grad=True)
    ev = ember.tensor(vals, requires_grad=True)
    theirs = getattr(torch.sparse, name)(torch.sparse_coo_tensor(torch.tensor(idx), tv, shape),
                                         dim)
    mine = getattr(ember.sparse, name)(ember.sparse_coo_tensor(ember.tensor(idx), ev, shape), dim)
    assert mine.layout == ember.sparse_coo and tuple(mine.shape) == shape
    t_dense = theirs.to_dense().detach().numpy()
    e_dense = mine.to_dense().detach().numpy()
    np.testing.assert_allclose(e_dense, t_dense, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(mine.coalesce().indices().numpy(),
                                  theirs.coalesce().indices().numpy())
    if nnz:
        weights = np.random.default_rng(3).standard_normal(theirs.coalesce().values().shape)
        (theirs.coalesce().values() * torch.tensor(weights)).sum().backward()
        (mine.coalesce().values() * ember.tensor(weights)).sum().backward()
        np.testing.assert_allclose(ev.grad.numpy(), tv.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_dtype_argument_and_errors():
    s = ember.sparse_coo_tensor(ember.tensor([[0, 1]]), ember.tensor([1.0, 2.0]), (3,))
    assert ember.sparse.softmax(s, 0, dtype=ember.float64).dtype == ember.float64
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.sparse.softmax(s, 1)
    with pytest.raises(RuntimeError, match="expected a sparse COO tensor"):
        ember.sparse.log_softmax(ember.ones(3), 0)
