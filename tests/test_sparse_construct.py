"""ember.sparse.spdiags (against torch and scipy.sparse.spdiags) and
sparse.check_sparse_tensor_invariants (against torch's)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("diag_shape,offsets,shape", [((3, 3), [0, -1, 2], (3, 3)),
                                                      ((1, 4), [0], (4, 4)),
                                                      ((3, 5), [1, -2, 0], (5, 5)),
                                                      ((2, 4), [-1, 1], (3, 5)),
                                                      ((2, 6), [3, -3], (4, 6))])
def test_spdiags_matches_torch_and_scipy(diag_shape, offsets, shape):
    diags = np.arange(1.0, 1 + np.prod(diag_shape)).reshape(diag_shape)
    mine = ember.sparse.spdiags(ember.tensor(diags), ember.tensor(offsets), shape)
    theirs = torch.sparse.spdiags(torch.tensor(diags), torch.tensor(offsets), shape)
    assert mine.layout == ember.sparse_coo
    np.testing.assert_array_equal(mine.to_dense().numpy(), theirs.to_dense().numpy())
    np.testing.assert_array_equal(mine.to_dense().numpy(),
                                  scipy.sparse.spdiags(diags, offsets, *shape).toarray())
    np.testing.assert_array_equal(mine.coalesce().indices().numpy(),
                                  theirs.coalesce().indices().numpy())


def test_spdiags_outside_the_columns_follows_scipy():
    # torch 2.13 stores (3, 2) in a 4 x 2 matrix here (an index past the last column); ember
    # keeps scipy's rule: entries outside the matrix are dropped
    diags = np.arange(1.0, 7).reshape(2, 3)
    mine = ember.sparse.spdiags(ember.tensor(diags), ember.tensor([-1, 1]), (4, 2))
    np.testing.assert_array_equal(mine.to_dense().numpy(),
                                  scipy.sparse.spdiags(diags, [-1, 1], 4, 2).toarray())


def test_spdiags_gradient_reaches_the_diagonals():
    d = ember.ones(2, 3, requires_grad=True)
    ember.sparse.spdiags(d, ember.tensor([0, 1]), (3, 3)).to_dense().sum().backward()
    np.testing.assert_array_equal(d.grad.numpy(), [[1, 1, 1], [0, 1, 1]])


@pytest.mark.parametrize("diags,offsets,shape", [
    ("m", [0, 0, 1], (3, 3)), ("m", [0, 1], (3, 3)), ("m", [[0, 1, 2]], (3, 3)),
    ("m", [0, 1, 2], (3, 3, 1)), ("m", [0.0, 1.0, 2.0], (3, 3))])
def test_spdiags_errors_match_torch(diags, offsets, shape):
    d = np.arange(1.0, 10).reshape(3, 3)
    with pytest.raises(RuntimeError) as theirs:
        torch.sparse.spdiags(torch.tensor(d), torch.tensor(offsets), shape)
    with pytest.raises(RuntimeError) as mine:
        ember.sparse.spdiags(ember.tensor(d), ember.tensor(offsets), shape)
    assert str(mine.value) == str(theirs.value)


def _uncoalesced(lib, **kw):
    return lib.sparse_coo_tensor(lib.tensor([[2, 0]]), lib.tensor([1.0, 2.0]), (3,),
                                 is_coalesced=True, **kw)


@pytest.mark.filterwarnings("ignore:Sparse invariant checks")
def test_check_sparse_tensor_invariants_like_torch():
    for lib in (ember, torch):
        switch = lib.sparse.check_sparse_tensor_invariants
        assert switch.is_enabled() is False
        _uncoalesced(lib)  # not checked by default
        with pytest.raises(RuntimeError, match="cannot set is_coalesced to true"):
            _uncoalesced(lib, check_invariants=True)
        with switch():
            assert switch.is_enabled() is True
            with pytest.raises(RuntimeError, match="cannot set is_coalesced to true"):
                _uncoalesced(lib)
            _uncoalesced(lib, check_invariants=False)  # the argument overrides the switch
        assert switch.is_enabled() is False
        switch.enable()
        assert switch.is_enabled()
        switch.disable()

        @switch()
        def build():
            return _uncoalesced(lib)
        with pytest.raises(RuntimeError, match="cannot set is_coalesced to true"):
            build()
        ctx = switch()
        with ctx:
            with pytest.raises(RuntimeError, match="already activated"):
                ctx.__enter__()
        assert not switch.is_enabled()
