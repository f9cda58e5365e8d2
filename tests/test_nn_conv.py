"""ember.nn convolution, pooling, unfold/fold: numpy references (direct loops on tiny inputs),
torch when installed, finite-difference gradients, PyTorch's errors, the modules, OpenCL."""
import itertools
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.autograd import gradcheck
import ember.nn.functional as F

rng = np.random.default_rng(1234)


def E(a, **kw):
    return ember.tensor(np.asarray(a), **kw)


def arr(t):
    return t.detach().cpu().numpy()


# -- numpy references ---------------------------------------------------------------------------
def ref_conv2d(x, w, b, stride, pad, dil, groups):
    n, c, h, wd = x.shape
    oc, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), pad[0], pad[1]))
    oh = (xp.shape[2] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, oc, oh, ow))
    ocg = oc // groups
    for o in range(oc):
        g = o // ocg
        for i, j in itertools.product(range(kh), range(kw)):
            patch = xp[:, g * cg:(g + 1) * cg,
                       i * dil[0]:i * dil[0] + stride[0] * (oh - 1) + 1:stride[0],
                       j * dil[1]:j * dil[1] + stride[1] * (ow - 1) + 1:stride[1]]
            out[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
        if b is not None:
            out[:, o] += b[o]
    return out


def ref_conv_transpose2d(x, w, b, stride, pad, out_pad, groups, dil):
    n, c, h, wd = x.shape
    _, ocg, kh, kw = w.shape
    cg = c // groups
    full = ((h - 1) * stride[0] + dil[0] * (kh - 1) + 1 + out_pad[0],
            (wd - 1) * stride[1] + dil[1] * (kw - 1) + 1 + out_pad[1])
    out = np.zeros((n, ocg * groups) + full)
    for ci, y, z in itertools.product(range(c), range(h), range(wd)):
        g = ci // cg
        for i, j in itertools.product(range(kh), range(kw)):
            out[:, g * ocg:(g + 1) * ocg, y * stride[0] + i * dil[0], z * stride[1] + j * dil[1]] \
                += x[:, ci, y, z, None] * w[ci, :, i, j]
    out = out[:, :, pad[0]:full[0] - pad[0], pad[1]:full[1] - pad[1]]
    return out if b is None else out + b[:, None, None]


def _pool_out(L, k, s, p, d, ceil):
    o = (L + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)) // s + 1
    return o - 1 if ceil and (o - 1) * s >= L + p else o


def ref_max_pool2d(x, k, s, p, d, ceil):
    n, c, h, w = x.shape
    oh = _pool_out(h, k[0], s[0], p[0], d[0], ceil)
    ow = _pool_out(w, k[1], s[1], p[1], d[1], ceil)
    out = np.full((n, c, oh, ow), -np.inf)
    idx = np.zeros((n, c, oh, ow), dtype=np.int64)
    for a, bb in itertools.product(range(oh), range(ow)):
        for i, j in itertools.product(range(k[0]), range(k[1])):
            y, z = a * s[0] - p[0] + i * d[0], bb * s[1] - p[1] + j * d[1]
            if 0 <= y < h and 0 <= z < w:
                v = x[:, :, y, z]
                better = v > out[:, :, a, bb]
                out[:, :, a, bb] = np.where(better, v, out[:, :, a, bb])
                idx[:, :, a, bb] = np.where(better, y * w + z, idx[:, :, a, bb])
    return out, idx


def ref_avg_pool2d(x, k, s, p, ceil, include_pad, divisor):
    n, c, h, w = x.shape
    oh, ow = _pool_out(h, k[0], s[0], p[0], 1, ceil), _pool_out(w, k[1], s[1], p[1], 1, ceil)
    out = np.zeros((n, c, oh, ow))
    for a, bb in itertools.product(range(oh), range(ow)):
        y0, z0 = a * s[0] - p[0], bb * s[1] - p[1]
        y1, z1 = min(y0 + k[0], h + p[0]), min(z0 + k[1], w + p[1])
        pool = (y1 - y0) * (z1 - z0)
        y0c, z0c, y1c, z1c = max(y0, 0), max(z0, 0), min(y1, h), min(z1, w)
        total = x[:, :, y0c:y1c, z0c:z1c].sum(axis=(2, 3))
        cnt = divisor or (pool if include_pad else (y1c - y0c) * (z1c - z0c))
        out[:, :, a, bb] = total / cnt
    return out


def ref_adaptive(x, out, fn):
    h, w = x.shape[-2:]
    res = np.zeros(x.shape[:-2] + tuple(out))
    for a, bb in itertools.product(range(out[0]), range(out[1])):
        y0, y1 = a * h // out[0], -(-(a + 1) * h // out[0])
        z0, z1 = bb * w // out[1], -(-(bb + 1) * w // out[1])
        res[..., a, bb] = fn(x[..., y0:y1, z0:z1], axis=(-2, -1))
    return res


# -- forward against numpy ----------------------------------------------------------------------
CONV_CASES = [  # stride, padding, dilation, groups
    ((1, 1), (0, 0), (1, 1), 1), ((2, 1), (1, 2), (1, 1), 1), ((1, 2), (2, 1), (2, 1), 2),
    ((3, 2), (1, 0), (1, 3), 4), ((1, 1), (1, 1), (2, 2), 1)]


@pytest.mark.parametrize("stride,padding,dilation,groups", CONV_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_matches_numpy(stride, padding, dilation, groups, bias):
    x = rng.standard_normal((2, 4, 7, 8))
    w = rng.standard_normal((8, 4 // groups, 3, 2))
    b = rng.standard_normal(8) if bias else None
    got = F.conv2d(E(x), E(w), None if b is None else E(b), stride, padding, dilation, groups)
    want = ref_conv2d(x, w, b, stride, [(p, p) for p in padding], dilation, groups)
    np.testing.assert_allclose(arr(got), want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("k,d", [(3, 1), (4, 1), (3, 2), (2, 3)])
def test_conv1d_same_valid_and_unbatched(k, d):
    x = rng.standard_normal((3, 9))
    w = rng.standard_normal((2, 3, k))
    got = F.conv1d(E(x), E(w), padding="same", dilation=d)
    total = d * (k - 1)
    want = ref_conv2d(x[None, :, None], w[:, :, None], None, (1, 1),
                      [(0, 0), (total // 2, total - total // 2)], (1, d), 1)[0, :, 0]
    assert got.shape == (2, 9)
    np.testing.assert_allclose(arr(got), want, atol=1e-10)
    valid = F.conv1d(E(x), E(w), padding="valid", dilation=d)
    assert valid.shape == (2, 9 - total)


@pytest.mark.parametrize("stride,padding,out_pad,groups,dilation", [
    ((1, 1), (0, 0), (0, 0), 1, (1, 1)), ((2, 3), (1, 1), (1, 2), 2, (1, 2)),
    ((2, 2), (2, 0), (0, 1), 1, (2, 1)), ((1, 2), (0, 1), (1, 0), 4, (2, 1))])
def test_conv_transpose2d_matches_numpy(stride, padding, out_pad, groups, dilation):
    x = rng.standard_normal((2, 4, 3, 4))
    w = rng.standard_normal((4, 2, 3, 2))
    b = rng.standard_normal(2 * groups)
    got = F.conv_transpose2d(E(x), E(w), E(b), stride, padding, out_pad, groups, dilation)
    want = ref_conv_transpose2d(x, w, b, stride, padding, out_pad, groups, dilation)
    np.testing.assert_allclose(arr(got), want, atol=1e-10)


def test_conv_transpose1d_is_adjoint_of_conv1d():
    # <conv(x), y> == <x, conv_transpose(y)> for the same weight: the defining property
    x, w = rng.standard_normal((2, 4, 11)), rng.standard_normal((6, 2, 3))
    y = rng.standard_normal((2, 6, 5))
    cx = F.conv1d(E(x), E(w), stride=2, padding=1, dilation=2, groups=2)
    # conv_transpose takes the same weight tensor: (conv out channels, conv in channels / groups)
    ty = F.conv_transpose1d(E(y), E(w), stride=2, padding=1, dilation=2, groups=2)
    assert ty.shape == (2, 4, 11)
    np.testing.assert_allclose((arr(cx) * y).sum(), (x * arr(ty)).sum(), rtol=1e-10)


@pytest.mark.parametrize("k,s,p,d,ceil", [
    ((2, 2), (2, 2), (0, 0), (1, 1), False), ((3, 3), (2, 2), (1, 1), (1, 1), True),
    ((3, 2), (1, 2), (1, 1), (2, 1), False), ((2, 3), (3, 2), (1, 0), (1, 2), True)])
def test_max_pool2d_matches_numpy(k, s, p, d, ceil):
    x = rng.standard_normal((2, 3, 7, 8))
    vals, idx = F.max_pool2d(E(x), k, s, p, d, ceil_mode=ceil, return_indices=True)
    want, want_idx = ref_max_pool2d(x, k, s, p, d, ceil)
    np.testing.assert_array_equal(arr(vals), want)
    np.testing.assert_array_equal(arr(idx), want_idx)
    assert idx.dtype == ember.int64


def test_max_pool_stride_defaults_to_kernel_and_1d():
    x = rng.standard_normal((2, 10))
    got = F.max_pool1d(E(x), 3)
    np.testing.assert_array_equal(arr(got), x[:, :9].reshape(2, 3, 3).max(-1))
    assert F.max_pool2d(E(rng.standard_normal((1, 6, 6))), 2).shape == (1, 3, 3)


def test_max_pool_gradient_goes_to_first_maximum():
    x = E(np.ones((1, 1, 2, 2))).requires_grad_()
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [[[[1, 0], [0, 0]]]])


@pytest.mark.parametrize("k,s,p,ceil,inc,div", [
    ((2, 2), (2, 2), (0, 0), False, True, None), ((3, 3), (2, 2), (1, 1), True, True, None),
    ((3, 3), (2, 2), (1, 1), True, False, None), ((3, 2), (1, 2), (1, 1), False, False, None),
    ((3, 3), (2, 1), (1, 0), True, True, 5)])
def test_avg_pool2d_matches_numpy(k, s, p, ceil, inc, div):
    x = rng.standard_normal((2, 3, 7, 6))
    got = F.avg_pool2d(E(x), k, s, p, ceil, inc, div)
    np.testing.assert_allclose(arr(got), ref_avg_pool2d(x, k, s, p, ceil, inc, div), atol=1e-12)


def test_avg_pool1d_and_integer_input():
    x = rng.standard_normal((2, 3, 7))
    got = F.avg_pool1d(E(x), 3, 2, 1, count_include_pad=False)
    want = ref_avg_pool2d(x[:, :, None], (1, 3), (1, 2), (0, 1), False, False, None)[:, :, 0]
    np.testing.assert_allclose(arr(got), want, atol=1e-12)
    xi = np.arange(16).reshape(1, 4, 4)
    got = F.avg_pool2d(E(xi), 2)
    assert got.dtype == ember.int64
    np.testing.assert_array_equal(arr(got), np.trunc(xi.reshape(1, 2, 2, 2, 2).mean((2, 4))))


@pytest.mark.parametrize("out", [(3, 4), (1, 1), (5, 2), (7, 7)])
def test_adaptive_pools_match_numpy(out):
    x = rng.standard_normal((2, 3, 5, 7))
    np.testing.assert_allclose(arr(F.adaptive_avg_pool2d(E(x), out)),
                               ref_adaptive(x, out, np.mean), atol=1e-12)
    vals, idx = F.adaptive_max_pool2d(E(x), out, return_indices=True)
    np.testing.assert_array_equal(arr(vals), ref_adaptive(x, out, np.max))
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, arr(idx).reshape(2, 3, -1), -1),
                                  arr(vals).reshape(2, 3, -1))


def test_adaptive_1d_and_none():
    x = rng.standard_normal((3, 10))
    np.testing.assert_allclose(arr(F.adaptive_avg_pool1d(E(x), 4)),
                               ref_adaptive(x[:, None], (1, 4), np.mean)[:, 0], atol=1e-12)
    np.testing.assert_array_equal(arr(F.adaptive_max_pool1d(E(x), 3)),
                                  ref_adaptive(x[:, None], (1, 3), np.max)[:, 0])
    assert F.adaptive_avg_pool2d(E(rng.standard_normal((1, 2, 5, 6))), (None, 3)).shape == \
        (1, 2, 5, 3)


def test_unfold_fold_roundtrip_counts_overlaps():
    x = rng.standard_normal((2, 3, 5, 6))
    cols = F.unfold(E(x), (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    oh, ow = (5 + 2 - 1 - 1) // 2 + 1, (6 + 2 - 4 - 1) // 1 + 1
    assert cols.shape == (2, 3 * 6, oh * ow)
    # column (c, i, j) at block (a, b) is x_padded[c, 2a + i, b + 2j]
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    c3 = arr(cols).reshape(2, 3, 2, 3, oh, ow)
    for i, j in itertools.product(range(2), range(3)):
        np.testing.assert_array_equal(c3[:, :, i, j],
                                      xp[:, :, i:i + 2 * oh - 1:2, 2 * j:2 * j + ow])
    # fold(unfold(x)) multiplies each element by the number of blocks covering it
    ones = F.fold(F.unfold(E(np.ones((1, 1, 5, 6))), 2, padding=1, stride=(2, 1)), (5, 6), 2,
                  padding=1, stride=(2, 1))
    back = F.fold(F.unfold(E(x), 2, padding=1, stride=(2, 1)), (5, 6), 2, padding=1,
                  stride=(2, 1))
    np.testing.assert_allclose(arr(back), x * arr(ones), atol=1e-12)
    assert F.unfold(E(x[0]), 2).shape == (12, 20)


# -- gradients ----------------------------------------------------------------------------------
def _req(*shape):
    return E(rng.standard_normal(shape)).requires_grad_()


@pytest.mark.parametrize("fn,inputs", [
    (lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
     lambda: (_req(1, 4, 5, 6), _req(4, 2, 2, 2), _req(4))),
    (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding="valid", groups=1),
     lambda: (_req(2, 3, 7), _req(2, 3, 3), _req(2))),
    (lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1,
                                        groups=2, dilation=(1, 2)),
     lambda: (_req(1, 4, 3, 3), _req(4, 1, 2, 3), _req(2))),
    (lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True), lambda: (_req(1, 2, 5, 6),)),
    (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
     lambda: (_req(1, 2, 5, 6),)),
    (lambda x: F.adaptive_max_pool2d(x, (2, 3)), lambda: (_req(1, 2, 5, 4),)),
    (lambda x: F.adaptive_avg_pool2d(x, (3, 2)), lambda: (_req(2, 5, 4),)),
    (lambda x: F.fold(x, (4, 5), 2, padding=1, stride=(2, 1)), lambda: (_req(1, 8, 18),)),
], ids=["conv2d", "conv1d", "conv_transpose2d", "max_pool2d", "avg_pool2d",
        "adaptive_max_pool2d", "adaptive_avg_pool2d", "fold"])
def test_gradcheck(fn, inputs):
    assert gradcheck(fn, inputs())


# -- errors -------------------------------------------------------------------------------------
X4 = E(np.zeros((2, 4, 5, 5), dtype=np.float32))
W4 = E(np.zeros((8, 4, 3, 3), dtype=np.float32))


@pytest.mark.parametrize("call,exc,match", [
    (lambda: F.conv2d(E(np.zeros((2, 3), "f4")), W4), RuntimeError,
     r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: "
     r"\[2, 3\]"),
    (lambda: F.conv2d(X4, E(np.zeros((8, 3, 3, 3), "f4"))), RuntimeError,
     r"Given groups=1, weight of size \[8, 3, 3, 3\], expected input\[2, 4, 5, 5\] to have 3 "
     r"channels, but got 4 channels instead"),
    (lambda: F.conv2d(E(np.zeros((2, 4, 2, 2), "f4")), W4), RuntimeError,
     r"Calculated padded input size per channel: \(2 x 2\). Kernel size: \(3 x 3\)"),
    (lambda: F.conv2d(X4, W4, stride=0), RuntimeError, "non-positive stride"),
    (lambda: F.conv2d(X4, W4, padding=-1), RuntimeError, "negative padding"),
    (lambda: F.conv2d(X4, W4, dilation=0), RuntimeError, "non-positive dilation"),
    (lambda: F.conv2d(X4, W4, groups=3), RuntimeError,
     r"Given groups=3, expected weight to be divisible by 3 at dimension 0"),
    (lambda: F.conv2d(X4, W4, bias=E(np.zeros(4, "f4"))), RuntimeError,
     r"expected bias to be 1-dimensional with 8 elements, but got bias of size \[4\]"),
    (lambda: F.conv2d(X4, W4, padding="same", stride=2), RuntimeError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: F.conv2d(X4, W4, padding="foo"), RuntimeError, "Invalid padding string: 'foo'"),
    (lambda: F.conv2d(X4, W4, stride=(1, 1, 1)), RuntimeError, "list of 2 values"),
    (lambda: F.conv2d(X4.double(), W4), RuntimeError, "expected scalar type Double but found "
     "Float"),
    (lambda: F.conv_transpose2d(X4, E(np.zeros((4, 2, 3, 3), "f4")), output_padding=1),
     RuntimeError, "output padding must be smaller than either stride or dilation"),
    (lambda: F.conv_transpose2d(X4, E(np.zeros((3, 2, 3, 3), "f4"))), RuntimeError,
     r"Given transposed=1, weight of size \[3, 2, 3, 3\], expected input\[2, 4, 5, 5\] to have "
     r"3 channels"),
    (lambda: F.conv_transpose2d(X4, E(np.zeros((4, 2, 3, 3), "f4")), padding=5), RuntimeError,
     "Output size is too small"),
    (lambda: F.max_pool2d(X4, 3, padding=2), RuntimeError,
     "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
     "dilation=1"),
    (lambda: F.max_pool2d(X4, 6), RuntimeError,
     r"Given input size: \(4x5x5\). Calculated output size: \(4x0x0\). Output size is too small"),
    (lambda: F.max_pool2d(X4, (2, 2, 2)), RuntimeError,
     "max_pool2d: kernel_size must either be a single int, or a tuple of two ints"),
    (lambda: F.max_pool2d(E(np.zeros((5, 5))), 2), RuntimeError, r"3D or 4D \(batch mode\)"),
    (lambda: F.max_pool2d(X4, 2, stride=0), RuntimeError, "stride should not be zero"),
    (lambda: F.avg_pool2d(X4, 2, divisor_override=0), RuntimeError, "divisor must be not zero"),
    (lambda: F.adaptive_avg_pool2d(E(np.zeros((5, 5))), 2), RuntimeError,
     r"adaptive_avg_pool2d\(\): Expected 3D or 4D tensor, but got \[5, 5\]"),
    (lambda: F.adaptive_avg_pool2d(X4.long(), 2), NotImplementedError, "not implemented for "
     "'Long'"),
    (lambda: F.fold(E(np.zeros((2, 5, 9))), (4, 4), 2), RuntimeError,
     r"divisible by the product of kernel_size, but got input.size\(1\)=5"),
    (lambda: F.fold(E(np.zeros((2, 8, 8))), (4, 4), 2), RuntimeError,
     r"calculated number of sliding blocks 3 \* 3 = 9, but got input.size\(2\)=8"),
    (lambda: F.unfold(X4, 6), RuntimeError, "calculated shape of the array of sliding blocks"),
])
def test_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# -- modules ------------------------------------------------------------------------------------
def test_conv_module_init_repr_and_forward():
    ember.manual_seed(0)
    m = nn.Conv2d(4, 6, (3, 2), stride=2, padding=1, groups=2)
    assert repr(m) == "Conv2d(4, 6, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1), groups=2)"
    assert m.weight.shape == (6, 2, 3, 2) and m.bias.shape == (6,)
    bound = 1 / math.sqrt(2 * 3 * 2)  # kaiming_uniform_(a=sqrt(5)) and the bias: 1/sqrt(fan_in)
    assert float(m.weight.abs().max()) <= bound and float(m.bias.abs().max()) <= bound
    assert float(m.weight.abs().max()) > bound * 0.7
    x = rng.standard_normal((2, 4, 6, 5)).astype(np.float32)
    want = ref_conv2d(x, arr(m.weight), arr(m.bias), (2, 2), [(1, 1), (1, 1)], (1, 1), 2)
    np.testing.assert_allclose(arr(m(E(x))), want, rtol=1e-5, atol=1e-5)
    assert repr(nn.Conv1d(4, 8, 3, padding="same", bias=False, padding_mode="circular")) == \
        "Conv1d(4, 8, kernel_size=(3,), stride=(1,), padding=same, bias=False, " \
        "padding_mode=circular)"
    assert repr(nn.ConvTranspose2d(4, 8, (3, 2), stride=2, output_padding=1, dilation=2)) == \
        "ConvTranspose2d(4, 8, kernel_size=(3, 2), stride=(2, 2), dilation=(2, 2), " \
        "output_padding=(1, 1))"
    assert nn.ConvTranspose1d(4, 6, 3, groups=2).weight.shape == (4, 3, 3)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_padding_modes(mode):
    m = nn.Conv1d(1, 1, 3, padding=2, padding_mode=mode, bias=False)
    x = np.arange(5.0)[None, None].astype(np.float32)
    padded = np.pad(x, ((0, 0), (0, 0), (2, 2)), mode={"reflect": "reflect", "replicate": "edge",
                                                       "circular": "wrap"}[mode])
    w = arr(m.weight)[0, 0]
    want = np.array([padded[0, 0, i:i + 3] @ w for i in range(7)])
    np.testing.assert_allclose(arr(m(E(x)))[0, 0], want, rtol=1e-6)


def test_conv_module_errors_and_output_size():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 6, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 6, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(3, 6, 3, padding="full")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported'):
        nn.ConvTranspose2d(3, 6, 3, padding_mode="reflect")
    m = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = E(rng.standard_normal((1, 2, 4, 4)).astype(np.float32))
    assert m(x).shape == (1, 3, 7, 7)
    assert m(x, output_size=(8, 7)).shape == (1, 3, 8, 7)
    with pytest.raises(ValueError, match="requested an output size of"):
        m(x, output_size=(9, 9))


def test_pool_modules():
    assert repr(nn.MaxPool2d(2)) == \
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool1d(3)) == "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"
    assert repr(nn.AdaptiveAvgPool2d((3, None))) == "AdaptiveAvgPool2d(output_size=(3, None))"
    x = rng.standard_normal((2, 3, 6, 6))
    v, i = nn.MaxPool2d(3, 2, 1, return_indices=True, ceil_mode=True)(E(x))
    np.testing.assert_array_equal(arr(v), ref_max_pool2d(x, (3, 3), (2, 2), (1, 1), (1, 1),
                                                         True)[0])
    np.testing.assert_allclose(arr(nn.AvgPool2d(2)(E(x))),
                               ref_avg_pool2d(x, (2, 2), (2, 2), (0, 0), False, True, None))
    np.testing.assert_allclose(arr(nn.AdaptiveMaxPool2d(2)(E(x))), ref_adaptive(x, (2, 2), np.max))
    assert nn.AdaptiveAvgPool1d(2)(E(x[0])).shape == (3, 6, 2)
    assert nn.MaxPool1d(2)(E(x[0])).shape == (3, 6, 3)
    assert nn.AdaptiveMaxPool1d(4)(E(x[0])).shape == (3, 6, 4)


# -- torch (optional) ---------------------------------------------------------------------------
@pytest.mark.parametrize("case", range(12))
def test_against_torch(case):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    r = np.random.default_rng(case)
    stride, padding, dilation = r.integers(1, 3, 2), r.integers(0, 2, 2), r.integers(1, 3, 2)
    groups = [1, 2][case % 2]
    x = r.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = r.standard_normal((6, 4 // groups, 3, 2)).astype(np.float32)
    b = r.standard_normal(6).astype(np.float32)
    kw = dict(stride=tuple(stride.tolist()), padding=tuple(padding.tolist()),
              dilation=tuple(dilation.tolist()), groups=groups)
    np.testing.assert_allclose(arr(F.conv2d(E(x), E(w), E(b), **kw)),
                               tf.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b),
                                         **kw).numpy(), rtol=1e-4, atol=1e-4)
    wt = r.standard_normal((4, 3, 2, 3)).astype(np.float32)
    op = tuple(int(r.integers(0, max(s, d))) for s, d in zip(stride, dilation))
    kt = dict(stride=kw["stride"], padding=kw["padding"], output_padding=op, groups=groups,
              dilation=kw["dilation"])
    np.testing.assert_allclose(arr(F.conv_transpose2d(E(x), E(wt), **kt)),
                               tf.conv_transpose2d(torch.tensor(x), torch.tensor(wt),
                                                   **kt).numpy(), rtol=1e-4, atol=1e-4)
    k = (int(r.integers(2, 4)), int(r.integers(1, 4)))
    pk = dict(kernel_size=k, stride=kw["stride"], padding=(k[0] // 2, k[1] // 2),
              ceil_mode=bool(case % 3 == 0))
    for a, t in zip(F.max_pool2d(E(x), dilation=1, return_indices=True, **pk),
                    tf.max_pool2d(torch.tensor(x), dilation=1, return_indices=True, **pk)):
        np.testing.assert_array_equal(arr(a), t.numpy())
    inc = bool(case % 2)
    np.testing.assert_allclose(arr(F.avg_pool2d(E(x), count_include_pad=inc, **pk)),
                               tf.avg_pool2d(torch.tensor(x), count_include_pad=inc,
                                             **pk).numpy(), rtol=1e-5, atol=1e-6)


# -- OpenCL -------------------------------------------------------------------------------------
def test_opencl_conv_pool_cross_entropy_matches_cpu():
    if not ember.opencl.is_available():
        pytest.skip("no OpenCL device")
    from ember.nn import _loss
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    t = rng.integers(0, 4, (2, 4, 4))

    def run(dev):
        xe, we, be = (E(a, device=dev).requires_grad_() for a in (x, w, b))
        y = F.max_pool2d(F.conv2d(xe, we, be, padding=1), 2, ceil_mode=True)
        loss = _loss.cross_entropy(y, E(t, device=dev))
        loss.backward()
        assert loss.device.type == dev
        return [arr(a) for a in (loss, xe.grad, we.grad, be.grad)]

    for c, o in zip(run("cpu"), run("opencl")):
        np.testing.assert_allclose(o, c, rtol=1e-4, atol=1e-5)
