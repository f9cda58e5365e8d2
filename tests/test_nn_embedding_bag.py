"""F.embedding_bag / nn.EmbeddingBag over the embedding_bag op: values against a plain numpy
loop (and torch when installed), gradients, double backward, errors, CPU and OpenCL."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

rng = np.random.default_rng(5)
DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])


def ref(idx, w, off, mode, psw=None, padding_idx=None):
    bounds = list(off) + [len(idx)]
    out = np.zeros((len(off), w.shape[1]))
    for b in range(len(off)):
        rows = [(i, idx[i]) for i in range(bounds[b], bounds[b + 1]) if idx[i] != padding_idx]
        if not rows:
            continue
        vals = np.stack([w[v] * (psw[i] if psw is not None else 1.0) for i, v in rows])
        out[b] = {"sum": vals.sum(0), "mean": vals.mean(0), "max": vals.max(0)}[mode]
    return out


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_values(dev, mode, padding_idx):
    w = rng.standard_normal((7, 4))
    idx = [1, 2, 0, 3, 3, 6, 5, 3]
    off = [0, 2, 2, 5]
    y = F.embedding_bag(ember.tensor(idx, device=dev), ember.tensor(w, device=dev),
                        ember.tensor(off, device=dev), mode=mode, padding_idx=padding_idx)
    np.testing.assert_allclose(y.cpu().numpy(), ref(idx, w, off, mode, None, padding_idx),
                               rtol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
def test_per_sample_weights_and_module(dev):
    w = rng.standard_normal((5, 3))
    idx, off, psw = [0, 4, 4, 2], [0, 1], rng.standard_normal(4)
    y = F.embedding_bag(ember.tensor(idx, device=dev), ember.tensor(w, device=dev),
                        ember.tensor(off, device=dev), mode="sum",
                        per_sample_weights=ember.tensor(psw, device=dev))
    np.testing.assert_allclose(y.cpu().numpy(), ref(idx, w, off, "sum", psw), rtol=1e-12)
    bag = nn.EmbeddingBag.from_pretrained(ember.tensor(w, device=dev), mode="max")
    np.testing.assert_allclose(bag(ember.tensor([[0, 1], [2, 2]], device=dev)).cpu().numpy(),
                               np.stack([np.maximum(w[0], w[1]), w[2]]))
    assert repr(nn.EmbeddingBag(10, 3)) == "EmbeddingBag(10, 3, mode='mean')"


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_gradients(mode):
    w = ember.tensor(rng.standard_normal((6, 3)), requires_grad=True)
    i, o = ember.tensor([1, 2, 0, 3, 3, 5, 5]), ember.tensor([0, 2, 2, 4])
    f = lambda w: F.embedding_bag(i, w, o, mode=mode, padding_idx=5) ** 2  # noqa: E731
    assert ember.autograd.gradcheck(f, (w,))
    assert ember.autograd.gradgradcheck(f, (w,))
    assert type(f(w).grad_fn.next_functions[0][0]).__name__ == "EmbeddingBagBackward0"
    p = ember.tensor(rng.standard_normal(7), requires_grad=True)
    assert ember.autograd.gradgradcheck(
        lambda w, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p) ** 2, (w, p))


@pytest.mark.parametrize("call,exc,msg", [
    (lambda i, w, o: F.embedding_bag(i, w, o, mode="max", per_sample_weights=ember.ones(5)),
     NotImplementedError, "only supported for mode='sum'"),
    (lambda i, w, o: F.embedding_bag(i, w, ember.tensor([1, 2])), RuntimeError,
     "offsets\\[0\\] has to be 0"),
    (lambda i, w, o: F.embedding_bag(i.reshape(1, 5), w, o), ValueError, "offsets has to be None"),
    (lambda i, w, o: F.embedding_bag(i, w), ValueError, "offsets has to be a 1D Tensor"),
    (lambda i, w, o: F.embedding_bag(i.float(), w, o), RuntimeError, "Long, Int"),
    (lambda i, w, o: F.embedding_bag(ember.tensor([5]), w, ember.tensor([0])), RuntimeError,
     "not in the valid range"),
    (lambda i, w, o: F.embedding_bag(i, w, o, mode="foo"), ValueError, "mode has to be one of"),
    (lambda i, w, o: F.embedding_bag(i, w, o, per_sample_weights=ember.ones(4)), ValueError,
     "same shape as the input"),
])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(ember.tensor([1, 2, 0, 3, 3]), ember.rand(4, 3), ember.tensor([0, 2, 2, 4]))


@pytest.mark.skipif("opencl" not in DEVICES, reason="needs OpenCL")
def test_opencl_bad_index_raises_at_sync():
    y = F.embedding_bag(ember.tensor([1, 9], device="opencl"), ember.rand(6, 3, device="opencl"),
                        ember.tensor([0], device="opencl"))
    with pytest.raises(RuntimeError, match="index 9 is out of bounds"):
        y.cpu()


def test_matches_torch():
    torch = pytest.importorskip("torch")
    w = rng.standard_normal((6, 3))
    for mode in ("sum", "mean", "max"):
        for idx, off, kw in (([1, 2, 0, 3, 3, 5, 5], [0, 2, 2, 4], {}),
                             ([1, 2, 0, 3, 3, 5, 5], [0, 2, 2, 4, 7],
                              {"include_last_offset": True}),
                             ([1, 2, 0, 3, 3], [0, 2, 2, 4], {"padding_idx": 3})):
            wt = torch.tensor(w, requires_grad=True)
            t = torch.nn.functional.embedding_bag(torch.tensor(idx), wt, torch.tensor(off),
                                                  mode=mode, **kw)
            t.sum().backward()
            for dev in DEVICES:
                we = ember.tensor(w, device=dev, requires_grad=True)
                e = F.embedding_bag(ember.tensor(idx, device=dev), we,
                                    ember.tensor(off, device=dev), mode=mode, **kw)
                e.sum().backward()
                np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().numpy(),
                                           rtol=1e-12)
                np.testing.assert_allclose(we.grad.cpu().numpy(), wt.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
def test_max_norm_renormalizes_the_looked_up_rows_in_place(dev):
    w = rng.standard_normal((10, 3)) * 5
    idx, off = [1, 2, 4, 5, 2], [0, 2]
    weight = ember.tensor(w, device=dev)
    out = F.embedding_bag(ember.tensor(idx, device=dev), weight, ember.tensor(off, device=dev),
                          max_norm=1.0, mode="sum")
    scaled = w.copy()
    for r in set(idx):   # PyTorch's embedding_renorm_: each looked-up row to norm <= max_norm
        n = np.linalg.norm(w[r])
        scaled[r] = w[r] / (n + 1e-7) if n > 1.0 else w[r]
    np.testing.assert_allclose(weight.cpu().numpy(), scaled, rtol=1e-6)
    np.testing.assert_allclose(out.cpu().numpy(), ref(idx, scaled, off, "sum"), rtol=1e-5)
