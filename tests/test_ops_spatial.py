"""F.unfold/F.fold (im2col/col2im ops), pixel_shuffle/unshuffle, channel_shuffle and their
modules: values against a naive numpy reference (and torch when installed), gradients,
errors, CPU and OpenCL."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

rng = np.random.default_rng(7)
DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])


def naive_unfold(x, k, d, p, s):
    n, c, h, w = x.shape
    xp = np.zeros((n, c, h + 2 * p[0], w + 2 * p[1]), x.dtype)
    xp[:, :, p[0]:p[0] + h, p[1]:p[1] + w] = x
    oh = (h + 2 * p[0] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (w + 2 * p[1] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.zeros((n, c, k[0], k[1], oh, ow), x.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            for a in range(oh):
                for b in range(ow):
                    out[:, :, i, j, a, b] = xp[:, :, a * s[0] + i * d[0], b * s[1] + j * d[1]]
    return out.reshape(n, c * k[0] * k[1], oh * ow)


CASES = [((3, 3), (1, 1), (0, 0), (1, 1)), ((2, 3), (2, 1), (1, 2), (2, 3)),
         ((1, 2), (1, 3), (0, 1), (3, 1))]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("k,d,p,s", CASES)
def test_unfold_fold_match_naive(dev, k, d, p, s):
    x = rng.standard_normal((2, 3, 7, 8))
    ref = naive_unfold(x, k, d, p, s)
    cols = F.unfold(ember.tensor(x, device=dev), k, d, p, s)
    np.testing.assert_allclose(cols.cpu().numpy(), ref, rtol=1e-12)
    # fold is unfold's adjoint: <unfold(x), y> == <x, fold(y)>
    y = rng.standard_normal(ref.shape)
    folded = F.fold(ember.tensor(y, device=dev), (7, 8), k, d, p, s).cpu().numpy()
    np.testing.assert_allclose((ref * y).sum(), (x * folded).sum(), rtol=1e-10)


@pytest.mark.parametrize("dev", DEVICES)
def test_modules_unbatched_and_grad(dev):
    x = ember.tensor(rng.standard_normal((3, 4, 4)), device=dev, requires_grad=True)
    cols = nn.Unfold(2, stride=2)(x)
    assert cols.shape == (12, 4)
    back = nn.Fold(4, 2, stride=2)(cols)
    np.testing.assert_allclose(back.detach().cpu().numpy(), x.detach().cpu().numpy())
    back.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.ones((3, 4, 4)))
    assert type(cols.grad_fn).__name__ == "Im2ColBackward0"
    assert type(back.grad_fn).__name__ == "Col2ImBackward0"


def test_fold_unfold_gradcheck():
    x = ember.tensor(rng.standard_normal((1, 2, 5, 4)), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda x: F.unfold(x, (2, 3), padding=1, stride=2), (x,))
    y = ember.tensor(rng.standard_normal((1, 12, 6)), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda y: F.fold(y, (5, 4), (2, 3), padding=1,
                                                         stride=2), (y,))


@pytest.mark.parametrize("dev", DEVICES)
def test_pixel_shuffle_roundtrip(dev):
    x = rng.standard_normal((2, 1, 12, 3, 5))
    t = ember.tensor(x, device=dev)
    up = F.pixel_shuffle(t, 2)
    assert up.shape == (2, 1, 3, 6, 10)
    # out[c, h*r + i, w*r + j] = in[c*r*r + i*r + j, h, w]
    ref = x.reshape(2, 1, 3, 2, 2, 3, 5).transpose(0, 1, 2, 5, 3, 6, 4).reshape(2, 1, 3, 6, 10)
    np.testing.assert_array_equal(up.cpu().numpy(), ref)
    np.testing.assert_array_equal(F.pixel_unshuffle(up, 2).cpu().numpy(), x)
    assert nn.PixelShuffle(2)(t).shape == (2, 1, 3, 6, 10)
    assert nn.PixelUnshuffle(2)(up).shape == t.shape


def test_pixel_shuffle_grad_and_names():
    x = ember.tensor(rng.standard_normal((1, 8, 2, 3)), requires_grad=True)
    y = F.pixel_shuffle(x, 2)
    assert type(y.grad_fn).__name__ == "PixelShuffleBackward0"
    assert type(F.pixel_unshuffle(y, 2).grad_fn).__name__ == "PixelUnshuffleBackward0"
    assert ember.autograd.gradgradcheck(lambda x: F.pixel_shuffle(x, 2) ** 2, (x,))


def test_channel_shuffle():
    x = ember.arange(6).reshape(1, 6, 1, 1)
    assert F.channel_shuffle(x, 2).flatten().tolist() == [0, 3, 1, 4, 2, 5]
    assert nn.ChannelShuffle(3)(x).flatten().tolist() == [0, 2, 4, 1, 3, 5]
    with pytest.raises(RuntimeError, match="divisible by groups"):
        F.channel_shuffle(x, 4)


@pytest.mark.parametrize("call,msg", [
    (lambda: F.unfold(ember.ones(1, 2, 3, 4), (0, 1)), "kernel size should be greater than zero"),
    (lambda: F.unfold(ember.ones(1, 2, 3, 4), 5), "calculated shape of the array of sliding"),
    (lambda: F.unfold(ember.ones(1, 2, 3, 4), 2, stride=0), "stride should be greater than"),
    (lambda: F.unfold(ember.ones(1, 2, 3, 4), 2, padding=-1), "padding should be non-negative"),
    (lambda: F.fold(ember.ones(1, 5, 9), (4, 4), 2), "divisible by the product of kernel_size"),
    (lambda: F.fold(ember.ones(1, 4, 8), (4, 4), 2), "calculated number of sliding blocks"),
    (lambda: F.pixel_shuffle(ember.ones(2, 5, 3, 3), 2), "divisible by the square"),
    (lambda: F.pixel_shuffle(ember.ones(5, 3), 2), "at least 3 dimensions"),
    (lambda: F.pixel_unshuffle(ember.ones(1, 1, 5, 4), 2), "height to be divisible"),
    (lambda: F.pixel_shuffle(ember.ones(1, 4, 3, 3), 0), "positive upscale_factor"),
])
def test_errors(call, msg):
    with pytest.raises(RuntimeError, match=msg):
        call()


def test_matches_torch():
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 3, 7, 8))
    for k, d, p, s in CASES:
        np.testing.assert_allclose(
            F.unfold(ember.tensor(x), k, d, p, s).numpy(),
            torch.nn.functional.unfold(torch.tensor(x), k, d, p, s).numpy(), rtol=1e-12)
        cols = torch.nn.functional.unfold(torch.tensor(x), k, d, p, s)
        np.testing.assert_allclose(
            F.fold(ember.tensor(cols.numpy()), (7, 8), k, d, p, s).numpy(),
            torch.nn.functional.fold(cols, (7, 8), k, d, p, s).numpy(), rtol=1e-12)
    y = rng.standard_normal((2, 18, 2, 3))
    np.testing.assert_array_equal(F.pixel_shuffle(ember.tensor(y), 3).numpy(),
                                  torch.pixel_shuffle(torch.tensor(y), 3).numpy())
