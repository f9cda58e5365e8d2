"""addcmul / addcdiv / lerp (+ in-place, Tensor methods) against numpy, torch's errors and
dtype rules (torch optional), on the CPU and OpenCL; the optimizers use the real ops."""
import numpy as np
import pytest

import ember

rng = np.random.default_rng(25)
DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])


def t(a, dev="cpu", **kw):
    return ember.tensor(a, device=dev, **kw)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_values_match_numpy(dev, dtype):
    a, b = rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal(4).astype(dtype)
    c = rng.uniform(0.5, 2, (3, 1)).astype(dtype)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ember.addcmul(t(a, dev), t(b, dev), t(c, dev), value=0.5).cpu()
                               .numpy(), a + 0.5 * b * c, **tol)
    np.testing.assert_allclose(ember.addcdiv(t(a, dev), t(b, dev), t(c, dev), value=-2).cpu()
                               .numpy(), a + -2 * b / c, **tol)
    w = rng.uniform(0, 1, (3, 4)).astype(dtype)
    end = np.broadcast_to(b, (3, 4))
    np.testing.assert_allclose(ember.lerp(t(a, dev), t(end, dev), t(w, dev)).cpu().numpy(),
                               a + w * (end - a), **tol)
    for weight in (0.0, 0.3, 0.7, 1.0):
        r = ember.lerp(t(a, dev), t(end, dev), weight).cpu().numpy()
        np.testing.assert_allclose(r, a + weight * (end - a), **tol)
    # exact at the ends (the two-sided formula)
    assert np.array_equal(ember.lerp(t(a, dev), t(end, dev), 1.0).cpu().numpy(), end)


@pytest.mark.parametrize("dev", DEVICES)
def test_inplace_and_methods(dev):
    a, b, c = (rng.standard_normal((2, 3)) for _ in range(3))
    x = t(a, dev)
    assert x.addcmul_(t(b, dev), t(c, dev), value=2) is x
    np.testing.assert_allclose(x.cpu().numpy(), a + 2 * b * c, rtol=1e-12)
    y = t(a, dev)
    y.addcdiv_(t(b, dev), t(np.abs(c) + 1, dev))
    np.testing.assert_allclose(y.cpu().numpy(), a + b / (np.abs(c) + 1), rtol=1e-12)
    z = t(a, dev)
    z.lerp_(t(b, dev), 0.25)
    np.testing.assert_allclose(z.cpu().numpy(), a + 0.25 * (b - a), rtol=1e-12)
    assert t(a, dev).addcmul(t(b, dev), t(c, dev)).shape == (2, 3)
    assert t(a, dev).lerp(t(b, dev), t(c, dev)).shape == (2, 3)


def test_int_and_promotion():
    i = t([1, 2, 3])
    assert ember.addcmul(i, i, i, value=2).tolist() == [3, 10, 21]
    f = ember.addcmul(t([1.0, 2.0]), t([1.0, 2.0], dtype=ember.float64), t([1, 2]))
    assert f.dtype is ember.float64


def test_errors():
    i = t([1, 2, 3])
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        ember.addcdiv(i, i, i)
    with pytest.raises(NotImplementedError, match="lerp_kernel_scalar"):
        ember.lerp(i, i, 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float32 for `end`"):
        ember.lerp(t([1.0]), t([1.0], dtype=ember.float64), 0.5)
    with pytest.raises(RuntimeError, match="addcmul"):
        ember.addcmul(t([1.0, 2.0, 3.0]), t([1.0, 2.0]), t([1.0]))
    with pytest.raises(TypeError, match="tensor1"):
        ember.addcmul(t([1.0]), [1.0], t([1.0]))
    x = t([[1.0, 2.0]])
    with pytest.raises(RuntimeError, match="addcmul_"):
        x.addcmul_(t([[1.0], [2.0]]), t([1.0]))


def test_gradients_and_node_names():
    a = t(rng.standard_normal((3, 4)), requires_grad=True)
    b = t(rng.standard_normal(4), requires_grad=True)
    c = t(rng.uniform(0.5, 2, (3, 1)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b, c: ember.addcmul(a, b, c, value=0.3),
                                    (a, b, c))
    assert ember.autograd.gradgradcheck(lambda a, b, c: ember.addcdiv(a, b, c, value=0.3),
                                        (a, b, c))
    assert ember.autograd.gradgradcheck(lambda a, b, c: ember.lerp(a, b.expand(3, 4), c),
                                        (a, b, c))
    assert type(ember.addcmul(a, b, c).grad_fn).__name__ == "AddcmulBackward0"
    assert type(ember.addcdiv(a, b, c).grad_fn).__name__ == "AddcdivBackward0"
    assert type(ember.lerp(a, b.expand(3, 4), 0.5).grad_fn).__name__ == "LerpBackward0"
    assert type(ember.lerp(a, b.expand(3, 4), c).grad_fn).__name__ == "LerpBackward1"


def test_matches_torch():
    torch = pytest.importorskip("torch")
    a, b, c = (rng.standard_normal((3, 4)) for _ in range(3))
    for name, kw in (("addcmul", {"value": 0.7}), ("addcdiv", {"value": -1.5})):
        e = getattr(ember, name)(t(a), t(b), t(c), **kw).numpy()
        r = getattr(torch, name)(torch.tensor(a), torch.tensor(b), torch.tensor(c), **kw).numpy()
        np.testing.assert_allclose(e, r, rtol=1e-13, atol=1e-14)
    w = rng.uniform(-0.5, 1.5, (3, 4))
    np.testing.assert_allclose(ember.lerp(t(a), t(b), t(w)).numpy(),
                               torch.lerp(torch.tensor(a), torch.tensor(b), torch.tensor(w))
                               .numpy(), rtol=1e-13, atol=1e-14)
    assert ember.addcmul(t([1.0]), t([1.0], dtype=ember.float64), t([1])).dtype.name == \
        str(torch.addcmul(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64),
                          torch.tensor([1])).dtype).split(".")[1]
