"""Compositions of ember ops against torch: addbmm/addr/adjoint, nextafter/frexp,
unravel_index, quantile/nanquantile, unique_consecutive, nonzero_static, histogram, gradient,
fill_diagonal_, the protocol methods and the random fills' distributions."""
import copy

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
rng = np.random.default_rng(11)


def E(a, **kw):
    return ember.tensor(a, **kw)


def T(a, **kw):
    return torch.tensor(a, **kw)


def close(a, b, **kw):
    a = a if isinstance(a, (tuple, list)) else [a]
    b = b if isinstance(b, (tuple, list)) else [b]
    assert len(a) == len(b)
    for x, y in zip(a, b):
        xn, yn = x.detach().numpy(), y.detach().numpy()
        assert xn.shape == yn.shape and str(xn.dtype) == str(yn.dtype), (xn, yn)
        np.testing.assert_allclose(xn, yn, equal_nan=True, **kw)


def test_products():
    m, b1, b2 = rng.standard_normal((3, 4)), rng.standard_normal((5, 3, 2)), \
        rng.standard_normal((5, 2, 4))
    close(ember.addbmm(E(m), E(b1), E(b2), beta=0.5, alpha=2),
          torch.addbmm(T(m), T(b1), T(b2), beta=0.5, alpha=2), rtol=1e-12)
    v1, v2 = rng.standard_normal(3), rng.standard_normal(4)
    close(E(m).addr(E(v1), E(v2), alpha=3), T(m).addr(T(v1), T(v2), alpha=3), rtol=1e-12)
    nan = np.full((3, 4), np.nan)
    close(ember.addr(E(nan), E(v1), E(v2), beta=0), torch.addr(T(nan), T(v1), T(v2), beta=0))
    x = rng.standard_normal((2, 3, 4))
    close(E(x).adjoint(), T(x).adjoint())


def test_nextafter_and_frexp():
    x = np.array([0.0, 1.0, -1.0, 2.5, 1e-310, np.inf, np.nan, 3.0])
    y = np.array([1.0, 2.0, 0.0, -np.inf, 0.0, 0.0, 1.0, 3.0])
    for dt in (np.float64, np.float32):
        close(ember.nextafter(E(x.astype(dt)), E(y.astype(dt))),
              torch.nextafter(T(x.astype(dt)), T(y.astype(dt))))
        z = np.array([0.0, 1.0, -3.0, 0.5, 1024.0, 7e-3, np.inf, -np.inf, np.nan, 1e-40]
                     ).astype(dt)
        close(ember.frexp(E(z)), torch.frexp(T(z)))


def test_unravel_index_and_nonzero_static():
    idx = np.array([[0, 5], [23, -1]])
    close(ember.unravel_index(E(idx), (2, 3, 4)), torch.unravel_index(T(idx), (2, 3, 4)))
    with pytest.raises(ValueError, match="must be in range"):
        ember.unravel_index(E(np.array([24])), (2, 3, 4))
    x = np.array([[0, 1, 0], [2, 0, 3]])
    for size in (2, 5):
        close(ember.nonzero_static(E(x), size=size),
              torch.nonzero_static(T(x), size=size, fill_value=-1))


@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantiles(interp):
    x = rng.standard_normal((4, 7))
    q = np.array([0.0, 0.3, 0.5, 0.95, 1.0])
    close(ember.quantile(E(x), E(q), dim=1, keepdim=True, interpolation=interp),
          torch.quantile(T(x), T(q), dim=1, keepdim=True, interpolation=interp), rtol=1e-12)
    close(ember.quantile(E(x), 0.4, interpolation=interp),
          torch.quantile(T(x), 0.4, interpolation=interp), rtol=1e-12)
    xn = x.copy()
    xn[1, 2] = xn[2, :] = np.nan
    close(ember.nanquantile(E(xn), E(q), dim=1, interpolation=interp),
          torch.nanquantile(T(xn), T(q), dim=1, interpolation=interp), rtol=1e-12)
    close(ember.quantile(E(xn), 0.5, dim=0), torch.quantile(T(xn), 0.5, dim=0))
    xe = E(x, requires_grad=True)
    xt = T(x, requires_grad=True)
    ember.quantile(xe, 0.3, dim=0).sum().backward()
    torch.quantile(xt, 0.3, dim=0).sum().backward()
    close(xe.grad, xt.grad, rtol=1e-12)


def test_unique_consecutive():
    x = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    close(ember.unique_consecutive(E(x), return_inverse=True, return_counts=True),
          torch.unique_consecutive(T(x), return_inverse=True, return_counts=True))
    m = np.array([[1, 1, 2, 2], [3, 3, 4, 5], [3, 3, 4, 5], [0, 0, 0, 0]])
    close(ember.unique_consecutive(E(m), return_counts=True, dim=0),
          torch.unique_consecutive(T(m), return_counts=True, dim=0))
    close(ember.unique_consecutive(E(m), dim=1), torch.unique_consecutive(T(m), dim=1))


def test_histogram_and_gradient():
    x = rng.standard_normal(50)
    w = rng.random(50)
    close(ember.histogram(E(x), 6), torch.histogram(T(x), 6), rtol=1e-12)
    close(ember.histogram(E(x), 4, range=(-1.0, 1.0), weight=E(w), density=True),
          torch.histogram(T(x), 4, range=(-1.0, 1.0), weight=T(w), density=True), rtol=1e-12)
    edges = np.array([-2.0, -0.5, 0.0, 3.0])
    close(ember.histogram(E(x), E(edges)), torch.histogram(T(x), T(edges)), rtol=1e-12)
    y = rng.standard_normal((5, 6))
    for order in (1, 2):
        close(ember.gradient(E(y), spacing=0.5, edge_order=order),
              torch.gradient(T(y), spacing=0.5, edge_order=order), rtol=1e-12)
        c = np.cumsum(rng.random(6)) + 0.1
        close(ember.gradient(E(y), spacing=(E(c),), dim=1, edge_order=order),
              torch.gradient(T(y), spacing=(T(c),), dim=1, edge_order=order), rtol=1e-10)


def test_fill_diagonal_and_protocols():
    for shape, wrap in (((3, 5), False), ((7, 3), True), ((7, 3), False), ((3, 3, 3), False)):
        a, b = ember.zeros(*shape), torch.zeros(*shape)
        a.fill_diagonal_(2.5, wrap=wrap)
        b.fill_diagonal_(2.5, wrap=wrap)
        close(a, b)
    x = E(np.array([1.0, 2.0, 3.0]))
    assert 2.0 in x and 5 not in x and E(np.array(3.0)) in x
    assert [float(v) for v in reversed(x)] == [3.0, 2.0, 1.0]
    assert x.__long__ if False else int(E(np.array(7.9)).__long__()) == 7
    leaf = E(np.ones(2), requires_grad=True)
    dup = copy.deepcopy(leaf)
    assert dup.requires_grad and dup is not leaf
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(leaf * 2)
    y = E(np.array([-2.0, 0.5, 3.0]))
    y.clamp_min_(0.0).clamp_max_(1.0)
    assert y.tolist() == [0.0, 0.5, 1.0]


def test_random_fills():
    ember.manual_seed(0)
    ln = ember.empty(40000, dtype=ember.float64).log_normal_(0.5, 0.3).numpy()
    assert abs(np.log(ln).mean() - 0.5) < 0.01 and abs(np.log(ln).std() - 0.3) < 0.01
    c = ember.empty(40000, dtype=ember.float64).cauchy_(1.0, 2.0).numpy()
    assert abs(np.median(c) - 1.0) < 0.1
    g = ember.empty(40000).geometric_(0.25).numpy()
    assert g.min() >= 1 and abs(g.mean() - 4.0) < 0.1


def test_inplace_view_methods():
    base = ember.arange(12.0)
    x = base.view(3, 1, 4)
    assert x.squeeze_() is x and x.shape == (3, 4)
    assert x.unsqueeze_(0).shape == (1, 3, 4)
    x.squeeze_(0).t_()
    assert x.shape == (4, 3) and x.stride() == (1, 4)
    np.testing.assert_array_equal(x.numpy(), np.arange(12.0).reshape(3, 4).T)
    x.transpose_(0, 1).swapaxes_(0, 1).swapdims_(1, 0)
    assert x.shape == (3, 4)
    x.as_strided_((2, 2), (1, 2), 1)
    np.testing.assert_array_equal(x.numpy(), [[1.0, 3.0], [2.0, 4.0]])
    x.add_(100)  # still the same storage
    assert base[1].item() == 101.0
    leaf = ember.ones(2, 1, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.squeeze_()
    with ember.no_grad():
        leaf.squeeze_()
    assert leaf.shape == (2,)


@pytest.mark.parametrize("dev", ["cpu"] + (["opencl"] if ember.opencl.is_available() else []))
def test_resize(dev):
    x, t = ember.arange(6.0, device=dev), torch.arange(6.0)
    assert x.resize_(2, 2) is x
    t.resize_(2, 2)
    np.testing.assert_array_equal(x.cpu().numpy(), t.numpy())
    t = torch.arange(6.0).clone()  # torch's arange storage is not resizable
    t.resize_(2, 2)
    x.resize_((3, 3)), t.resize_((3, 3))
    np.testing.assert_array_equal(x.cpu().numpy().reshape(-1)[:6], t.numpy().reshape(-1)[:6])
    y = ember.arange(6.0, device=dev)[1:]
    y.resize_(2, 2)
    np.testing.assert_array_equal(y.cpu().numpy(), [[1.0, 2.0], [3.0, 4.0]])
    z = ember.zeros(2, 3, device=dev)
    z.resize_as_(ember.ones(3, 2))
    assert z.shape == (3, 2)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        ember.ones(2, requires_grad=True).resize_(3)
    with pytest.warns(UserWarning, match="deprecated"):
        assert ember.ones(2, 3).resize(3, 2).shape == (3, 2)


def test_histogramdd():
    pts = rng.standard_normal((200, 3))
    w = rng.random(200)
    a = ember.histogramdd(E(pts), [3, 4, 2])
    b = torch.histogramdd(T(pts), [3, 4, 2])
    close(a.hist, b.hist, rtol=1e-12)
    close(list(a.bin_edges), list(b.bin_edges), rtol=1e-12)
    a = ember.histogramdd(E(pts[:, :2]), 3, range=[-1.0, 1.0, -2.0, 0.5], weight=E(w[:200]),
                          density=True)
    b = torch.histogramdd(T(pts[:, :2]), 3, range=[-1.0, 1.0, -2.0, 0.5], weight=T(w[:200]),
                          density=True)
    close(a.hist, b.hist, rtol=1e-12)
    edges = [E(np.array([-3.0, 0.0, 3.0])), E(np.array([-1.0, 0.0, 0.5, 2.0]))]
    a = ember.histogramdd(E(pts[:, :2]), edges)
    b = torch.histogramdd(T(pts[:, :2]), [T(np.array([-3.0, 0.0, 3.0])),
                                          T(np.array([-1.0, 0.0, 0.5, 2.0]))])
    close(a.hist, b.hist)
