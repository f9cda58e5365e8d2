"""torch.lstm / torch.gru / torch.rnn_tanh / torch.rnn_relu native forms against torch's, with
the same flat parameters (padded and packed overloads, bidirectional, two layers,
projections), and gradients through them."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _params(mode, layers, bidir, inp, hidden, proj=0, seed=0):
    rng = np.random.default_rng(seed)
    gates = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}[mode]
    out = []
    for layer in range(layers):
        for _ in range(2 if bidir else 1):
            fin = inp if layer == 0 else (proj or hidden) * (2 if bidir else 1)
            hsz = proj or hidden
            shapes = [(gates * hidden, fin), (gates * hidden, hsz), (gates * hidden,),
                      (gates * hidden,)] + ([(proj, hidden)] if proj else [])
            out += [rng.standard_normal(s).astype(np.float32) * 0.3 for s in shapes]
    return out


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("bidir, batch_first", [(False, False), (True, True)])
def test_padded_form_matches_torch(mode, bidir, batch_first):
    layers, T, B, F, H = 2, 5, 3, 4, 6
    params = _params(mode, layers, bidir, F, H)
    d = 2 if bidir else 1
    rng = np.random.default_rng(1)
    x = rng.standard_normal((B, T, F) if batch_first else (T, B, F)).astype(np.float32)
    h0 = rng.standard_normal((layers * d, B, H)).astype(np.float32)
    c0 = rng.standard_normal((layers * d, B, H)).astype(np.float32)
    hx = (h0, c0) if mode == "lstm" else h0

    def wrap(lib, a):
        return [lib.tensor(v) for v in a] if isinstance(a, (list, tuple)) else lib.tensor(a)
    got = getattr(ember, mode)(wrap(ember, x), wrap(ember, hx), wrap(ember, params), True,
                               layers, 0.0, False, bidir, batch_first)
    want = getattr(torch, mode)(wrap(torch, x), wrap(torch, hx), wrap(torch, params), True,
                                layers, 0.0, False, bidir, batch_first)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5)


def test_packed_lstm_with_projection_and_gradients():
    layers, F, H, P = 1, 3, 5, 2
    params = _params("lstm", layers, False, F, H, proj=P)
    sizes = [3, 2, 2, 1]
    rng = np.random.default_rng(2)
    data = rng.standard_normal((sum(sizes), F)).astype(np.float32)
    h0 = np.zeros((1, 3, P), np.float32)
    c0 = np.zeros((1, 3, H), np.float32)
    ep = [ember.tensor(p, requires_grad=True) for p in params]
    got = ember.lstm(ember.tensor(data), ember.tensor(sizes), (ember.tensor(h0),
                                                                ember.tensor(c0)),
                     ep, True, layers, 0.0, False, False)
    tp = [torch.tensor(p, requires_grad=True) for p in params]
    want = torch.lstm(torch.tensor(data), torch.tensor(sizes), (torch.tensor(h0),
                                                                 torch.tensor(c0)),
                      tp, True, layers, 0.0, False, False)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
    got[0].sum().backward()
    want[0].sum().backward()
    for a, b in zip(ep, tp):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_a_wrong_parameter_count_names_the_function():
    x, h = ember.randn(2, 1, 3), ember.randn(1, 1, 4)
    with pytest.raises(RuntimeError, match="gru: expected 4 parameters per layer"):
        ember.gru(x, h, [ember.randn(12, 3)] * 3, True, 1, 0.0, False, False, False)
