"""CTC loss (``F.ctc_loss``, ``nn.CTCLoss``, the ``_ctc_loss`` op and its backward op) against
a brute-force sum over every alignment, against torch when installed, gradients against finite
differences, errors; CPU and OpenCL."""
import itertools

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

rng = np.random.default_rng(25)
DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])


def collapse(path, blank):
    out, prev = [], None
    for c in path:
        if c != prev and c != blank:
            out.append(c)
        prev = c
    return out


def brute_nll(lp, target, blank):
    """-log of the summed probability of every length-T path that collapses to ``target``."""
    t_len, c = lp.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=t_len):
        if collapse(path, blank) == list(target):
            total += np.exp(sum(lp[t, k] for t, k in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


def log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("blank", [0, 2])
def test_ctc_matches_brute_force(dev, blank):
    t_max, n, c = 5, 4, 3
    lp = log_softmax(rng.standard_normal((t_max, n, c)))
    labels = [k for k in range(c) if k != blank]
    targets = np.array([[labels[0], labels[1], labels[1]], [labels[1], labels[0], labels[0]],
                        [labels[0], labels[0], labels[0]], [labels[1], labels[1], labels[1]]])
    in_len, tg_len = [5, 4, 5, 2], [3, 1, 2, 0]
    got = F.ctc_loss(ember.tensor(lp, device=dev), ember.tensor(targets, device=dev), in_len,
                     tg_len, blank=blank, reduction="none").cpu().numpy()
    want = [brute_nll(lp[:in_len[b], b], targets[b, :tg_len[b]], blank) for b in range(n)]
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.parametrize("dev", DEVICES)
def test_ctc_impossible_alignment_and_zero_infinity(dev):
    lp = ember.tensor(log_softmax(rng.standard_normal((2, 1, 3))), device=dev,
                      requires_grad=True)
    tg = ember.tensor([[1, 1]], device=dev)  # needs 3 steps (1, blank, 1)
    loss = F.ctc_loss(lp, tg, [2], [2], reduction="sum")
    assert np.isinf(loss.item())
    zero = F.ctc_loss(lp, tg, [2], [2], reduction="sum", zero_infinity=True)
    assert zero.item() == 0.0
    zero.backward()
    assert np.all(lp.grad.cpu().numpy() == 0)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_gradcheck(reduction):
    x = ember.tensor(rng.standard_normal((6, 2, 4)), requires_grad=True)
    tg = ember.tensor([[1, 2, 2], [3, 1, 0]])

    def fn(x):
        return F.ctc_loss(x.log_softmax(-1), tg, [6, 5], [3, 2], reduction=reduction)
    assert ember.autograd.gradcheck(fn, (x,))


def test_ctc_concatenated_targets_and_unbatched():
    lp = log_softmax(rng.standard_normal((7, 2, 5)))
    padded = ember.tensor([[1, 2, 3], [4, 4, 0]])
    flat = ember.tensor([1, 2, 3, 4, 4])
    a = F.ctc_loss(ember.tensor(lp), padded, [7, 6], [3, 2], reduction="none")
    b = F.ctc_loss(ember.tensor(lp), flat, ember.tensor([7, 6]), ember.tensor([3, 2]),
                   reduction="none")
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    single = F.ctc_loss(ember.tensor(lp[:, 0]), ember.tensor([1, 2, 3]), [7], [3],
                        reduction="none")
    assert single.shape == ()
    np.testing.assert_allclose(single.item(), a.numpy()[0], rtol=1e-12)


def test_ctc_module_and_mean_reduction():
    lp = ember.tensor(log_softmax(rng.standard_normal((6, 3, 4))))
    tg = ember.tensor([[1, 2, 3], [2, 2, 0], [3, 0, 0]])
    loss = nn.CTCLoss(blank=0)(lp, tg, [6, 6, 4], [3, 2, 1])
    per = F.ctc_loss(lp, tg, [6, 6, 4], [3, 2, 1], reduction="none").numpy()
    np.testing.assert_allclose(loss.item(), (per / np.array([3, 2, 1])).mean(), rtol=1e-12)


def test_ctc_errors():
    lp = ember.tensor(log_softmax(rng.standard_normal((4, 2, 3))))
    tg = ember.tensor([[1, 2], [2, 1]])
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, tg, [4, 4], [2, 2], blank=3)
    with pytest.raises(RuntimeError, match="input_lengths to have value at most 4"):
        F.ctc_loss(lp, tg, [5, 4], [2, 2])
    with pytest.raises(RuntimeError, match="at least 3 at dimension 1"):
        F.ctc_loss(lp, tg, [4, 4], [3, 2])
    with pytest.raises(NotImplementedError, match="Half"):
        F.ctc_loss(lp.half(), tg, [4, 4], [2, 2])
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.ctc_loss(lp, tg, [4, 4], [2, 2], reduction="avg")


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_against_torch(dev, reduction):
    torch = pytest.importorskip("torch")
    t_max, n, c, s = 12, 4, 6, 5
    x = rng.standard_normal((t_max, n, c))
    tg = rng.integers(1, c, size=(n, s))
    tg[1, 1] = tg[1, 0]
    in_len, tg_len = [12, 10, 12, 7], [5, 3, 0, 4]
    for dt in (np.float64, np.float32):
        xt = torch.tensor(x.astype(dt), requires_grad=True)
        lt = torch.nn.functional.ctc_loss(xt.log_softmax(2), torch.tensor(tg), in_len, tg_len,
                                          reduction=reduction)
        lt.sum().backward()
        xe = ember.tensor(x.astype(dt), device=dev, requires_grad=True)
        le = F.ctc_loss(xe.log_softmax(2), ember.tensor(tg, device=dev), in_len, tg_len,
                        reduction=reduction)
        le.sum().backward()
        tol = 1e-10 if dt is np.float64 else 1e-5
        np.testing.assert_allclose(le.detach().cpu().numpy(), lt.detach().numpy(), rtol=tol,
                                   atol=tol)
        np.testing.assert_allclose(xe.grad.cpu().numpy(), xt.grad.numpy(), rtol=tol, atol=tol)
