"""Convolution, pooling and normalisation as ops (issue #20): values and gradients against
numpy references and (optionally) torch, 1-3 spatial dims, double backward through the backward
ops, node names, the running statistics the batch-norm kernel writes, and OpenCL against the
CPU."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import nn as nn_ops

rng = np.random.default_rng(20)


def _t(a, grad=False, device="cpu"):
    return ember.tensor(np.asarray(a), requires_grad=grad, device=device)


# -- numpy references ---------------------------------------------------------------------------
def ref_conv(x, w, stride, padding, dilation, groups):
    """Direct N-d convolution by loops over kernel offsets (float64)."""
    nsp = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(p, p) for p in padding])
    n, c = x.shape[:2]
    oc, cg = w.shape[:2]
    k = w.shape[2:]
    out_sp = [(x.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1
              for i in range(nsp)]
    out = np.zeros((n, oc) + tuple(out_sp))
    ocg = oc // groups
    for off in itertools.product(*(range(kk) for kk in k)):
        sl = tuple(slice(o * d, o * d + (m - 1) * s + 1, s)
                   for o, d, m, s in zip(off, dilation, out_sp, stride))
        patch = x[(slice(None), slice(None)) + sl]                 # (N, C, *out)
        for g in range(groups):
            wg = w[g * ocg:(g + 1) * ocg, :, *off]                  # (OCg, Cg)
            pg = patch[:, g * cg:(g + 1) * cg]
            out[:, g * ocg:(g + 1) * ocg] += np.einsum("oc,nc...->no...", wg, pg)
    return out


@pytest.mark.parametrize("nsp", [1, 2, 3])
@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 0, 1, 1), (2, 1, 2, 2)])
def test_convolution_op_matches_numpy(nsp, stride, padding, dilation, groups):
    x = rng.standard_normal((2, 4) + (7, 6, 5)[:nsp])
    w = rng.standard_normal((6, 4 // groups) + (3, 2, 2)[:nsp])
    b = rng.standard_normal(6)
    v = (lambda a: [a] * nsp)
    y = nn_ops.convolution(_t(x), _t(w), _t(b), v(stride), v(padding), v(dilation), False,
                           v(0), groups)
    want = ref_conv(x, w, v(stride), v(padding), v(dilation), groups) + \
        b.reshape((6,) + (1,) * nsp)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10, atol=1e-10)


def test_transposed_convolution_is_the_adjoint():
    """<conv(x), y> == <x, conv_transpose(y)> with the same weight (3-d, strided, grouped)."""
    x = rng.standard_normal((2, 4, 7, 6, 5))
    w = rng.standard_normal((6, 2, 3, 2, 2))
    args = ([2, 1, 2], [1, 0, 1], [1, 2, 1])
    y = nn_ops.convolution(_t(x), _t(w), None, *args, False, [0, 0, 0], 2).numpy()
    z = rng.standard_normal(y.shape)
    op_ = [x.shape[2 + i] - ((y.shape[2 + i] - 1) * args[0][i] - 2 * args[1][i] +
                             args[2][i] * (w.shape[2 + i] - 1) + 1) for i in range(3)]
    xt = nn_ops.convolution(_t(z), _t(w), None, *args, True, op_, 2).numpy()
    assert xt.shape == x.shape
    np.testing.assert_allclose((y * z).sum(), (x * xt).sum(), rtol=1e-10)


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_double_backward(transposed):
    x = _t(rng.standard_normal((1, 2, 5, 4)), True)
    w = _t(rng.standard_normal((2, 2, 2, 3) if transposed else (4, 1, 2, 3)), True)
    b = _t(rng.standard_normal(4), True)

    def f(x, w, b):
        return nn_ops.convolution(x, w, b, [2, 1], [1, 1], [1, 2], transposed,
                                  [1, 0] if transposed else [0, 0], 2)
    assert ember.autograd.gradcheck(f, (x, w, b))
    assert ember.autograd.gradgradcheck(f, (x, w, b))
    g, = ember.autograd.grad(f(x, w, b).sum(), x, create_graph=True)
    assert f(x, w, b).grad_fn.name() == "ConvolutionBackward0"
    assert g.grad_fn.name() == "ConvolutionBackwardBackward0"


def test_conv3d_module_and_padding_modes():
    m = ember.nn.Conv3d(2, 3, 3, padding=1, padding_mode="replicate")
    x = rng.standard_normal((1, 2, 4, 5, 3)).astype(np.float32)
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1), (1, 1)], mode="edge")
    want = ref_conv(xp.astype(np.float64), m.weight.detach().numpy().astype(np.float64),
                    (1, 1, 1), (0, 0, 0), (1, 1, 1), 1) + \
        m.bias.detach().numpy().reshape(3, 1, 1, 1)
    np.testing.assert_allclose(m(_t(x)).detach().numpy(), want, rtol=1e-4, atol=1e-5)
    t = ember.nn.ConvTranspose3d(3, 2, 2, stride=2)
    assert tuple(t(_t(rng.standard_normal((1, 3, 2, 3, 2)).astype(np.float32))).shape) == \
        (1, 2, 4, 6, 4)


def test_conv_errors_name_the_op():
    x, w = _t(np.zeros((1, 3, 5, 5))), _t(np.zeros((4, 2, 3, 3)))
    with pytest.raises(RuntimeError, match="convolution"):
        nn_ops.convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    with pytest.raises(RuntimeError, match="bias"):
        nn_ops.convolution(x, _t(np.zeros((4, 3, 3, 3))), _t(np.zeros(3)), [1, 1], [0, 0],
                           [1, 1], False, [0, 0], 1)


# -- pooling --------------------------------------------------------------------------------------
def ref_max_pool(x, k, s, p, d):
    """(values, flat indices) by brute force; the first maximum wins."""
    nsp = x.ndim - 2
    sp = x.shape[2:]
    out_sp = [(sp[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nsp)]
    vals = np.empty(x.shape[:2] + tuple(out_sp))
    idx = np.empty(vals.shape, dtype=np.int64)
    for nc in itertools.product(*(range(v) for v in x.shape[:2])):
        for o in itertools.product(*(range(v) for v in out_sp)):
            best, bi = None, None
            for off in itertools.product(*(range(v) for v in k)):
                pos = [o[i] * s[i] - p[i] + off[i] * d[i] for i in range(nsp)]
                if any(q < 0 or q >= sp[i] for i, q in enumerate(pos)):
                    continue
                v = x[nc + tuple(pos)]
                if best is None or v > best:
                    best, bi = v, np.ravel_multi_index(pos, sp)
            vals[nc + o], idx[nc + o] = best, bi
    return vals, idx


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_max_pool_values_indices_and_ties(nsp):
    x = np.round(rng.standard_normal((2, 2) + (7, 6, 5)[:nsp]), 1)  # rounding makes ties
    k, s, p, d = (3,) * nsp, (2,) * nsp, (1,) * nsp, (1,) * nsp
    fn = getattr(F, f"max_pool{nsp}d")
    v, i = fn(_t(x), k, s, p, d, return_indices=True)
    rv, ri = ref_max_pool(x, k, s, p, d)
    np.testing.assert_array_equal(v.numpy(), rv)
    np.testing.assert_array_equal(i.numpy(), ri)


def test_max_pool_nan_wins_and_padding_never_does():
    x = np.array([[[[1.0, np.nan, 3.0, 0.5]]]])
    v, i = F.max_pool2d(_t(x), (1, 2), return_indices=True)
    assert np.isnan(v.numpy()[0, 0, 0, 0]) and i.numpy()[0, 0, 0, 0] == 1
    x = np.full((1, 1, 3, 3), -np.inf)
    v, i = F.max_pool2d(_t(x), 3, 2, 1, return_indices=True)
    assert (i.numpy() >= 0).all() and (i.numpy() < 9).all()   # a real element, never padding


@pytest.mark.parametrize("fn,kw", [
    (F.max_pool2d, dict(kernel_size=3, stride=1, padding=1)),
    (F.avg_pool2d, dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                        count_include_pad=False)),
    (F.adaptive_avg_pool2d, dict(output_size=(2, 3))),
    (F.adaptive_max_pool2d, dict(output_size=(2, 3))),
    (F.avg_pool3d, dict(kernel_size=2, divisor_override=3)),
])
def test_pool_double_backward(fn, kw):
    shape = (1, 2, 4, 5, 3) if fn is F.avg_pool3d else (1, 2, 5, 6)
    x = _t(rng.standard_normal(shape), True)
    assert ember.autograd.gradcheck(lambda t: fn(t, **kw), (x,))
    assert ember.autograd.gradgradcheck(lambda t: fn(t, **kw), (x,))


def test_pool_node_names():
    x = _t(rng.standard_normal((1, 2, 6, 6)), True)
    assert F.max_pool2d(x, 2).grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    assert F.avg_pool2d(x, 2).grad_fn.name() == "AvgPool2DBackward0"
    assert F.adaptive_avg_pool2d(x, 3).grad_fn.name() == "AdaptiveAvgPool2DBackward0"
    assert F.adaptive_max_pool2d(x, 3).grad_fn.name() == "AdaptiveMaxPool2DBackward0"
    x3 = _t(rng.standard_normal((1, 2, 4, 4, 4)), True)
    assert F.max_pool3d(x3, 2).grad_fn.name() == "MaxPool3DWithIndicesBackward0"


# -- normalisation --------------------------------------------------------------------------------
def test_batch_norm_running_stats_and_version():
    x = rng.standard_normal((8, 3, 4))
    rm, rv = _t(np.zeros(3)), _t(np.ones(3))
    v0 = rm._version
    F.batch_norm(_t(x), rm, rv, training=True, momentum=0.2)
    mean = x.mean(axis=(0, 2))
    var = x.var(axis=(0, 2), ddof=1)
    np.testing.assert_allclose(rm.numpy(), 0.2 * mean, rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.8 + 0.2 * var, rtol=1e-12)
    assert rm._version == v0 + 1
    # eval uses the running statistics
    y = F.batch_norm(_t(x), rm, rv, training=False).numpy()
    want = (x - rm.numpy()[None, :, None]) / np.sqrt(rv.numpy()[None, :, None] + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-10)


def test_batch_norm_backward_after_another_training_step():
    """The running statistics are not saved for backward: a second forward (which updates
    them) before the first backward must not raise (gradient accumulation)."""
    bn = ember.nn.BatchNorm1d(3).double()
    x1 = _t(rng.standard_normal((4, 3)), True)
    x2 = _t(rng.standard_normal((4, 3)), True)
    y1, y2 = bn(x1).sum(), bn(x2).sum()
    y1.backward()
    y2.backward()
    assert y1.grad_fn.name() == "SumBackward0"


@pytest.mark.parametrize("name", ["layer", "group", "batch", "batch eval"])
def test_norm_double_backward_and_names(name):
    x = _t(rng.standard_normal((3, 4, 5)), True)
    w = _t(rng.standard_normal(4 if name != "layer" else 5), True)
    b = _t(rng.standard_normal(4 if name != "layer" else 5), True)
    rm, rv = _t(rng.standard_normal(4)), _t(rng.random(4) + 0.5)
    fns = {
        "layer": (lambda x, w, b: F.layer_norm(x, (5,), w, b), "NativeLayerNormBackward0"),
        "group": (lambda x, w, b: F.group_norm(x, 2, w, b), "NativeGroupNormBackward0"),
        "batch": (lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                  "NativeBatchNormBackward0"),
        "batch eval": (lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=False),
                       "NativeBatchNormBackward0"),
    }
    fn, node = fns[name]
    assert fn(x, w, b).grad_fn.name() == node
    assert ember.autograd.gradcheck(fn, (x, w, b))
    assert ember.autograd.gradgradcheck(fn, (x, w, b))


def test_layer_and_group_norm_match_numpy():
    x = rng.standard_normal((2, 6, 3))
    y = F.layer_norm(_t(x), (6, 3)).numpy()
    m = x.mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(y, (x - m) / np.sqrt(x.var(axis=(1, 2), keepdims=True) + 1e-5),
                               rtol=1e-10)
    y = F.group_norm(_t(x), 3).numpy()
    g = x.reshape(2, 3, 6)
    want = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, want.reshape(x.shape), rtol=1e-10)


def test_cnn_step_is_few_ops():
    """The small CNN of bench_train: conv/pool layers are one op each forward and backward."""
    import collections
    from ember.dispatch import dispatcher
    n = ember.nn
    model = n.Sequential(n.Conv2d(1, 4, 3), n.ReLU(), n.MaxPool2d(2), n.Flatten(),
                         n.Linear(4 * 13 * 13, 10))
    x = _t(rng.standard_normal((2, 1, 28, 28)).astype(np.float32))
    counts = collections.Counter()
    call = dispatcher.Op.__call__

    def counted(self, *args, **kwargs):
        counts[self.name] += 1
        return call(self, *args, **kwargs)
    dispatcher.Op.__call__ = counted
    try:
        model(x).sum().backward()
    finally:
        dispatcher.Op.__call__ = call
    assert counts["convolution"] == 2 and counts["convolution_backward"] == 1
    assert counts["max_pool2d_with_indices"] == 2
    assert counts["max_pool2d_with_indices_backward"] == 1
    assert "unfold" not in counts and "index_add" not in counts


# -- against torch --------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["conv3d", "conv_transpose3d", "max_pool3d", "avg_pool3d",
                                  "adaptive_max_pool3d", "group_norm", "batch_norm"])
def test_against_torch(case):
    torch = pytest.importorskip("torch")
    x = rng.standard_normal((2, 4, 5, 6, 4))
    calls = {
        "conv3d": lambda L, t: L.nn.functional.conv3d(t, L.tensor(W), stride=2, padding=1,
                                                      groups=2),
        "conv_transpose3d": lambda L, t: L.nn.functional.conv_transpose3d(
            t, L.tensor(W), stride=2, padding=1, output_padding=1, groups=2),
        "max_pool3d": lambda L, t: L.nn.functional.max_pool3d(t, 3, 2, 1, ceil_mode=True),
        "avg_pool3d": lambda L, t: L.nn.functional.avg_pool3d(t, 3, 2, 1, ceil_mode=True,
                                                              count_include_pad=False),
        "adaptive_max_pool3d": lambda L, t: L.nn.functional.adaptive_max_pool3d(t, (2, 4, 3)),
        "group_norm": lambda L, t: L.nn.functional.group_norm(t, 2),
        "batch_norm": lambda L, t: L.nn.functional.batch_norm(t, None, None, training=True),
    }
    W = rng.standard_normal((4, 3, 3, 2, 3) if case == "conv_transpose3d" else (6, 2, 3, 2, 3))
    ex, tx = _t(x, True), torch.tensor(x, requires_grad=True)
    ey, ty = calls[case](ember, ex), calls[case](torch, tx)
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-9, atol=1e-9)
    g = rng.standard_normal(tuple(ty.shape))
    eg, = ember.autograd.grad(ey, ex, _t(g))
    tg, = torch.autograd.grad(ty, tx, torch.tensor(g))
    np.testing.assert_allclose(eg.numpy(), tg.numpy(), rtol=1e-9, atol=1e-9)


# -- OpenCL ----------------------------------------------------------------------------------------
def _opencl():
    if not ember.opencl.is_available():
        pytest.skip(f"OpenCL unavailable: {ember.opencl.unavailable_reason()}")


@pytest.mark.parametrize("case", ["conv", "conv_t", "pools", "norms"])
def test_opencl_matches_cpu(case):
    _opencl()
    x = rng.standard_normal((2, 4, 6, 5)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)

    def run(dev):
        t = _t(x, True, dev)
        if case == "conv":
            y = F.conv2d(t, _t(w, False, dev), stride=2, padding=1, groups=2)
        elif case == "conv_t":
            y = F.conv_transpose2d(t, _t(w[:4], False, dev), stride=2, padding=1,
                                   output_padding=1)
        elif case == "pools":
            y = F.max_pool2d(t, 3, 1, 1).sum() + F.avg_pool2d(t, 2, ceil_mode=True).sum() + \
                F.adaptive_avg_pool2d(t, 3).sum() + F.adaptive_max_pool2d(t, (2, 4)).sum()
        else:
            y = F.batch_norm(t, None, None, training=True).sum() + \
                F.layer_norm(t, (6, 5)).sum() * 2 + F.group_norm(t, 2).sum() * 3
        g, = ember.autograd.grad((y * y).sum(), t)
        return y.detach().cpu().numpy(), g.cpu().numpy()
    (a, ga), (b, gb) = run("cpu"), run("opencl")
    np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(gb, ga, rtol=1e-3, atol=1e-3)


# -- nll_loss ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_nll_loss_op_matches_the_composition(reduction, device):
    if device == "opencl":
        _opencl()
    x = rng.standard_normal((6, 5))
    t = np.array([0, 4, 2, -100, 1, 4])
    w = rng.random(5) + 0.5
    ex = _t(x, True, device)
    loss = F.cross_entropy(ex, _t(t, device=device), weight=_t(w, device=device),
                           reduction=reduction)
    assert loss.grad_fn.name() == "NllLossBackward0"
    # the same loss through the composition (class weights that require grad take it)
    ew = _t(w, True, device)
    ref = F.cross_entropy(_t(x, True, device), _t(t, device=device), weight=ew,
                          reduction=reduction)
    np.testing.assert_allclose(loss.detach().cpu().numpy(), ref.detach().cpu().numpy(),
                               rtol=1e-12)
    g, = ember.autograd.grad(loss.sum(), ex)
    lp = x - np.log(np.exp(x).sum(1, keepdims=True))
    keep = t != -100
    want = np.zeros_like(x)
    ts = np.where(keep, t, 0)
    want[np.arange(6), ts] = -w[ts] * keep
    if reduction == "mean":
        want /= (w[ts] * keep).sum()
    soft = np.exp(lp)
    want = want - soft * want.sum(1, keepdims=True)   # through log_softmax
    np.testing.assert_allclose(g.cpu().numpy(), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_nll_loss_target_out_of_bounds(device):
    if device == "opencl":
        _opencl()
    x = _t(rng.standard_normal((3, 4)), device=device)
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):
        F.cross_entropy(x, _t(np.array([0, 7, 1]), device=device)).item()


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_is_one_fused_op_equal_to_torch(approximate):
    """gelu's backward is the fused gelu_backward op (GeluBackwardBackward0 for the double
    backward, as torch names it); first and second derivatives equal torch's."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((6, 40)).astype(np.float32) * 3
    g = np.cos(x)
    ex, tx = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (eg,) = ember.autograd.grad(ember.nn.functional.gelu(ex, approximate=approximate), ex,
                                ember.tensor(g), create_graph=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.gelu(tx, approximate=approximate), tx,
                                torch.tensor(g), create_graph=True)
    assert eg.grad_fn.name() == tg.grad_fn.name() == "GeluBackwardBackward0"
    np.testing.assert_allclose(eg.detach().numpy(), tg.detach().numpy(), rtol=1e-5, atol=1e-6)
    (egg,) = ember.autograd.grad((eg * eg).sum(), ex)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), tx)
    np.testing.assert_allclose(egg.numpy(), tgg.numpy(), rtol=1e-4, atol=1e-5)
    s = ember.tensor(0.7, requires_grad=True)   # a 0-d input
    (gs,) = ember.autograd.grad(ember.nn.functional.gelu(s, approximate=approximate), s)
    ts = torch.tensor(0.7, requires_grad=True)
    (tgs,) = torch.autograd.grad(torch.nn.functional.gelu(ts, approximate=approximate), ts)
    assert gs.item() == pytest.approx(tgs.item(), rel=1e-6)
