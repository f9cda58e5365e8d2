"""ember.nn losses: numpy references, finite-difference gradients, PyTorch's errors and
warnings, the loss modules, and torch itself when installed."""
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.autograd import gradcheck
from ember.nn import _loss as F

rng = np.random.default_rng(99)


def E(a, **kw):
    return ember.tensor(np.asarray(a), **kw)


def arr(t):
    return t.detach().cpu().numpy()


def reduce(x, reduction):
    return {"none": x, "mean": x.mean(), "sum": x.sum()}[reduction]


def log_softmax(x, axis=1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def ref_nll(logp, t, w, ignore, reduction):
    c = logp.shape[1]
    w = np.ones(c) if w is None else w
    keep = t != ignore
    safe = np.where(keep, t, 0)
    picked = np.take_along_axis(logp, safe[:, None], 1)[:, 0]
    ww = w[safe] * keep
    loss = -picked * ww
    return {"none": loss, "sum": loss.sum(), "mean": loss.sum() / ww.sum()}[reduction]


def ref_cross_entropy(x, t, w, ignore, reduction, ls):
    logp = log_softmax(x)
    c = x.shape[1]
    nll = ref_nll(logp, t, w, ignore, reduction)
    if ls == 0:
        return nll
    keep = t != ignore
    wv = np.ones(c) if w is None else w
    shape = (1, c) + (1,) * (x.ndim - 2)
    smooth = -(logp * wv.reshape(shape)).sum(1) * keep
    if reduction == "mean":
        smooth = smooth.sum() / (wv[np.where(keep, t, 0)] * keep).sum()
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - ls) * nll + smooth * ls / c


REDUCTIONS = ["none", "mean", "sum"]


# -- regression losses --------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses_match_numpy(reduction):
    a, b = rng.standard_normal((3, 4)) * 2, rng.standard_normal((3, 4))
    d = a - b
    z = np.abs(d)
    cases = [
        (F.mse_loss(E(a), E(b), reduction=reduction), d ** 2),
        (F.l1_loss(E(a), E(b), reduction=reduction), z),
        (F.smooth_l1_loss(E(a), E(b), reduction=reduction, beta=0.7),
         np.where(z < 0.7, 0.5 * z ** 2 / 0.7, z - 0.35)),
        (F.smooth_l1_loss(E(a), E(b), reduction=reduction, beta=0.0), z),
        (F.huber_loss(E(a), E(b), reduction=reduction, delta=1.5),
         np.where(z < 1.5, 0.5 * z ** 2, 1.5 * (z - 0.75))),
    ]
    for got, want in cases:
        np.testing.assert_allclose(arr(got), reduce(want, reduction), rtol=1e-12)


def test_regression_weight_and_broadcast_warning():
    a, b, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.random((3, 4))
    np.testing.assert_allclose(arr(F.mse_loss(E(a), E(b), weight=E(w))),
                               ((a - b) ** 2 * w).sum() / w.sum())
    np.testing.assert_allclose(arr(F.l1_loss(E(a), E(b), weight=E(w), reduction="sum")),
                               (np.abs(a - b) * w).sum())
    np.testing.assert_allclose(arr(F.huber_loss(E(a), E(b), weight=E(w))),
                               (np.where(np.abs(a - b) < 1, 0.5 * (a - b) ** 2,
                                         np.abs(a - b) - 0.5) * w).mean())
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        F.mse_loss(E(a), E(b), weight=E(w[0]))
    with pytest.warns(UserWarning, match="Using a target size"):
        got = F.mse_loss(E(a), E(b[0]))
    np.testing.assert_allclose(arr(got), ((a - b[0]) ** 2).mean())


# -- classification -----------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ls", [0.0, 0.25])
def test_cross_entropy_class_indices(reduction, weighted, ls):
    x = rng.standard_normal((6, 5))
    t = rng.integers(0, 5, 6)
    t[2] = 3 if ls else -100        # an ignored target when not smoothing
    w = rng.random(5) if weighted else None
    got = F.cross_entropy(E(x), E(t), None if w is None else E(w), reduction=reduction,
                          label_smoothing=ls, ignore_index=-100 if not ls else 3)
    want = ref_cross_entropy(x, t, w, -100 if not ls else 3, reduction, ls)
    np.testing.assert_allclose(arr(got), want, rtol=1e-10, atol=1e-12)


def test_cross_entropy_kdim_unbatched_and_nll():
    x = rng.standard_normal((2, 4, 3, 2))
    t = rng.integers(0, 4, (2, 3, 2))
    flat_x = np.moveaxis(x, 1, -1).reshape(-1, 4)
    got = F.cross_entropy(E(x), E(t), reduction="none")
    assert got.shape == (2, 3, 2)
    np.testing.assert_allclose(arr(got).reshape(-1),
                               ref_cross_entropy(flat_x, t.reshape(-1), None, -100, "none", 0))
    np.testing.assert_allclose(arr(F.cross_entropy(E(x[0, :, 0, 0]), E(t[0, 0, 0]))),
                               -log_softmax(x[0, :, 0, 0][None])[0, t[0, 0, 0]])
    logp = log_softmax(x)
    w = rng.random(4)
    np.testing.assert_allclose(arr(F.nll_loss(E(logp), E(t), E(w))),
                               ref_nll(np.moveaxis(logp, 1, -1).reshape(-1, 4), t.reshape(-1), w,
                                       -100, "mean"))
    assert F.nll_loss(E(logp[0, :, 0, 0]), E(t[0, 0, 0]), reduction="none").shape == ()
    # byte targets are accepted, like PyTorch
    np.testing.assert_allclose(arr(F.nll_loss(E(logp[:, :, 0, 0]), E(t[:, 0, 0].astype(np.uint8)))),
                               arr(F.nll_loss(E(logp[:, :, 0, 0]), E(t[:, 0, 0]))))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probabilities(reduction):
    x = rng.standard_normal((3, 4, 2))
    p = rng.random((3, 4, 2))
    p /= p.sum(1, keepdims=True)
    w = rng.random(4)
    ls = 0.1
    q = p * (1 - ls) + ls / 4
    per = -(log_softmax(x) * w[None, :, None] * q).sum(1)
    want = {"none": per, "sum": per.sum(), "mean": per.sum() / 6}[reduction]
    got = F.cross_entropy(E(x), E(p), E(w), reduction=reduction, label_smoothing=ls)
    np.testing.assert_allclose(arr(got), want, rtol=1e-12)


def test_all_ignored_mean_is_nan_and_empty_batch():
    x = E(rng.standard_normal((3, 5)))
    assert np.isnan(arr(F.cross_entropy(x, E(np.full(3, -100)))))
    assert arr(F.cross_entropy(x, E(np.full(3, -100)), reduction="sum")) == 0
    assert np.isnan(arr(F.cross_entropy(E(np.zeros((0, 5))), E(np.zeros(0, dtype=np.int64)))))


# -- binary -------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    p, t, w = rng.random((3, 4)), rng.random((3, 4)), rng.random(4)
    want = -w * (t * np.log(p) + (1 - t) * np.log(1 - p))
    got = F.binary_cross_entropy(E(p), E(t), E(w), reduction=reduction)
    np.testing.assert_allclose(arr(got), reduce(want, reduction), rtol=1e-12)
    # logs are clamped at -100: a certain wrong answer costs 100, not inf
    edge = F.binary_cross_entropy(E([0.0, 1.0]), E([1.0, 0.0]), reduction="none")
    np.testing.assert_array_equal(arr(edge), [100.0, 100.0])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_is_stable(reduction):
    x = rng.standard_normal((3, 4)) * 50      # logits far out in both tails
    t, w, pw = rng.random((3, 4)), rng.random((3, 4)), rng.random(4) * 3
    log_sig = -np.logaddexp(0, -x)
    log_1msig = -np.logaddexp(0, x)
    want = -w * (pw * t * log_sig + (1 - t) * log_1msig)
    got = F.binary_cross_entropy_with_logits(E(x), E(t), E(w), reduction=reduction,
                                             pos_weight=E(pw))
    assert np.isfinite(arr(got)).all()
    np.testing.assert_allclose(arr(got), reduce(want, reduction), rtol=1e-10)


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = log_softmax(rng.standard_normal((3, 4)))
    t = rng.random((3, 4))
    t[0, 0] = 0.0                                   # 0 * log 0 counts as 0
    tt = np.log(t + 0.1) if log_target else t
    want = np.exp(tt) * (tt - x) if log_target else \
        np.where(t > 0, t * np.log(np.where(t > 0, t, 1)), 0) - t * x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = F.kl_div(E(x), E(tt), reduction=reduction, log_target=log_target)
    expect = want.sum() / 3 if reduction == "batchmean" else reduce(want, reduction)
    np.testing.assert_allclose(arr(got), expect, rtol=1e-12)


def test_kl_div_mean_warns():
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(E(np.zeros(3)), E(np.ones(3)))


# -- gradients ----------------------------------------------------------------------------------
def _req(*shape, scale=1.0):
    return E(rng.standard_normal(shape) * scale).requires_grad_()


T_IDX = np.array([1, 0, 3, -100])
T_KD = np.array([[1, 0], [2, 2]])
PROB = rng.random((4, 3))
PROB /= PROB.sum(1, keepdims=True)


@pytest.mark.parametrize("fn,inputs", [
    (lambda a, b: F.mse_loss(a, b), lambda: (_req(3, 4), _req(3, 4))),
    (lambda a, b: F.l1_loss(a, b, reduction="sum"), lambda: (_req(3, 4), _req(3, 4))),
    (lambda a, b: F.smooth_l1_loss(a, b, beta=0.5), lambda: (_req(3, 4), _req(3, 4))),
    (lambda a, b: F.huber_loss(a, b, delta=0.8, reduction="none"),
     lambda: (_req(3, 4), _req(3, 4))),
    (lambda a, w: F.cross_entropy(a, E(T_IDX), w, label_smoothing=0.2),
     lambda: (_req(4, 5), E(rng.random(5)).requires_grad_())),
    (lambda a: F.cross_entropy(a, E(T_KD), reduction="sum"), lambda: (_req(2, 3, 2),)),
    (lambda a, p: F.cross_entropy(a, p), lambda: (_req(4, 3), E(PROB).requires_grad_())),
    (lambda a: F.nll_loss(a, E(T_IDX), reduction="none"), lambda: (_req(4, 5),)),
    (lambda p, t: F.binary_cross_entropy(p, t),
     lambda: (E(rng.random((3, 4)) * 0.8 + 0.1).requires_grad_(), _req(3, 4))),
    (lambda a, t, w: F.binary_cross_entropy_with_logits(a, t, pos_weight=w),
     lambda: (_req(3, 4, scale=3), E(rng.random((3, 4))).requires_grad_(),
              E(rng.random(4)).requires_grad_())),
    (lambda a, t: F.kl_div(a, t, reduction="batchmean"),
     lambda: (_req(3, 4), E(rng.random((3, 4))).requires_grad_())),
    (lambda a, t: F.kl_div(a, t, reduction="sum", log_target=True),
     lambda: (_req(3, 4), _req(3, 4))),
], ids=["mse", "l1", "smooth_l1", "huber", "cross_entropy", "cross_entropy_kdim",
        "cross_entropy_probs", "nll", "bce", "bce_logits", "kl_div", "kl_div_log_target"])
def test_gradcheck(fn, inputs):
    assert gradcheck(fn, inputs())


# -- errors -------------------------------------------------------------------------------------
X = E(np.zeros((3, 5), dtype=np.float32))
Y = E(np.array([1, 0, 4]))


@pytest.mark.parametrize("call,exc,match", [
    (lambda: F.cross_entropy(X, E(np.array([1, 0, 5]))), IndexError, "Target 5 is out of bounds"),
    (lambda: F.nll_loss(X, E(np.array([1, -1, 0]))), IndexError, "Target -1 is out of bounds"),
    (lambda: F.cross_entropy(X, E(np.array([1, 0]))), ValueError,
     r"Expected input batch_size \(3\) to match target batch_size \(2\)"),
    (lambda: F.cross_entropy(X, Y.float()), RuntimeError,
     "expected target dtype to be Long or Byte, but got Float"),
    (lambda: F.nll_loss(X, Y.int()), RuntimeError, "expected target dtype to be Long or Byte, "
     "but got Int"),
    (lambda: F.cross_entropy(X, E(np.zeros((3, 4)))), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda: F.cross_entropy(X, Y, weight=E(np.ones(4, "f4"))), RuntimeError,
     r"weight tensor should be defined either for all 5 classes or no classes but got weight "
     r"tensor of shape: \[4\]"),
    (lambda: F.cross_entropy(X, Y, weight=E(np.ones(5))), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda: F.cross_entropy(X, Y, label_smoothing=1.5), RuntimeError,
     "label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
    (lambda: F.cross_entropy(X, Y, reduction="foo"), ValueError,
     "foo is not a valid value for reduction"),
    (lambda: F.cross_entropy(X, E(np.full((3, 5), 0.2, "f4")), ignore_index=1), RuntimeError,
     "ignore_index is not supported for floating point target"),
    (lambda: F.nll_loss(E(np.zeros((2, 3, 4))), E(np.zeros((2, 5), dtype=np.int64))),
     RuntimeError, r"Expected target size \[2, 4\], got \[2, 5\]"),
    (lambda: F.nll_loss(E(np.zeros(3)), E(np.zeros(3, dtype=np.int64))), ValueError,
     "For 1D input, 1D target must have size 1, but got target size: 3"),
    (lambda: F.binary_cross_entropy(E(np.full(3, 0.5)), E(np.full(4, 0.5))), ValueError,
     "that is different to the input size"),
    (lambda: F.binary_cross_entropy(E([1.5]), E([1.0])), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy_with_logits(E(np.zeros(3)), E(np.zeros(4))), ValueError,
     "must be the same as input size"),
    (lambda: F.smooth_l1_loss(X, X, beta=-1), RuntimeError,
     "smooth_l1_loss does not support negative values for beta"),
    (lambda: F.huber_loss(X, X, delta=0), RuntimeError,
     "huber_loss does not support non-positive values for delta"),
    (lambda: F.mse_loss(Y, Y), NotImplementedError, "not implemented for 'Long'"),
    (lambda: F.mse_loss(X, "x"), TypeError, "argument 'target' must be Tensor"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_legacy_size_average_reduce():
    a, b = rng.standard_normal(4), rng.standard_normal(4)
    with pytest.warns(UserWarning, match="reduction='sum' instead"):
        got = F.mse_loss(E(a), E(b), size_average=False)
    np.testing.assert_allclose(arr(got), ((a - b) ** 2).sum())
    with pytest.warns(UserWarning, match="reduction='none' instead"):
        assert nn.L1Loss(reduce=False).reduction == "none"


# -- modules ------------------------------------------------------------------------------------
def test_loss_modules():
    x, t = rng.standard_normal((4, 3)), rng.integers(0, 3, 4)
    w = rng.random(3)
    m = nn.CrossEntropyLoss(weight=E(w), label_smoothing=0.1, reduction="sum")
    assert repr(m) == "CrossEntropyLoss()" and "weight" in dict(m.named_buffers())
    np.testing.assert_allclose(arr(m(E(x), E(t))), ref_cross_entropy(x, t, w, -100, "sum", 0.1))
    np.testing.assert_allclose(arr(nn.NLLLoss(ignore_index=t[0])(E(x), E(t))),
                               ref_nll(x, t, None, t[0], "mean"))
    a, b = rng.random((2, 3)), rng.random((2, 3))
    pairs = [(nn.MSELoss(), F.mse_loss), (nn.L1Loss(reduction="sum"), F.l1_loss),
             (nn.SmoothL1Loss(beta=0.3), F.smooth_l1_loss), (nn.HuberLoss(delta=0.2), F.huber_loss),
             (nn.BCELoss(), F.binary_cross_entropy),
             (nn.BCEWithLogitsLoss(pos_weight=E(np.ones(3) * 2)), None),
             (nn.KLDivLoss(reduction="batchmean", log_target=True), None)]
    for mod, _ in pairs:
        assert np.isfinite(arr(mod(E(a), E(b))))
    np.testing.assert_allclose(arr(nn.SmoothL1Loss(beta=0.3)(E(a), E(b))),
                               arr(F.smooth_l1_loss(E(a), E(b), beta=0.3)))
    np.testing.assert_allclose(arr(nn.BCEWithLogitsLoss(pos_weight=E(np.full(3, 2.0)))(E(a), E(b))),
                               arr(F.binary_cross_entropy_with_logits(
                                   E(a), E(b), pos_weight=E(np.full(3, 2.0)))))
    kl = nn.KLDivLoss(reduction="batchmean", log_target=True)
    np.testing.assert_allclose(arr(kl(E(a), E(b))), (np.exp(b) * (b - a)).sum() / 2)


# -- torch (optional) ---------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:reduction. 'mean'")
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_against_torch(reduction):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    T = torch.tensor
    x = rng.standard_normal((4, 5, 3))
    t = rng.integers(0, 5, (4, 3))
    t[0, 0] = -100
    w = rng.random(5)
    p = rng.random((4, 5, 3))
    p /= p.sum(1, keepdims=True)
    for ls in (0.0, 0.3):
        for ww in (None, w):
            kw = dict(reduction=reduction, label_smoothing=ls)
            np.testing.assert_allclose(
                arr(F.cross_entropy(E(x), E(t), None if ww is None else E(ww), **kw)),
                tf.cross_entropy(T(x), T(t), None if ww is None else T(ww), **kw).numpy(),
                rtol=1e-10, atol=1e-12)
            np.testing.assert_allclose(
                arr(F.cross_entropy(E(x), E(p), None if ww is None else E(ww), **kw)),
                tf.cross_entropy(T(x), T(p), None if ww is None else T(ww), **kw).numpy(),
                rtol=1e-10, atol=1e-12)
    a, b, wt = rng.random((3, 4)), rng.random((3, 4)), rng.random((3, 4))
    z = rng.standard_normal((3, 4)) * 20
    pw = rng.random(4)
    pairs = [
        (F.binary_cross_entropy(E(a), E(b), E(wt), reduction=reduction),
         tf.binary_cross_entropy(T(a), T(b), T(wt), reduction=reduction)),
        (F.binary_cross_entropy_with_logits(E(z), E(b), E(wt), reduction=reduction,
                                            pos_weight=E(pw)),
         tf.binary_cross_entropy_with_logits(T(z), T(b), T(wt), reduction=reduction,
                                             pos_weight=T(pw))),
        (F.smooth_l1_loss(E(z), E(b), reduction=reduction, beta=2.0),
         tf.smooth_l1_loss(T(z), T(b), reduction=reduction, beta=2.0)),
        (F.huber_loss(E(z), E(b), reduction=reduction, delta=2.0, weight=E(wt)),
         tf.huber_loss(T(z), T(b), reduction=reduction, delta=2.0, weight=T(wt))),
        (F.kl_div(E(z), E(b), reduction=reduction, log_target=True),
         tf.kl_div(T(z), T(b), reduction=reduction, log_target=True)),
    ]
    for got, want in pairs:
        np.testing.assert_allclose(arr(got), want.numpy(), rtol=1e-10, atol=1e-10)


def test_bce_with_logits_is_exact_beyond_softplus_threshold():
    # torch takes log_sigmoid (exact everywhere); softplus's threshold (x itself above 20) cost
    # up to 2e-8 relative once (1 - t) x cancels against it for very negative logits
    torch = pytest.importorskip("torch")
    x = np.array([-60.0, -35.0, -20.5, -20.0, -3.0, 0.0, 3.0, 20.5, 35.0, 60.0])
    t = np.linspace(0.001, 0.999, x.size)
    pw = np.full(x.size, 0.05)
    for pos_weight in (None, pw):
        got = F.binary_cross_entropy_with_logits(
            E(x), E(t), reduction="none", pos_weight=None if pos_weight is None else E(pw))
        want = torch.nn.functional.binary_cross_entropy_with_logits(
            torch.tensor(x), torch.tensor(t), reduction="none",
            pos_weight=None if pos_weight is None else torch.tensor(pw))
        np.testing.assert_allclose(arr(got), want.numpy(), rtol=1e-13, atol=0)


def test_logsigmoid_is_exact_like_torch():
    # torch's log_sigmoid is exact everywhere; -softplus(-x) stopped at softplus's threshold
    # (logsigmoid(-25) was -25, not -25.000000000013888); first and second derivatives too
    torch = pytest.importorskip("torch")
    xs = [-800.0, -25.0, -20.5, -20.0, -1.0, 0.0, 1.0, 20.0, 20.5, 25.0, 800.0]
    got, want = [], []
    for lib, out in ((ember, got), (torch, want)):
        x = lib.tensor(xs, dtype=lib.float64, requires_grad=True)
        y = lib.nn.functional.logsigmoid(x)
        g, = lib.autograd.grad(y.sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        out += [np.array(y.detach().tolist()), np.array(g.detach().tolist()),
                np.array(gg.tolist())]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-15, atol=0)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-14, atol=0)
    # torch's second derivative loses digits at large x (1 - sigmoid cancels: 4e-6 relative at
    # 25, where ember's -exp(-25)(1 - exp(-25)) is exact)
    np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-300)
