"""nn layers and nn.functional: forward values against numpy formulas, gradients against finite
differences (gradcheck, float64), and forward+backward against torch when it is installed."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import nn
from ember.autograd import gradcheck

F64 = ember.float64
RNG = np.random.default_rng(0)


def arr(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape)


def T(a, grad=True, dtype=F64):
    return ember.tensor(a, dtype=dtype).requires_grad_(grad)


def close(a, b, rtol=1e-5, atol=1e-6):
    a = a.detach().cpu().numpy() if isinstance(a, ember.Tensor) else a
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# -- numpy references ---------------------------------------------------------------------------
def test_linear_forward_backward_numpy():
    x, w, b = arr(5, 3), arr(4, 3), arr(4)
    close(F.linear(T(x), T(w), T(b)), x @ w.T + b)
    close(F.linear(T(arr(2, 5, 3)), T(w)).shape, (2, 5, 4))
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (T(x), T(w), T(b)))
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (T(arr(2, 2, 3)), T(w), T(b)))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(5x3 and 2x4\)"):
        F.linear(T(x), T(arr(4, 2)))
    # torch's message: addmm cannot expand the bias to the result
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(4\) must match "
                                           r"the existing size \(5\)"):
        F.linear(T(x), T(w), T(arr(5)))


def test_linear_module_default_init_bounds():
    ember.manual_seed(0)
    m = nn.Linear(100, 30)
    bound = 1 / math.sqrt(100)
    w = m.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    assert m.weight.dtype is ember.float32
    assert nn.Linear(2, 3, bias=False).bias is None
    assert nn.Linear(2, 3, dtype=F64).weight.dtype is F64


def test_bilinear_numpy_and_grad():
    x1, x2, w, b = arr(4, 3), arr(4, 2), arr(5, 3, 2), arr(5)
    want = np.einsum("bi,oij,bj->bo", x1, w, x2) + b
    close(F.bilinear(T(x1), T(x2), T(w), T(b)), want)
    assert gradcheck(F.bilinear, (T(x1), T(x2), T(w), T(b)))
    m = nn.Bilinear(3, 2, 5)
    assert m(ember.randn(7, 3), ember.randn(7, 2)).shape == (7, 5)
    with pytest.raises(RuntimeError, match="bilinear"):
        F.bilinear(T(x1), T(arr(4, 3)), T(w))


ACTS = [
    ("relu", lambda x: F.relu(x), lambda a: np.maximum(a, 0)),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda a: np.where(a > 0, a, 0.2 * a)),
    ("gelu", lambda x: F.gelu(x), None),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"),
     lambda a: 0.5 * a * (1 + np.tanh(math.sqrt(2 / math.pi) * (a + 0.044715 * a ** 3)))),
    ("silu", lambda x: F.silu(x), lambda a: a / (1 + np.exp(-a))),
    ("mish", lambda x: F.mish(x), lambda a: a * np.tanh(np.log1p(np.exp(a)))),
    ("elu", lambda x: F.elu(x, 0.7), lambda a: np.where(a > 0, a, 0.7 * np.expm1(a))),
    ("selu", lambda x: F.selu(x), None),
    ("celu", lambda x: F.celu(x, 1.5), lambda a: np.where(a > 0, a, 1.5 * np.expm1(a / 1.5))),
    ("hardtanh", lambda x: F.hardtanh(x, -0.5, 0.6), lambda a: np.clip(a, -0.5, 0.6)),
    ("relu6", lambda x: F.relu6(x * 4), lambda a: np.clip(a * 4, 0, 6)),
    ("hardsigmoid", lambda x: F.hardsigmoid(x * 4), lambda a: np.clip(a * 4 / 6 + 0.5, 0, 1)),
    ("hardswish", lambda x: F.hardswish(x * 4),
     lambda a: a * 4 * np.clip(a * 4 / 6 + 0.5, 0, 1)),
    ("softplus", lambda x: F.softplus(x, 2.0, 3.0),
     lambda a: np.where(2 * a > 3, a, np.log1p(np.exp(2 * a)) / 2)),
    ("softsign", F.softsign, lambda a: a / (1 + np.abs(a))),
    ("sigmoid", F.sigmoid, lambda a: 1 / (1 + np.exp(-a))),
    ("tanh", F.tanh, np.tanh),
    ("logsigmoid", F.logsigmoid, lambda a: -np.log1p(np.exp(-a))),
    ("tanhshrink", F.tanhshrink, lambda a: a - np.tanh(a)),
    ("threshold", lambda x: F.threshold(x, 0.3, -1.0), lambda a: np.where(a > 0.3, a, -1.0)),
    ("glu", lambda x: F.glu(x, 1), lambda a: a[:, :2] / (1 + np.exp(-a[:, 2:]))),
    ("softmax", lambda x: F.softmax(x, 1),
     lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
    ("softmin", lambda x: F.softmin(x, 0),
     lambda a: np.exp(-a) / np.exp(-a).sum(0, keepdims=True)),
    ("log_softmax", lambda x: F.log_softmax(x, 1),
     lambda a: a - np.log(np.exp(a).sum(1, keepdims=True))),
]


@pytest.mark.parametrize("name,fn,ref", ACTS, ids=[a[0] for a in ACTS])
def test_activations(name, fn, ref):
    # values away from the kinks (0, thresholds) so finite differences are meaningful
    # (|4a| < 3 keeps relu6/hardsigmoid/hardswish off their kinks)
    a = RNG.uniform(0.1, 0.7, (3, 4)) * RNG.choice([-1, 1], (3, 4))
    for kink in (0.3, -0.5, 0.6):
        a[np.abs(a - kink) < 0.04] -= 0.1 * np.sign(kink)
    x = T(a)
    if ref is not None:
        close(fn(x), ref(a))
    assert gradcheck(fn, (x,))


def test_activation_modules_and_inplace():
    x = ember.tensor([-1.0, 0.5, 2.0])
    y = x.clone()
    assert nn.ReLU(inplace=True)(y) is y and y.tolist() == [0.0, 0.5, 2.0]
    z = x.clone()
    nn.LeakyReLU(0.1, inplace=True)(z)
    close(z, [-0.1, 0.5, 2.0])
    close(nn.PReLU(init=0.3)(x), [-0.3, 0.5, 2.0])
    p = nn.PReLU(3, init=0.1)
    out = p(ember.tensor([[-1.0, -2.0, 3.0]]))
    close(out, [[-0.1, -0.2, 3.0]])
    out.sum().backward()
    close(p.weight.grad, [-1.0, -2.0, 0.0])
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        s = nn.Softmax()(ember.ones(2, 3))
    close(s, np.full((2, 3), 1 / 3))
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(ember.ones(3))


def test_dropout_statistics_and_modes():
    ember.manual_seed(0)
    x = ember.ones(200, 100)
    y = F.dropout(x, 0.3, training=True)
    a = y.numpy()
    kept = a != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(a[kept], 1 / 0.7, rtol=1e-6)
    assert F.dropout(x, 0.3, training=False) is x
    assert F.dropout(x, 1.0).abs().sum().item() == 0
    m = nn.Dropout(0.5)
    m.eval()
    assert m(x) is x
    ember.manual_seed(5)
    a1 = F.dropout(x, 0.5).numpy()
    ember.manual_seed(5)
    a2 = F.dropout(x, 0.5).numpy()
    np.testing.assert_array_equal(a1, a2)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        nn.Dropout(1.5)
    # the gradient is the mask scaled
    w = ember.ones(50, requires_grad=True)
    out = F.dropout(w, 0.4)
    out.sum().backward()
    close(w.grad, out.detach().numpy())
    z = ember.ones(10)
    assert F.dropout(z, 0.5, inplace=True) is z


def _ln_ref(a, axes, eps=1e-5):
    m = a.mean(axis=axes, keepdims=True)
    v = a.var(axis=axes, keepdims=True)
    return (a - m) / np.sqrt(v + eps)


def test_layer_norm():
    a, w, b = arr(3, 4, 5), arr(4, 5), arr(4, 5)
    close(F.layer_norm(T(a), (4, 5), T(w), T(b)), _ln_ref(a, (1, 2)) * w + b)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (5,), w, b),
                     (T(arr(2, 5)), T(arr(5)), T(arr(5))))
    m = nn.LayerNorm(5)
    close(m(ember.tensor(a)), _ln_ref(a, (2,)), rtol=1e-4, atol=1e-5)
    assert nn.LayerNorm(5, bias=False).bias is None
    with pytest.raises(RuntimeError, match=r"given normalized_shape=\[4\], expected input with "
                                           r"shape \[\*, 4\], but got input of size\[3, 4, 5\]"):
        F.layer_norm(T(a), (4,))


def test_rms_norm():
    a, w = arr(3, 6), arr(6)
    want = a / np.sqrt((a * a).mean(-1, keepdims=True) + np.finfo(np.float64).eps) * w
    close(F.rms_norm(T(a), (6,), T(w)), want)
    close(F.rms_norm(T(a), 6, eps=0.5), a / np.sqrt((a * a).mean(-1, keepdims=True) + 0.5))
    assert gradcheck(lambda x, w: F.rms_norm(x, (6,), w, 1e-3), (T(a), T(w)))
    assert nn.RMSNorm([6])(ember.randn(2, 6)).shape == (2, 6)


def test_group_norm():
    a, w, b = arr(2, 6, 3), arr(6), arr(6)
    g = a.reshape(2, 3, -1)
    want = _ln_ref(g, (2,)).reshape(a.shape) * w[:, None] + b[:, None]
    close(F.group_norm(T(a), 3, T(w), T(b)), want)
    assert gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (T(a), T(w), T(b)))
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(T(a), 4)
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups "
                                         r"\(4\)"):
        nn.GroupNorm(4, 6)


def test_batch_norm_training_running_stats_and_eval():
    bn = nn.BatchNorm1d(3, momentum=0.2)
    a = arr(8, 3)
    y = bn(ember.tensor(a, dtype=ember.float32))
    close(y, _ln_ref(a, (0,)), rtol=1e-4, atol=1e-4)
    close(bn.running_mean, 0.2 * a.mean(0), rtol=1e-5)
    close(bn.running_var, 0.8 + 0.2 * a.var(0, ddof=1), rtol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    rm, rv = bn.running_mean.numpy(), bn.running_var.numpy()
    y = bn(ember.tensor(a, dtype=ember.float32))
    close(y, (a - rm) / np.sqrt(rv + 1e-5), rtol=1e-4, atol=1e-5)
    assert bn.num_batches_tracked.item() == 1
    # momentum=None: cumulative average
    cm = nn.BatchNorm1d(3, momentum=None)
    b1, b2 = arr(4, 3), arr(4, 3)
    cm(ember.tensor(b1, dtype=ember.float32))
    cm(ember.tensor(b2, dtype=ember.float32))
    close(cm.running_mean, (b1.mean(0) + b2.mean(0)) / 2, rtol=1e-5)
    # no running stats: batch statistics in eval mode too
    nt = nn.BatchNorm1d(3, track_running_stats=False).eval()
    assert nt.running_mean is None and "running_mean" not in nt.state_dict()
    close(nt(ember.tensor(a, dtype=ember.float32)), _ln_ref(a, (0,)), rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        bn(ember.ones(2, 3, 1, 1))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when "
                                         "training"):
        nn.BatchNorm1d(3)(ember.ones(1, 3))


def test_batch_norm_2d_and_gradcheck():
    a = arr(2, 3, 2, 2)
    close(nn.BatchNorm2d(3)(ember.tensor(a)), _ln_ref(a, (0, 2, 3)), rtol=1e-4, atol=1e-4)
    rm, rv = ember.zeros(3, dtype=F64), ember.ones(3, dtype=F64)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                     (T(a), T(arr(3)), T(arr(3))))
    assert gradcheck(lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=False),
                     (T(a), T(arr(3)), T(arr(3))))


def test_embedding_padding_and_grad():
    w = arr(5, 3)
    idx = ember.tensor([[0, 2], [4, 2]])
    close(F.embedding(idx, T(w)), w[[[0, 2], [4, 2]]])
    wt = T(w)
    F.embedding(idx, wt, padding_idx=2).sum().backward()
    close(wt.grad, np.array([[1.0] * 3, [0] * 3, [0] * 3, [0] * 3, [1.0] * 3]))
    wt = T(w)
    F.embedding(idx, wt, scale_grad_by_freq=True).sum().backward()
    close(wt.grad, np.array([[1.0] * 3, [0] * 3, [1.0] * 3, [0] * 3, [1.0] * 3]))
    e = nn.Embedding(10, 4, padding_idx=-1)
    assert e.padding_idx == 9 and e.weight[9].abs().sum().item() == 0
    assert e(ember.tensor([1, 9])).shape == (2, 4)
    with pytest.raises(IndexError, match="index out of range in self"):
        e(ember.tensor([10]))
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar "
                                           "types: Long, Int"):
        e(ember.tensor([1.0]))
    pre = nn.Embedding.from_pretrained(ember.tensor(w))
    assert not pre.weight.requires_grad
    # max_norm renormalizes the looked-up rows in place
    big = nn.Embedding(4, 2, max_norm=1.0)
    with ember.no_grad():
        big.weight.copy_(ember.tensor([[3.0, 4.0], [0.1, 0.0], [6.0, 8.0], [1.0, 0.0]]))
    big(ember.tensor([0, 1]))
    close(big.weight, [[0.6, 0.8], [0.1, 0.0], [6.0, 8.0], [1.0, 0.0]], rtol=1e-5)


def test_flatten_unflatten_identity():
    x = ember.randn(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(2, (2, 2))(x).shape == (2, 3, 2, 2)
    assert nn.Identity(54, foo=1)(x) is x
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints"):
        nn.Unflatten(1, 3)


def test_normalize_and_pad():
    a = arr(3, 4)
    close(F.normalize(T(a)), a / np.linalg.norm(a, axis=1, keepdims=True))
    close(F.normalize(T(a), p=1, dim=0), a / np.abs(a).sum(0, keepdims=True))
    assert gradcheck(lambda x: F.normalize(x, dim=1), (T(a),))
    x = arr(2, 3, 4)
    close(F.pad(T(x), (1, 2)), np.pad(x, [(0, 0), (0, 0), (1, 2)]))
    close(F.pad(T(x), (1, 0, 0, 2), value=7.0),
          np.pad(x, [(0, 0), (0, 2), (1, 0)], constant_values=7.0))
    close(F.pad(T(x), (-1, 1)), np.pad(x, [(0, 0), (0, 0), (0, 1)])[..., 1:])
    close(F.pad(T(x), (2, 3), mode="reflect"), np.pad(x, [(0, 0), (0, 0), (2, 3)], "reflect"))
    close(F.pad(T(x), (2, 3, 1, 1), mode="replicate"),
          np.pad(x, [(0, 0), (1, 1), (2, 3)], "edge"))
    close(F.pad(T(x), (1, 3), mode="circular"), np.pad(x, [(0, 0), (0, 0), (1, 3)], "wrap"))
    assert gradcheck(lambda t: F.pad(t, (1, 2, 1, 0), mode="reflect"), (T(x),))
    assert gradcheck(lambda t: F.pad(t, (2, -1), value=1.0), (T(x),))
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(T(x), (1,))
    with pytest.raises(RuntimeError, match="Padding size should be less than"):
        F.pad(T(x), (4, 0), mode="reflect")


# -- torch comparisons --------------------------------------------------------------------------
def _compare_with_torch(torch, make, inputs, *, train=True, rtol=1e-4, atol=1e-5):
    """Build the same module in both libraries, copy torch's state into ember, run forward and
    backward of a weighted sum, and compare outputs, input grads and parameter grads."""
    tm = make(torch.nn)
    em = make(nn)
    em.load_state_dict({k: ember.from_numpy(v.detach().numpy().copy())
                        for k, v in tm.state_dict().items()})
    tm.train(train)
    em.train(train)
    t_in = [torch.from_numpy(a.copy()).requires_grad_(a.dtype.kind == "f") for a in inputs]
    e_in = [ember.from_numpy(a.copy()).requires_grad_(a.dtype.kind == "f") for a in inputs]
    t_out, e_out = tm(*t_in), em(*e_in)
    close(e_out, t_out.detach().numpy(), rtol, atol)
    g = np.random.default_rng(3).standard_normal(tuple(t_out.shape)).astype(np.float32)
    t_out.backward(torch.from_numpy(g))
    e_out.backward(ember.from_numpy(g))
    for t, e in zip(t_in, e_in):
        if t.requires_grad:
            close(e.grad, t.grad.numpy(), rtol, atol)
    tp, ep = dict(tm.named_parameters()), dict(em.named_parameters())
    assert list(tp) == list(ep)
    for k in tp:
        close(ep[k].grad, tp[k].grad.numpy(), rtol, atol)
    for (k, tb), (_, eb) in zip(tm.named_buffers(), em.named_buffers()):
        close(eb, tb.numpy(), rtol, atol)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


TORCH_CASES = [
    ("linear", lambda n: n.Linear(5, 3), [f32(4, 5)]),
    ("linear3d", lambda n: n.Linear(5, 3), [f32(2, 4, 5)]),
    ("bilinear", lambda n: n.Bilinear(3, 4, 2), [f32(5, 3), f32(5, 4)]),
    ("bn1d", lambda n: n.BatchNorm1d(4), [f32(6, 4)]),
    ("bn1d_3d", lambda n: n.BatchNorm1d(4), [f32(6, 4, 3)]),
    ("bn2d", lambda n: n.BatchNorm2d(3), [f32(2, 3, 4, 4)]),
    ("layernorm", lambda n: n.LayerNorm((3, 4)), [f32(2, 3, 4)]),
    ("groupnorm", lambda n: n.GroupNorm(2, 4), [f32(3, 4, 5)]),
    ("rmsnorm", lambda n: n.RMSNorm(4, eps=1e-6), [f32(3, 4)]),
    ("gelu", lambda n: n.GELU(), [f32(3, 4)]),
    ("elu", lambda n: n.ELU(0.5), [f32(3, 4)]),
    ("softplus", lambda n: n.Softplus(2.0, 1.0), [f32(3, 4)]),
    ("logsoftmax", lambda n: n.LogSoftmax(1), [f32(3, 4)]),
    ("prelu", lambda n: n.PReLU(4), [f32(3, 4, 2)]),
    ("mlp", lambda n: n.Sequential(n.Linear(4, 8), n.BatchNorm1d(8), n.ReLU(), n.Linear(8, 2)),
     [f32(5, 4)]),
]


@pytest.mark.parametrize("name,make,inputs", TORCH_CASES, ids=[c[0] for c in TORCH_CASES])
def test_against_torch(name, make, inputs):
    torch = pytest.importorskip("torch")
    _compare_with_torch(torch, make, inputs)


def test_against_torch_eval_bn_and_embedding():
    torch = pytest.importorskip("torch")
    _compare_with_torch(torch, lambda n: n.BatchNorm1d(4), [f32(6, 4)], train=False)
    idx = np.array([[1, 0, 3], [3, 3, 2]], dtype=np.int64)
    _compare_with_torch(torch, lambda n: n.Embedding(5, 3, padding_idx=3), [idx])
    _compare_with_torch(torch, lambda n: n.Embedding(5, 3, scale_grad_by_freq=True), [idx])


def test_pad_against_torch():
    torch = pytest.importorskip("torch")
    x = f32(2, 3, 5, 6)
    for pad, mode in [((1, 2, 3, 1), "reflect"), ((2, 0, 1, 3), "replicate"),
                      ((1, 2, 2, 1), "circular"), ((1, -2, 0, 2), "constant")]:
        want = torch.nn.functional.pad(torch.from_numpy(x), pad, mode=mode).numpy()
        close(F.pad(ember.from_numpy(x), pad, mode=mode), want)


# -- other devices ------------------------------------------------------------------------------
def test_mlp_on_opencl_matches_cpu():
    if not ember.opencl.is_available():
        pytest.skip(f"opencl unavailable: {ember.opencl.unavailable_reason()}")
    ember.manual_seed(0)
    cpu = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 2))
    dev = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 2))
    dev.load_state_dict(cpu.state_dict())
    w = dev[0].weight
    assert dev.opencl() is dev and dev[0].weight is w and w.device.type == "opencl"
    x = ember.from_numpy(f32(8, 6))
    yc = cpu(x)
    yd = dev(x.to("opencl"))
    assert yd.device.type == "opencl"
    close(yd, yc.detach().numpy(), 1e-4, 1e-5)
    (yc ** 2).sum().backward()
    (yd ** 2).sum().backward()
    for (k, pc), pd in zip(cpu.named_parameters(), dev.parameters()):
        assert pd.grad.device.type == "opencl", k
        close(pd.grad, pc.grad.numpy(), 1e-4, 1e-4)
    close(dev[1].running_var, cpu[1].running_var.numpy(), 1e-5, 1e-6)
    dev.cpu()
    assert dev[0].weight.device.type == "cpu"
