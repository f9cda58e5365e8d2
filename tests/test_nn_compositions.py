"""The composed losses (``nn/_margin_loss.py``, ``nn/_loss.py``), the shrinks and
gumbel-softmax, and the channel and alpha dropouts: values against numpy formulas (and torch when installed), module wrappers,
dropout statistics and masks, errors."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

rng = np.random.default_rng(2525)
DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])


def T(a, dev="cpu", **kw):
    return ember.tensor(np.asarray(a), device=dev, **kw)


@pytest.mark.parametrize("dev", DEVICES)
def test_margin_and_hinge_against_numpy(dev):
    a, b = rng.standard_normal(6), rng.standard_normal(6)
    y = np.array([1.0, -1, 1, -1, -1, 1])
    got = F.margin_ranking_loss(T(a, dev), T(b, dev), T(y, dev), margin=0.2, reduction="none")
    np.testing.assert_allclose(got.cpu().numpy(), np.maximum(0, -y * (a - b) + 0.2))
    got = F.hinge_embedding_loss(T(a, dev), T(y, dev), margin=0.5, reduction="sum")
    np.testing.assert_allclose(got.item(), np.where(y == 1, a, np.maximum(0, 0.5 - a)).sum())
    got = F.soft_margin_loss(T(a, dev), T(y, dev))
    np.testing.assert_allclose(got.item(), np.log1p(np.exp(-y * a)).mean())


@pytest.mark.parametrize("dev", DEVICES)
def test_multi_margin_and_multilabel_margin_against_numpy(dev):
    x = rng.standard_normal((3, 5))
    y = np.array([4, 0, 2])
    w = rng.uniform(0.5, 2, 5)
    got = F.multi_margin_loss(T(x, dev), T(y, dev), p=2, margin=0.7, weight=T(w, dev),
                              reduction="none").cpu().numpy()
    want = []
    for i in range(3):
        z = np.maximum(0, 0.7 - x[i, y[i]] + x[i]) ** 2 * w[y[i]]
        z[y[i]] = 0
        want.append(z.sum() / 5)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    tgt = np.array([[3, 0, -1, 1, 2], [1, -1, 3, 0, 0], [0, 1, 2, 3, 4]])
    got = F.multilabel_margin_loss(T(x, dev), T(tgt, dev), reduction="none").cpu().numpy()
    want = []
    for i in range(3):
        labels = []
        for v in tgt[i]:
            if v < 0:
                break
            labels.append(v)
        others = [k for k in range(5) if k not in labels]
        want.append(sum(max(0, 1 - (x[i, j] - x[i, k])) for j in labels for k in others) / 5)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_losses_against_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x, z, v = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.uniform(.1, 2, (4, 3))
    n = rng.standard_normal((4, 3))
    y = np.array([1.0, -1, -1, 1])
    counts = rng.integers(0, 5, (4, 3)).astype(float)
    probs = rng.uniform(0, 1, (4, 3))
    cases = [
        ("cosine_embedding_loss", (x, z, y), dict(margin=0.1)),
        ("multilabel_soft_margin_loss", (x, probs), {}),
        ("triplet_margin_loss", (x, z, n), dict(p=1.5, swap=True, margin=0.5)),
        ("poisson_nll_loss", (x, counts), dict(full=True)),
        ("poisson_nll_loss", (v, counts), dict(log_input=False, reduction="none")),
        ("gaussian_nll_loss", (x, z, v), dict(full=True)),
        ("gaussian_nll_loss", (x, z, v[:, 0]), dict(reduction="none")),
        ("hardshrink", (x,), dict(lambd=0.6)),
        ("softshrink", (x,), dict(lambd=0.6)),
    ]
    for name, args, kw in cases:
        te = [T(a, requires_grad=a.dtype.kind == "f") for a in args]
        tt = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in args]
        got, want = getattr(F, name)(*te, **kw), getattr(tf, name)(*tt, **kw)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10,
                                   err_msg=name)
        got.sum().backward()
        want.sum().backward()
        for a, b in zip(te, tt):
            if b.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10,
                                           atol=1e-12, err_msg=name)


def test_loss_modules():
    x, z, n = (T(rng.standard_normal((4, 3))) for _ in range(3))
    y = T([1.0, -1, -1, 1])
    assert nn.TripletMarginLoss(margin=0.5, p=1.0)(x, z, n).item() == pytest.approx(
        F.triplet_margin_loss(x, z, n, margin=0.5, p=1.0).item())
    assert nn.CosineEmbeddingLoss(reduction="sum")(x, z, y).item() == pytest.approx(
        F.cosine_embedding_loss(x, z, y, reduction="sum").item())
    assert nn.MultiMarginLoss(p=2)(x, T([0, 1, 2, 1])).shape == ()
    assert nn.GaussianNLLLoss()(x, z, T(np.ones((4, 3)))).shape == ()
    assert nn.PoissonNLLLoss(reduction="none")(x, z).shape == (4, 3)
    assert repr(nn.Hardshrink(0.3)) == "Hardshrink(0.3)"
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="margin to be greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=0)


def test_loss_errors():
    with pytest.raises(ValueError, match="var has negative"):
        F.gaussian_nll_loss(T([1.0]), T([1.0]), T([-1.0]))
    with pytest.raises(RuntimeError, match="same dimension"):
        F.margin_ranking_loss(T([1.0, 2.0]), T([[1.0, 2.0]]), T([1.0, 1.0]))
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0"):
        F.softshrink(T([1.0]), -1)


@pytest.mark.parametrize("dev", DEVICES)
def test_channel_dropout_masks_whole_channels(dev):
    ember.manual_seed(0)
    x = ember.ones(8, 16, 5, 5, device=dev)
    y = F.dropout2d(x, 0.5).cpu().numpy()
    per_channel = y.reshape(8, 16, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0.3 < (per_channel[..., 0] == 0).mean() < 0.7
    assert F.dropout2d(x, 0.5, training=False) is x
    y1 = F.dropout1d(ember.ones(4, 3, device=dev), 0.5).cpu().numpy()  # unbatched (C, L)
    assert np.all((y1 == 0).all(-1) | (y1 == 2).all(-1))
    y3 = F.dropout3d(ember.ones(6, 2, 2, 2, device=dev), 0.5).cpu().numpy()  # unbatched
    assert np.all((y3.reshape(6, -1) == 0).all(-1) | (y3.reshape(6, -1) == 2).all(-1))
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        F.dropout1d(x, 0.5)
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(ember.ones(2, 3, 4), 0.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout3d(1.5)


@pytest.mark.parametrize("dev", DEVICES)
def test_alpha_dropout_keeps_mean_and_variance(dev):
    ember.manual_seed(1)
    x = ember.randn(200000, device=dev)
    y = F.alpha_dropout(x, 0.3, training=True).cpu().numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    assert F.alpha_dropout(x, 0.3) is x  # training defaults to False
    assert np.all(F.alpha_dropout(x, 1.0, training=True).cpu().numpy() == 0)
    f = nn.FeatureAlphaDropout(0.5).train()(ember.randn(4, 6, 3, 3, device=dev)).cpu().numpy()
    assert f.shape == (4, 6, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.AlphaDropout(0.2).eval()(x)


def test_gumbel_softmax():
    ember.manual_seed(3)
    logits = ember.tensor(np.log([[0.7, 0.2, 0.1]] * 4000), requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(-1), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) <= {0.0, 1.0} and np.all(h.sum(-1) == 1)
    np.testing.assert_allclose(h.mean(0), [0.7, 0.2, 0.1], atol=0.03)
    hard.sum().backward()  # straight-through: the soft sample's gradient
    assert logits.grad is not None


def test_softmax2d():
    x = T(rng.standard_normal((2, 3, 4, 4)))
    np.testing.assert_allclose(nn.Softmax2d()(x).numpy().sum(1), 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match="expected input to be 3D or 4D"):
        nn.Softmax2d()(T(np.ones(3)))


def test_linear_cross_entropy_and_module_against_torch():
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((5, 4))
    w = rng.standard_normal((3, 2, 4))
    b = rng.standard_normal((3, 2))
    y = rng.integers(0, 3, (5, 2))
    got = F.linear_cross_entropy(T(x), T(w), T(y), linear_bias=T(b), label_smoothing=0.1)
    want = torch.nn.functional.linear_cross_entropy(torch.tensor(x), torch.tensor(w),
                                                    torch.tensor(y),
                                                    linear_bias=torch.tensor(b),
                                                    label_smoothing=0.1)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-10)
    me = nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True)
    mt = torch.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True).double()
    with torch.no_grad():
        mt.linear.weight.copy_(torch.tensor(me.linear.weight.detach().numpy()))
        mt.linear.bias.copy_(torch.tensor(me.linear.bias.detach().numpy()))
    np.testing.assert_allclose(me.double()(T(x), T(y)).item(),
                               mt(torch.tensor(x), torch.tensor(y)).item(), rtol=1e-6)
    assert repr(me) == repr(mt)
    assert nn.NLLLoss2d()(T(np.log(np.full((2, 3, 2, 2), 1 / 3))),
                          T(np.zeros((2, 2, 2), dtype=np.int64))).item() == pytest.approx(
        np.log(3))


def test_torch_level_forms_against_torch():
    torch = pytest.importorskip("torch")
    x, y, z = (rng.standard_normal((4, 3)) for _ in range(3))
    s = np.array([1.0, -1, 1, -1])
    E, Tt = T, torch.tensor
    for red in (0, 1, 2):
        pairs = [
            (ember.cosine_embedding_loss(E(x), E(y), E(s), 0.1, red),
             torch.cosine_embedding_loss(Tt(x), Tt(y), Tt(s), 0.1, red)),
            (ember.margin_ranking_loss(E(x[:, 0]), E(y[:, 0]), E(s), 0.1, red),
             torch.margin_ranking_loss(Tt(x[:, 0]), Tt(y[:, 0]), Tt(s), 0.1, red)),
            (ember.hinge_embedding_loss(E(x[:, 0]), E(s), 0.4, red),
             torch.hinge_embedding_loss(Tt(x[:, 0]), Tt(s), 0.4, red)),
            (ember.triplet_margin_loss(E(x), E(y), E(z), 1.0, 2.0, 1e-6, True, red),
             torch.triplet_margin_loss(Tt(x), Tt(y), Tt(z), 1.0, 2.0, 1e-6, True, red)),
            (ember.poisson_nll_loss(E(x), E(np.abs(y)), True, True, 1e-8, red),
             torch.poisson_nll_loss(Tt(x), Tt(np.abs(y)), True, True, 1e-8, red)),
            (ember.binary_cross_entropy_with_logits(E(x), E(np.abs(y) % 1), None, None, red),
             torch.binary_cross_entropy_with_logits(Tt(x), Tt(np.abs(y) % 1), None, None, red)),
        ]
        for a, b in pairs:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10)
    w, i, o = rng.standard_normal((7, 3)), np.array([1, 2, 4, 4, 0, 6]), np.array([0, 2, 2])
    for mode in (0, 1, 2):
        a = ember.embedding_bag(E(w), E(i), E(o), False, mode)
        b = torch.embedding_bag(Tt(w), Tt(i), Tt(o), False, mode)
        np.testing.assert_allclose(a[0].detach().numpy(), b[0].detach().numpy(), rtol=1e-12)
        np.testing.assert_array_equal(a[1].numpy(), b[1].numpy())
    np.testing.assert_allclose(ember.embedding(E(w), E(i), 2).numpy(),
                               torch.embedding(Tt(w), Tt(i), 2).numpy())
    xi = rng.standard_normal((2, 3, 5))
    np.testing.assert_allclose(
        ember.instance_norm(E(xi), E(np.full(3, 2.0)), None, E(np.zeros(3)), E(np.ones(3)),
                            True, 0.1, 1e-5, False).numpy(),
        torch.instance_norm(Tt(xi), Tt(np.full(3, 2.0)), None, Tt(np.zeros(3)),
                            Tt(np.ones(3)), True, 0.1, 1e-5, False).numpy(), rtol=1e-10)
    np.testing.assert_allclose(ember.constant_pad_nd(E(x), (1, 2), 3.0).numpy(),
                               torch.constant_pad_nd(Tt(x), (1, 2), 3.0).numpy())
    with pytest.raises(ValueError, match="reduction must be 0"):
        ember.margin_ranking_loss(E(x[:, 0]), E(y[:, 0]), E(s), 0.1, 5)


@pytest.mark.parametrize("dev", DEVICES)
def test_adaptive_log_softmax_against_torch(dev):
    torch = pytest.importorskip("torch")
    me = nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10, 15], div_value=2.0, head_bias=True,
                                       dtype=ember.float64).to(dev)
    mt = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10, 15], div_value=2.0,
                                             head_bias=True).double()
    with torch.no_grad():
        for (n1, p1), (n2, p2) in zip(me.named_parameters(), mt.named_parameters()):
            assert n1 == n2
            p2.copy_(torch.tensor(p1.detach().cpu().numpy()))
    x = rng.standard_normal((6, 8))
    y = np.array([0, 5, 19, 3, 12, 15])
    xe = ember.tensor(x, device=dev, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    oe, ot = me(xe, ember.tensor(y, device=dev)), mt(xt, torch.tensor(y))
    np.testing.assert_allclose(oe.output.detach().cpu().numpy(), ot.output.detach().numpy(),
                               rtol=1e-10)
    np.testing.assert_allclose(oe.loss.item(), ot.loss.item(), rtol=1e-10)
    oe.loss.backward()
    ot.loss.backward()
    np.testing.assert_allclose(xe.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(me.log_prob(xe).detach().cpu().numpy(),
                               mt.log_prob(xt).detach().numpy(), rtol=1e-10)
    np.testing.assert_array_equal(me.predict(xe).cpu().numpy(), mt.predict(xt).numpy())
    single = me(xe[0], ember.tensor(5, device=dev))
    assert single.output.shape == ()
    with pytest.raises(RuntimeError, match="Target values should be in"):
        me(xe, ember.tensor(np.array([0, 1, 2, 3, 4, 20]), device=dev))
