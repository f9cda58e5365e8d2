"""nn.utils (clip_grad_*, parameters<->vector) and ember.utils.checkpoint."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.nn.utils import (clip_grad_norm_, clip_grad_value_, get_total_norm,
                            parameters_to_vector, vector_to_parameters)
from ember.utils.checkpoint import checkpoint, checkpoint_sequential


def _params_with_grads(grads):
    ps = []
    for g in grads:
        p = nn.Parameter(ember.zeros(*g.shape, dtype=ember.float64))
        p.grad = ember.tensor(g, dtype=ember.float64)
        ps.append(p)
    return ps


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
def test_clip_grad_norm_numpy(norm_type):
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    ps = _params_with_grads(grads)
    flat = np.concatenate([g.ravel() for g in grads])
    total = np.abs(flat).max() if norm_type == math.inf else \
        (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    max_norm = total / 4
    got = clip_grad_norm_(ps, max_norm, norm_type=norm_type)
    assert got.item() == pytest.approx(total, rel=1e-10)
    coef = max_norm / (total + 1e-6)
    for p, g in zip(ps, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-10)
    # under the limit nothing changes
    before = [p.grad.numpy().copy() for p in ps]
    clip_grad_norm_(ps, 1e9, norm_type=norm_type)
    for p, b in zip(ps, before):
        np.testing.assert_array_equal(p.grad.numpy(), b)


def test_clip_grad_norm_edge_cases():
    p = nn.Parameter(ember.zeros(2))
    assert clip_grad_norm_([p], 1.0).item() == 0.0  # no gradients at all
    p.grad = ember.tensor([float("nan"), 1.0])
    with pytest.raises(RuntimeError, match="The total norm of order 2.0 for gradients from "
                                           "`parameters` is non-finite"):
        clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    assert math.isnan(clip_grad_norm_(p, 1.0, foreach=True).item())
    q = nn.Parameter(ember.zeros(2))
    q.grad = ember.tensor([3.0, 4.0])
    assert get_total_norm([q.grad]).item() == pytest.approx(5.0)


def test_clip_grad_norm_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(7)
             .astype(np.float32)]
    tp = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
    for p, g in zip(tp, grads):
        p.grad = torch.from_numpy(g.copy())
    ep = [nn.Parameter(ember.zeros(*g.shape)) for g in grads]
    for p, g in zip(ep, grads):
        p.grad = ember.from_numpy(g.copy())
    for norm_type in (2.0, math.inf, 1.5):
        tn = torch.nn.utils.clip_grad_norm_(tp, 0.7, norm_type)
        en = clip_grad_norm_(ep, 0.7, norm_type)
        assert en.item() == pytest.approx(tn.item(), rel=1e-5)
        for a, b in zip(ep, tp):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_value():
    ps = _params_with_grads([np.array([-3.0, 0.5, 2.0])])
    clip_grad_value_(ps, 1.0)
    assert ps[0].grad.tolist() == [-1.0, 0.5, 1.0]
    clip_grad_value_(ps[0], 0.25)
    assert ps[0].grad.tolist() == [-0.25, 0.25, 0.25]


def test_parameters_vector_roundtrip():
    m = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    v = parameters_to_vector(m.parameters())
    assert v.shape == (11,)
    want = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    np.testing.assert_array_equal(v.detach().numpy(), want)
    w = m[0].weight
    vector_to_parameters(ember.arange(11, dtype=ember.float32), m.parameters())
    assert m[0].weight is w
    assert m[0].weight.detach().numpy().ravel().tolist() == [0, 1, 2, 3, 4, 5]
    assert m[1].bias.tolist() == [10.0]
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        vector_to_parameters([1.0], m.parameters())
    with pytest.raises(RuntimeError, match="has 3 elements but the parameters need 11"):
        vector_to_parameters(ember.zeros(3), m.parameters())


# -- checkpoint ---------------------------------------------------------------------------------
def _grads(m):
    return [p.grad.numpy().copy() for p in m.parameters()]


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.3), nn.Linear(8, 3))


@pytest.mark.parametrize("input_grad", [True, False])
def test_checkpoint_gradients_equal(input_grad):
    m = _model()
    x = ember.randn(5, 4).requires_grad_(input_grad)
    ember.manual_seed(1)
    y = m(x)
    (y * y).sum().backward()
    ref, ref_x = _grads(m), x.grad.numpy().copy() if input_grad else None
    m.zero_grad()
    x.grad = None
    ember.manual_seed(1)
    y2 = checkpoint(m, x, use_reentrant=False)
    assert type(y2.grad_fn).__name__ == "CheckpointBackward"
    np.testing.assert_array_equal(y2.detach().numpy(), y.detach().numpy())
    (y2 * y2).sum().backward()
    for a, b in zip(_grads(m), ref):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    if input_grad:
        np.testing.assert_allclose(x.grad.numpy(), ref_x, rtol=1e-6, atol=1e-7)


def test_checkpoint_gradcheck_and_multiple_outputs():
    def fn(a, b, *, scale):
        h = (a @ b).tanh()
        return h * scale, h.sum()

    a = ember.randn(3, 4, dtype=ember.float64, requires_grad=True)
    b = ember.randn(4, 2, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: checkpoint(fn, a, b, scale=2.0)[0] +
                                    checkpoint(fn, a, b, scale=1.0)[1], (a, b))
    out, s = checkpoint(fn, a, b, scale=3.0)
    (out.sum() + s).backward()
    ga, gb = a.grad.numpy().copy(), b.grad.numpy().copy()
    a.grad = b.grad = None
    out, s = fn(a, b, scale=3.0)
    (out.sum() + s).backward()
    np.testing.assert_allclose(ga, a.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gb, b.grad.numpy(), rtol=1e-12)


def test_checkpoint_misc():
    m = _model()
    x = ember.randn(2, 4)
    with ember.no_grad():
        y = checkpoint(m, x)
    assert y.grad_fn is None
    with pytest.raises(ValueError, match="Unexpected keyword arguments: k"):
        checkpoint(lambda t, k: t, x, use_reentrant=True, k=1)
    y = checkpoint(m, x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through a checkpointed segment a second "
                                           "time"):
        y.sum().backward()
    # outputs that need no grad pass through untouched
    z = checkpoint(lambda t: t * 2, ember.ones(2))
    assert not z.requires_grad and z.tolist() == [2.0, 2.0]


def test_checkpoint_sequential_matches():
    m = nn.Sequential(*[nn.Linear(4, 4) if i % 2 == 0 else nn.Tanh() for i in range(6)])
    x = ember.randn(3, 4, requires_grad=True)
    m(x).pow(2).sum().backward()
    ref, rx = _grads(m), x.grad.numpy().copy()
    m.zero_grad()
    x.grad = None
    checkpoint_sequential(m, 3, x, use_reentrant=False).pow(2).sum().backward()
    for a, b in zip(_grads(m), ref):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(x.grad.numpy(), rx, rtol=1e-6, atol=1e-7)


def test_checkpoint_with_layernorm_closure_params():
    ln = nn.LayerNorm(4)
    w = nn.Parameter(ember.randn(4, 4))

    def block(t):
        return F.gelu(ln(t @ w))
    x = ember.randn(2, 4, requires_grad=True)
    block(x).sum().backward()
    ref = [w.grad.numpy().copy(), ln.weight.grad.numpy().copy(), x.grad.numpy().copy()]
    w.grad = x.grad = None
    ln.zero_grad()
    checkpoint(block, x).sum().backward()
    for a, b in zip([w.grad.numpy(), ln.weight.grad.numpy(), x.grad.numpy()], ref):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
