"""In-place activations: forward in place on a tensor in the graph, then backward.

Each in-place activation saves what PyTorch saves — the result (leaky_relu_, elu_, celu_,
selu_, relu_, rrelu_) or a copy of the input taken before the write (hardtanh_, threshold_,
hardsigmoid_, hardswish_, silu_, mish_) — so the backward never trips over its own write.
Values and gradients are checked against numpy formulas, and against torch when installed.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

A = np.random.default_rng(7).uniform(-5, 5, (3, 5))
W = np.random.default_rng(8).uniform(0.5, 1.5, (3, 5))  # upstream gradient

_SELU_A, _SELU_S = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def _elu(x, alpha=1.0, scale=1.0, input_scale=1.0):
    out = np.where(x > 0, scale * x, scale * alpha * np.expm1(x * input_scale))
    d = np.where(x > 0, scale, scale * alpha * input_scale * np.exp(x * input_scale))
    return out, d


def _clip(x, lo, hi):
    return np.clip(x, lo, hi), ((x > lo) & (x < hi)).astype(float)


def _sig(x):
    return 1 / (1 + np.exp(-x))


# name -> (in-place call on ember.nn.functional, numpy (value, derivative), PyTorch's node name)
CASES = {
    "relu": (lambda x: F.relu(x, inplace=True),
             lambda x: (np.maximum(x, 0), (x > 0).astype(float)), "ReluBackward0"),
    "relu_": (lambda x: F.relu_(x), lambda x: (np.maximum(x, 0), (x > 0).astype(float)),
              "ReluBackward0"),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2, inplace=True),
                   lambda x: (np.where(x > 0, x, 0.2 * x), np.where(x > 0, 1.0, 0.2)),
                   "LeakyReluBackward1"),
    "leaky_relu_": (lambda x: F.leaky_relu_(x, 0.3),
                    lambda x: (np.where(x > 0, x, 0.3 * x), np.where(x > 0, 1.0, 0.3)),
                    "LeakyReluBackward1"),
    "elu": (lambda x: F.elu(x, 0.7, inplace=True), lambda x: _elu(x, 0.7), "EluBackward1"),
    "elu_": (lambda x: F.elu_(x), lambda x: _elu(x), "EluBackward1"),
    "celu": (lambda x: F.celu(x, 1.5, inplace=True), lambda x: _elu(x, 1.5, 1.0, 1 / 1.5),
             "CeluBackward1"),
    "celu_": (lambda x: F.celu_(x, 2.0), lambda x: _elu(x, 2.0, 1.0, 0.5), "CeluBackward1"),
    "selu": (lambda x: F.selu(x, inplace=True), lambda x: _elu(x, _SELU_A, _SELU_S),
             "EluBackward1"),
    "selu_": (lambda x: ember.selu_(x), lambda x: _elu(x, _SELU_A, _SELU_S), "EluBackward1"),
    "hardtanh": (lambda x: F.hardtanh(x, -0.5, 2.0, inplace=True),
                 lambda x: _clip(x, -0.5, 2.0), "HardtanhBackward0"),
    "hardtanh_": (lambda x: F.hardtanh_(x), lambda x: _clip(x, -1.0, 1.0), "HardtanhBackward0"),
    "relu6": (lambda x: F.relu6(x, inplace=True), lambda x: _clip(x, 0.0, 6.0),
              "HardtanhBackward0"),
    "threshold": (lambda x: F.threshold(x, 0.5, 20.0, inplace=True),
                  lambda x: (np.where(x > 0.5, x, 20.0), (x > 0.5).astype(float)),
                  "ThresholdBackward1"),
    "threshold_": (lambda x: ember.threshold_(x, -1.0, 3.0),
                   lambda x: (np.where(x > -1.0, x, 3.0), (x > -1.0).astype(float)),
                   "ThresholdBackward1"),
    "hardsigmoid": (lambda x: F.hardsigmoid(x, inplace=True),
                    lambda x: (np.clip(x + 3, 0, 6) / 6, ((x > -3) & (x < 3)) / 6),
                    "HardsigmoidBackward0"),
    "hardswish": (lambda x: F.hardswish(x, inplace=True),
                  lambda x: (x * np.clip(x + 3, 0, 6) / 6,
                             np.where(x < -3, 0.0, np.where(x <= 3, x / 3 + 0.5, 1.0))),
                  "HardswishBackward0"),
    "silu": (lambda x: F.silu(x, inplace=True),
             lambda x: (x * _sig(x), _sig(x) * (1 + x * (1 - _sig(x)))), "SiluBackward0"),
    "mish": (lambda x: F.mish(x, inplace=True),
             lambda x: (x * np.tanh(np.log1p(np.exp(x))),
                        np.tanh(np.log1p(np.exp(x))) + x * _sig(x) *
                        (1 - np.tanh(np.log1p(np.exp(x))) ** 2)), "MishBackward0"),
    "rrelu eval": (lambda x: F.rrelu(x, 0.1, 0.3, training=False, inplace=True),
                   lambda x: (np.where(x > 0, x, 0.2 * x), np.where(x > 0, 1.0, 0.2)),
                   "LeakyReluBackward1"),
    "sigmoid_": (lambda x: x.sigmoid_(), lambda x: (_sig(x), _sig(x) * (1 - _sig(x))),
                 "SigmoidBackward0"),
}


def _run(fn, device="cpu"):
    a = ember.tensor(A, requires_grad=True, device=device)
    x = a * 1  # not a leaf: in-place is allowed
    y = fn(x)
    assert y is x, "in-place activations return their input"
    name = type(y.grad_fn).__name__
    y.backward(ember.tensor(W, device=device))
    return y.detach().cpu().numpy(), a.grad.cpu().numpy(), name


@pytest.mark.parametrize("case", sorted(CASES))
def test_inplace_forward_backward(case):
    fn, ref, node = CASES[case]
    value, grad, name = _run(fn)
    want_value, want_d = ref(A)
    np.testing.assert_allclose(value, want_value, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(grad, W * want_d, rtol=1e-6, atol=1e-9)
    assert name == node


# the same calls on torch (x is a non-leaf float64 tensor)
TORCH_CALLS = {
    "relu": lambda t, F, x: F.relu(x, inplace=True), "relu_": lambda t, F, x: F.relu_(x),
    "leaky_relu": lambda t, F, x: F.leaky_relu(x, 0.2, inplace=True),
    "leaky_relu_": lambda t, F, x: F.leaky_relu_(x, 0.3),
    "elu": lambda t, F, x: F.elu(x, 0.7, inplace=True), "elu_": lambda t, F, x: F.elu_(x),
    "celu": lambda t, F, x: F.celu(x, 1.5, inplace=True), "celu_": lambda t, F, x: t.celu_(x, 2.0),
    "selu": lambda t, F, x: F.selu(x, inplace=True), "selu_": lambda t, F, x: t.selu_(x),
    "hardtanh": lambda t, F, x: F.hardtanh(x, -0.5, 2.0, inplace=True),
    "hardtanh_": lambda t, F, x: F.hardtanh_(x),
    "relu6": lambda t, F, x: F.relu6(x, inplace=True),
    "threshold": lambda t, F, x: F.threshold(x, 0.5, 20.0, inplace=True),
    "threshold_": lambda t, F, x: t.threshold_(x, -1.0, 3.0),
    "hardsigmoid": lambda t, F, x: F.hardsigmoid(x, inplace=True),
    "hardswish": lambda t, F, x: F.hardswish(x, inplace=True),
    "silu": lambda t, F, x: F.silu(x, inplace=True), "mish": lambda t, F, x: F.mish(x, inplace=True),
    "rrelu eval": lambda t, F, x: F.rrelu(x, 0.1, 0.3, training=False, inplace=True),
    "sigmoid_": lambda t, F, x: x.sigmoid_(),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_inplace_matches_torch(case):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF
    a = torch.tensor(A, requires_grad=True)
    y = TORCH_CALLS[case](torch, TF, a * 1)
    y.backward(torch.tensor(W))
    value, grad, name = _run(CASES[case][0])
    np.testing.assert_allclose(value, y.detach().numpy(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(grad, a.grad.numpy(), rtol=1e-6, atol=1e-9)
    if case != "rrelu eval":  # torch records rrelu through RreluWithNoiseBackward1
        assert name == type(y.grad_fn).__name__


@pytest.mark.parametrize("module", [
    nn.ReLU(inplace=True), nn.LeakyReLU(0.1, inplace=True), nn.ELU(inplace=True),
    nn.CELU(0.5, inplace=True), nn.SELU(inplace=True), nn.Hardtanh(inplace=True),
    nn.ReLU6(inplace=True), nn.Threshold(0.1, 2.0, inplace=True), nn.Hardsigmoid(inplace=True),
    nn.Hardswish(inplace=True), nn.SiLU(inplace=True), nn.Mish(inplace=True),
    nn.RReLU(inplace=True)], ids=lambda m: type(m).__name__)
def test_inplace_modules_train_step(module):
    """The issue's bug: a Linear then an in-place activation, backward through both."""
    ember.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 4), module, nn.Linear(4, 1))
    x = ember.tensor(A, dtype=ember.float32)
    model(x).sum().backward()
    for p in model.parameters():
        assert p.grad is not None and bool(ember.isfinite(p.grad).all())


def test_negative_slope_in_place_raises_at_backward_like_torch():
    for fn, words in ((lambda x: F.leaky_relu_(x, -0.1), "In-place leakyReLu backward"),
                      (lambda x: F.elu_(x, -0.5), "In-place elu backward"),
                      (lambda x: F.celu_(x, -0.5), "In-place elu backward")):
        a = ember.tensor(A, requires_grad=True)
        y = fn(a * 1)  # the forward is fine
        with pytest.raises(RuntimeError, match=words):
            y.sum().backward()
    # without autograd a negative slope is fine in place
    x = ember.tensor(A)
    np.testing.assert_allclose(F.leaky_relu_(x, -0.1).numpy(), np.where(A > 0, A, -0.1 * A))


def test_saved_result_catches_a_later_write():
    """leaky_relu_ saves its result: writing into it again must make backward raise (as in
    torch), while activations that save a copy of the input do not care."""
    a = ember.tensor(A, requires_grad=True)
    y = F.leaky_relu_(a * 1, 0.1)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    b = ember.tensor(A, requires_grad=True)
    z = F.hardtanh_(b * 1)
    z.mul_(2)  # MulBackward0 saves nothing of z (a constant factor): fine
    z.sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), 2 * ((A > -1) & (A < 1)))


def test_inplace_on_a_view_rebases_the_base():
    a = ember.tensor(A, requires_grad=True)
    x = a * 1
    F.hardtanh_(x[:, 2], -0.5, 0.5)  # saves a copy of the column
    F.leaky_relu_(x[1], 0.2)         # saves its result, the row (written last)
    x.backward(ember.tensor(W))
    col = A[:, 2]
    d = np.ones_like(A)
    d[:, 2] = (col > -0.5) & (col < 0.5)
    row = A[1].copy()
    row[2] = np.clip(row[2], -0.5, 0.5)
    d[1] *= np.where(row > 0, 1.0, 0.2)
    np.testing.assert_allclose(a.grad.numpy(), W * d, rtol=1e-6)
    # the other order overwrites the saved row: an error, as in torch
    b = ember.tensor(A, requires_grad=True)
    y = b * 1
    F.leaky_relu_(y[1], 0.2)
    F.hardtanh_(y[2], -0.5, 0.5)
    with pytest.raises(RuntimeError, match="output 0 of LeakyReluBackward1"):
        y.sum().backward()


def test_double_backward_through_a_saved_result():
    a = ember.tensor([-1.5, -0.2, 0.4, 2.0], dtype=ember.float64, requires_grad=True)
    y = F.elu_(a * 1, 0.8)
    (g,) = ember.autograd.grad(y.sum(), a, create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), a)
    x = a.detach().numpy()
    np.testing.assert_allclose(g.detach().numpy(), np.where(x > 0, 1.0, 0.8 * np.exp(x)))
    np.testing.assert_allclose(gg.numpy(), np.where(x > 0, 0.0, 0.8 * np.exp(x)))


def test_rrelu_training_slopes_and_gradient():
    ember.manual_seed(3)
    a = ember.tensor(A, requires_grad=True)
    x = a * 1
    y = F.rrelu(x, 0.1, 0.3, training=True, inplace=True)
    y.backward(ember.ones(3, 5, dtype=ember.float64))
    slope = y.detach().numpy() / A
    neg = A < 0
    assert ((slope[neg] >= 0.1) & (slope[neg] <= 0.3)).all()
    np.testing.assert_allclose(slope[~neg], 1.0)
    np.testing.assert_allclose(a.grad.numpy(), slope, rtol=1e-12)
    with pytest.raises(RuntimeError, match="Lower bound should be less than or equal"):
        F.rrelu(ember.tensor(A), 0.5, 0.1, training=True)


def test_bad_inputs_name_the_op():
    with pytest.raises(RuntimeError, match="leaky_relu_.*floating"):
        F.leaky_relu_(ember.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="hardsigmoid_.*floating"):
        F.hardsigmoid(ember.tensor([1, 2]), inplace=True)
    with pytest.raises(ValueError, match="hardtanh_: min_val cannot be greater"):
        F.hardtanh_(ember.tensor(A), 1.0, -1.0)
    with pytest.raises(RuntimeError, match="celu_.*alpha must not be 0"):
        F.celu_(ember.tensor(A), 0.0)
    with pytest.raises(TypeError, match="threshold"):
        F.threshold([1.0], 0.0, 0.0)
    a = ember.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.leaky_relu_(a)


def test_inplace_activations_on_opencl_match_cpu():
    if not ember.opencl.is_available():
        pytest.skip(ember.opencl.unavailable_reason())
    for case in ("leaky_relu", "elu", "celu", "hardtanh", "threshold", "hardsigmoid",
                 "hardswish", "silu"):
        fn = CASES[case][0]
        want_value, want_grad, want_name = _run(fn, "cpu")
        value, grad, name = _run(fn, "opencl")
        np.testing.assert_allclose(value, want_value, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-6, atol=1e-9)
        assert name == want_name
