"""mse_loss, smooth_l1_loss and huber_loss as torch's ops: one node named as torch names it,
and values, gradients and double gradients equal to torch's, at the kinks too (a difference of
exactly 0 or exactly ±beta/±delta), for every reduction and for a broadcast target."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:Using a target size")

# differences that sit on each piece and on every kink of the two piecewise losses
KINKS = np.array([[-2.0, -1.0, -0.5, 0.0], [0.25, 0.5, 1.0, 3.0]])
LOSSES = [
    ("mse_loss", {}, "MseLossBackward0"),
    ("smooth_l1_loss", {"beta": 1.0}, "SmoothL1LossBackward0"),
    ("smooth_l1_loss", {"beta": 0.5}, "SmoothL1LossBackward0"),
    ("huber_loss", {"delta": 1.0}, "HuberLossBackward0"),
    ("huber_loss", {"delta": 0.5}, "HuberLossBackward0"),
]


def _grads(lib, name, kw, x, t, reduction, t_shape):
    """loss, d loss / d (x, t), and d (sum of x's gradient squared) / d (x, t)."""
    xs = lib.tensor(x, requires_grad=True)
    ts = lib.tensor(t.reshape(t_shape), requires_grad=True)
    loss = getattr(lib.nn.functional, name)(xs, ts, reduction=reduction, **kw)
    node = type(loss.grad_fn).__name__ if lib is torch else loss.grad_fn.name()
    gx, gt = lib.autograd.grad(loss.sum() if reduction == "none" else loss, (xs, ts),
                               create_graph=True)
    ggx, ggt = lib.autograd.grad((gx * gx).sum() + (gt * gx).sum(), (xs, ts),
                                 allow_unused=True)
    out = [loss, gx, gt, ggx, ggt]
    return node, [None if v is None else v.detach().numpy() for v in out]


@pytest.mark.parametrize("name,kw,node", LOSSES)
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("t_shape", [(2, 4), (4,)], ids=["same", "broadcast"])
def test_matches_torch_at_kinks(name, kw, node, reduction, t_shape):
    rng = np.random.default_rng(0)
    t = rng.normal(size=t_shape).astype(np.float64)
    x = np.broadcast_to(t, (2, 4)) + KINKS     # exact differences: every kink is hit
    t = np.broadcast_to(t, (2, 4)) if t_shape == (2, 4) else t
    want_node, want = _grads(torch, name, kw, x, t, reduction, t_shape)
    got_node, got = _grads(ember, name, kw, x, t, reduction, t_shape)
    assert got_node == want_node == node
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name,kw,node", LOSSES)
def test_gradgradcheck(name, kw, node):
    # away from the kinks the second derivative is smooth: finite differences agree
    x = ember.tensor([[-2.2, -0.3, 0.1], [0.7, 1.9, -1.4]], dtype=ember.float64,
                     requires_grad=True)
    t = ember.tensor([0.15, -0.05, 0.35], dtype=ember.float64, requires_grad=True)
    f = (lambda a, b: getattr(ember.nn.functional, name)(a, b, **kw))
    assert ember.autograd.gradcheck(f, (x, t))
    assert ember.autograd.gradgradcheck(f, (x, t))


def test_weighted_and_mixed_dtypes_keep_the_composition():
    # torch computes these in Python too: a weight, or a target of another dtype, are not ops
    x = ember.randn(3, requires_grad=True)
    w = ember.rand(3)
    assert ember.nn.functional.mse_loss(x, ember.randn(3), weight=w).grad_fn.name() == \
        "DivBackward0"
    mixed = ember.nn.functional.smooth_l1_loss(x, ember.randn(3, dtype=ember.float64))
    assert mixed.dtype == ember.float64
    mixed.backward()
    assert x.grad.dtype == ember.float32


@pytest.mark.parametrize("dtype", [ember.float64, ember.float32, ember.float16])
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("name,params", [("mse_loss", ()), ("smooth_l1_loss", (0.5,)),
                                         ("huber_loss", (0.5,))])
def test_cpu_kernels_equal_the_composites(name, params, reduction, dtype):
    # the CPU kit computes each loss and its backward in one pass; other backends run the
    # composites in ember.ops.nn.loss: one meaning, two implementations that must agree
    from ember.dispatch.dispatcher import get_op
    rng = np.random.default_rng(0)
    x = ember.tensor(np.append(KINKS.ravel(), rng.standard_normal(8)).reshape(4, 4), dtype=dtype)
    t = ember.zeros(4, 4, dtype=dtype)
    g = ember.tensor(rng.standard_normal(() if reduction else (4, 4)), dtype=dtype)
    tol = {ember.float64: 1e-15, ember.float32: 1e-6, ember.float16: 2e-3}[dtype]
    for op, args in ((get_op(name), (x, t, reduction) + params),
                     (get_op(name + "_backward"), (g, x, t, reduction) + params)):
        kernel, composite = op(*args), op.composite(*args)
        assert kernel.dtype == composite.dtype and kernel.shape == composite.shape
        np.testing.assert_allclose(kernel.float().numpy(), composite.float().numpy(),
                                   rtol=tol, atol=tol)
