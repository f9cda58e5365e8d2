"""Sparse COO tensors: construction, coalescing, conversions and products against scipy.sparse
and torch (optional), gradients to the values and the dense operand, a GCN layer trained
against its dense twin, errors, and the same on OpenCL."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import ember
from ember import nn

IDX = [[0, 2, 1, 0, 3, 2], [2, 1, 0, 2, 3, 0]]     # (0, 2) twice, unsorted
VAL = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def _scipy():
    return sp.coo_matrix((VAL, (IDX[0], IDX[1])), shape=(4, 5)).tocsr()


def _devices():
    out = ["cpu"]
    try:
        if ember.opencl.is_available():
            out.append("opencl")
    except Exception:  # noqa: BLE001 - no OpenCL plug-in
        pass
    return out


@pytest.fixture(params=_devices())
def device(request):
    return request.param


def test_layout_is_a_property_of_an_ordinary_tensor(device):
    s = ember.sparse_coo_tensor(IDX, VAL, (4, 5), device=device)
    assert type(s) is ember.Tensor and s.layout is ember.sparse_coo and s.is_sparse
    assert ember.randn(2).layout is ember.strided and not ember.randn(2).is_sparse
    assert s.shape == (4, 5) and s.dtype == ember.float32 and s.device.type == device
    assert s.sparse_dim() == 2 and s.dense_dim() == 0 and s._nnz() == 6
    assert not s.is_coalesced()
    text = repr(s)
    assert text.startswith("tensor(indices=tensor([[") and "nnz=6" in text
    assert "layout=ember.sparse_coo" in text and "size=(4, 5)" in text


def test_coalesce_and_to_dense_match_scipy(device):
    s = ember.sparse_coo_tensor(IDX, VAL, (4, 5), device=device)
    np.testing.assert_allclose(s.to_dense().cpu().numpy(), _scipy().toarray())
    c = s.coalesce()
    ref = _scipy().tocoo()
    order = np.lexsort((ref.col, ref.row))
    assert c.is_coalesced() and c._nnz() == 5
    np.testing.assert_array_equal(c.indices().cpu().numpy(),
                                  np.stack([ref.row[order], ref.col[order]]))
    np.testing.assert_allclose(c.values().cpu().numpy(), ref.data[order])
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()
    assert (s._indices().cpu().numpy() == np.array(IDX)).all()


def test_to_sparse_round_trip_and_dense_dims(device):
    x = ember.tensor([[0.0, 1.5, 0.0], [2.0, 0.0, -3.0]], device=device)
    s = x.to_sparse()
    assert s.is_coalesced() and s._nnz() == 3
    assert ember.equal(s.to_dense().cpu(), x.cpu())
    rows = ember.tensor([[0.0, 0.0], [1.0, 2.0], [0.0, 0.0], [3.0, 0.0]], device=device)
    h = rows.to_sparse(1)          # sparse rows, dense columns
    assert h.sparse_dim() == 1 and h.dense_dim() == 1 and h._nnz() == 2
    assert ember.equal(h.to_dense().cpu(), rows.cpu())
    assert x.to_dense() is x


def test_spmm_matches_scipy_and_torch(device):
    s = ember.sparse_coo_tensor(IDX, VAL, (4, 5), device=device)
    d = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    dense = ember.tensor(d, device=device)
    want = _scipy() @ d
    for got in (ember.sparse.mm(s, dense), s @ dense, ember.mm(s, dense),
                ember.matmul(s, dense)):
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5, atol=1e-5)
    vec = ember.tensor(d[:, 0], device=device)
    np.testing.assert_allclose((s @ vec).cpu().numpy(), _scipy() @ d[:, 0], rtol=1e-5)
    left = ember.tensor(d.T[:2, :4].copy(), device=device)      # dense @ sparse
    np.testing.assert_allclose((left @ s).cpu().numpy(), d.T[:2, :4] @ _scipy().toarray(),
                               rtol=1e-5, atol=1e-5)
    torch = pytest.importorskip("torch")
    ts = torch.sparse_coo_tensor(IDX, VAL, (4, 5))
    np.testing.assert_allclose(ember.sparse.addmm(ember.ones(4, 3, device=device), s, dense,
                                                  beta=0.5, alpha=2.0).cpu().numpy(),
                               torch.sparse.addmm(torch.ones(4, 3), ts, torch.tensor(d),
                                                  beta=0.5, alpha=2.0).numpy(), rtol=1e-5)


def test_gradients_reach_values_and_the_dense_operand():
    idx = ember.tensor(IDX)
    values = ember.tensor(VAL, dtype=ember.float64, requires_grad=True)
    dense = ember.randn(5, 3, dtype=ember.float64, requires_grad=True)

    def f(v, d):
        return ember.sparse.mm(ember.sparse_coo_tensor(idx, v, (4, 5)), d).tanh()
    assert ember.autograd.gradcheck(f, (values, dense))
    assert ember.autograd.gradgradcheck(f, (values, dense))

    def g(v):
        return ember.sparse_coo_tensor(idx, v, (4, 5)).coalesce().to_dense()
    assert ember.autograd.gradcheck(g, (values,))


def test_a_sparse_leaf_gets_a_sparse_grad_like_torch():
    s = ember.sparse_coo_tensor(IDX, VAL, (4, 5), requires_grad=True)
    assert s.requires_grad
    d = ember.randn(5, 3)
    (s @ d).sum().backward()
    g = s.grad
    # torch.sparse.mm's rule: coalesced, masked at the leaf's pattern (ember applies it to
    # `s @ d` too, where torch's dense mm would fill every position)
    assert g.is_sparse and g.is_coalesced() and g._nnz() == 5
    want = d.sum(1).numpy()
    dense = np.zeros((4, 5), np.float32)
    dense[IDX[0], IDX[1]] = want[IDX[1]]
    np.testing.assert_allclose(g.to_dense().numpy(), dense, rtol=1e-6)
    torch = pytest.importorskip("torch")
    ts = torch.sparse_coo_tensor(IDX, VAL, (4, 5), requires_grad=True)
    torch.sparse.mm(ts, torch.tensor(d.numpy())).sum().backward()
    np.testing.assert_allclose(g.to_dense().numpy(), ts.grad.to_dense().numpy(), rtol=1e-6)


def test_gcn_layer_trains_like_its_dense_twin(device):
    ember.manual_seed(0)
    n, f_in, f_out = 6, 4, 3
    edges = [[0, 1, 1, 2, 3, 4, 5, 0, 2], [1, 0, 2, 1, 4, 3, 0, 0, 2]]
    adj = ember.sparse_coo_tensor(edges, [0.5] * len(edges[0]), (n, n), device=device)
    dense_adj = adj.to_dense()
    x = ember.randn(n, f_in, device=device)
    target = ember.randn(n, f_out, device=device)
    layers = [nn.Linear(f_in, f_out).to(device) for _ in range(2)]
    layers[1].load_state_dict(layers[0].state_dict())
    opts = [ember.optim.SGD(m.parameters(), lr=0.1) for m in layers]
    for _ in range(3):
        for m, opt, a in zip(layers, opts, (adj, dense_adj)):
            opt.zero_grad()
            loss = ((a @ m(x)).relu() - target).pow(2).mean()
            loss.backward()
            opt.step()
    for p, q in zip(layers[0].parameters(), layers[1].parameters()):
        assert (p - q).abs().max().item() < 1e-6


def test_arithmetic_keeps_the_layout():
    s = ember.sparse_coo_tensor(IDX, VAL, (4, 5))
    dense = _scipy().toarray()
    np.testing.assert_allclose((s * 2).to_dense().numpy(), dense * 2)
    np.testing.assert_allclose((s / 2).to_dense().numpy(), dense / 2)
    np.testing.assert_allclose((-s).to_dense().numpy(), -dense)
    both = s + s * 3
    assert both.is_sparse and both.is_coalesced()
    np.testing.assert_allclose(both.to_dense().numpy(), dense * 4)
    np.testing.assert_allclose((ember.ones(4, 5) + s).numpy(), dense + 1)
    assert ember.sparse.sum(s).item() == pytest.approx(sum(VAL))
    np.testing.assert_allclose(ember.sparse.sum(s, 1).numpy(), dense.sum(1))
    t = s.t()
    assert t.shape == (5, 4) and t.is_sparse
    np.testing.assert_allclose(t.to_dense().numpy(), dense.T)
    np.testing.assert_allclose(s.double().to_dense().numpy(), dense)
    c = s.clone()
    assert c.is_sparse and ember.equal(c.to_dense(), s.to_dense())
    mask = s.coalesce()
    masked = ember.ones(4, 5).sparse_mask(mask)
    assert masked._nnz() == 5 and masked.values().sum().item() == 5
    assert ember.equal(ember.indices_copy(mask), mask.indices())
    assert ember.equal(ember.values_copy(mask), mask.values())


def test_errors_name_the_op_and_the_problem():
    s = ember.sparse_coo_tensor(IDX, VAL, (4, 5))
    with pytest.raises(NotImplementedError, match="'sin'.*Sparse"):
        ember.sin(s)
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        ember.sparse_coo_tensor(IDX, VAL, (3, 5))
    with pytest.raises(RuntimeError, match="negative index"):
        ember.sparse_coo_tensor([[0, -1], [0, 0]], [1.0, 2.0], (2, 2))
    with pytest.raises(RuntimeError, match="same nnz"):
        ember.sparse_coo_tensor(IDX, VAL[:3], (4, 5))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ember.sparse.mm(s, ember.randn(4, 2))
    with pytest.raises(TypeError, match="to_dense"):
        s.numpy()
    with pytest.raises(RuntimeError, match="sparse COO tensor"):
        ember.randn(2, 2).coalesce()
    with pytest.raises(RuntimeError, match="vmap"):
        ember.func.vmap(lambda v: ember.sparse_coo_tensor(ember.tensor(IDX), v, (4, 5))
                        .to_dense())(ember.randn(2, 6))


def test_spmm_is_mm_for_sparse_and_strided():
    """torch.spmm (the GCN example's call): sparse COO or strided @ dense, gradients to the
    dense operand."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    a[a < 0.3] = 0
    b = rng.standard_normal((5, 3)).astype(np.float32)
    for sparse in (True, False):
        ea, ta = ember.tensor(a), torch.tensor(a)
        if sparse:
            ea, ta = ea.to_sparse(), ta.to_sparse()
        eb = ember.tensor(b, requires_grad=True)
        tb = torch.tensor(b, requires_grad=True)
        ember.spmm(ea, eb).sum().backward()
        torch.spmm(ta, tb).sum().backward()
        np.testing.assert_allclose(ember.spmm(ea, eb).detach().numpy(),
                                   torch.spmm(ta, tb).detach().numpy(), rtol=1e-5)
        np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-5)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        ember.spmm(ember.ones(3, 3), ember.ones(2, 2))


@pytest.mark.parametrize("indices", [[[0.0, 1.0]], [[0.5, 1.7]], [[True, False]]],
                         ids=["float", "fraction", "bool"])
def test_sparse_coo_tensor_casts_real_indices_like_torch(indices):
    torch = pytest.importorskip("torch")
    want = torch.sparse_coo_tensor(torch.tensor(indices), torch.tensor([1.0, 2.0]), (3,))
    got = ember.sparse_coo_tensor(ember.tensor(indices), ember.tensor([1.0, 2.0]), (3,))
    assert got._indices().dtype is ember.int64
    np.testing.assert_array_equal(got.to_dense().numpy(), want.to_dense().numpy())
