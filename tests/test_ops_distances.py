"""cdist (direct and matrix-product paths, every p case), pdist, dist and the nn distance
functions/modules against numpy (and torch when installed); gradients, double backward, errors,
CPU and OpenCL."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

rng = np.random.default_rng(9)
DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])
PS = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")]


def ref_cdist(a, b, p):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(a.dtype)
    if np.isinf(p):
        return d.max(-1)
    return (d ** p).sum(-1) ** (1 / p)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("p", PS)
def test_cdist_values(dev, p):
    a, b = rng.standard_normal((3, 1, 6, 4)), rng.standard_normal((2, 5, 4))
    b[0, 0] = a[0, 0, 0]
    y = ember.cdist(ember.tensor(a, device=dev), ember.tensor(b, device=dev), p=p,
                    compute_mode="donot_use_mm_for_euclid_dist")
    assert y.shape == (3, 2, 6, 5)
    np.testing.assert_allclose(y.cpu().numpy(), ref_cdist(a, b, p), rtol=1e-10, atol=1e-12)


def test_cdist_mm_path_and_grads():
    a = ember.tensor(rng.standard_normal((30, 3)), requires_grad=True)
    b = ember.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    mm = ember.cdist(a, b)  # P > 25: the matrix-product path
    direct = ember.cdist(a, b, compute_mode="donot_use_mm_for_euclid_dist")
    np.testing.assert_allclose(mm.detach().numpy(), direct.detach().numpy(), rtol=1e-8)
    assert type(direct.grad_fn.next_functions[0][0]).__name__ == "CdistBackward0"
    small = (ember.tensor(rng.standard_normal((2, 4, 3)), requires_grad=True),
             ember.tensor(rng.standard_normal((2, 3, 3)), requires_grad=True))
    for p in (1.0, 1.5, 2.0, 3.0):
        assert ember.autograd.gradgradcheck(lambda x, y: ember.cdist(x, y, p=p), small)


@pytest.mark.parametrize("dev", DEVICES)
def test_pdist_dist_and_nn(dev):
    x = rng.standard_normal((5, 3))
    i, j = np.triu_indices(5, 1)
    np.testing.assert_allclose(ember.pdist(ember.tensor(x, device=dev), 1.5).cpu().numpy(),
                               ref_cdist(x, x, 1.5)[i, j], rtol=1e-12)
    y = rng.standard_normal((5, 3))
    assert ember.dist(ember.tensor(x, device=dev), ember.tensor(y, device=dev)).item() == \
        pytest.approx(np.linalg.norm(x - y))
    pd = nn.PairwiseDistance(p=1)(ember.tensor(x, device=dev), ember.tensor(y, device=dev))
    np.testing.assert_allclose(pd.cpu().numpy(), np.abs(x - y + 1e-6).sum(-1), rtol=1e-12)
    cs = nn.CosineSimilarity(dim=1)(ember.tensor(x, device=dev), ember.tensor(y, device=dev))
    ref = (x * y).sum(1) / np.linalg.norm(x, axis=1) / np.linalg.norm(y, axis=1)
    np.testing.assert_allclose(cs.cpu().numpy(), ref, rtol=1e-12)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: ember.cdist(ember.rand(3, 2), ember.rand(3, 2), p=-1), RuntimeError, "non-negative"),
    (lambda: ember.cdist(ember.rand(3), ember.rand(3, 3)), RuntimeError, "at least 2D"),
    (lambda: ember.cdist(ember.rand(3, 3), ember.rand(2, 2)), RuntimeError, "number of columns"),
    (lambda: ember.cdist(ember.rand(3, 3), ember.rand(3, 3), compute_mode="foo"), ValueError,
     "not a valid value"),
    (lambda: ember.cdist(ember.ones(3, 3, dtype=ember.int64), ember.ones(3, 3, dtype=ember.int64)),
     RuntimeError, "floating-point"),
    (lambda: ember.pdist(ember.rand(3, 4, 5)), RuntimeError, "2D tensors"),
])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_matches_torch():
    torch = pytest.importorskip("torch")
    a, b = rng.standard_normal((2, 30, 3)), rng.standard_normal((2, 20, 3))
    for p in PS:
        for mode in ("use_mm_for_euclid_dist_if_necessary", "donot_use_mm_for_euclid_dist"):
            at, bt = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
            t = torch.cdist(at, bt, p=p, compute_mode=mode)
            t.sum().backward()
            for dev in DEVICES:
                ae = ember.tensor(a, device=dev, requires_grad=True)
                be = ember.tensor(b, device=dev, requires_grad=True)
                e = ember.cdist(ae, be, p=p, compute_mode=mode)
                e.sum().backward()
                np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().numpy(),
                                           rtol=1e-7, atol=1e-7)
                np.testing.assert_allclose(ae.grad.cpu().numpy(), at.grad.numpy(), atol=1e-7)
                np.testing.assert_allclose(be.grad.cpu().numpy(), bt.grad.numpy(), atol=1e-7)
