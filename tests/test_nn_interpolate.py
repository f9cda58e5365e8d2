"""F.interpolate / nn.Upsample over the upsample op: every mode at 1-3 spatial dims against
independent numpy references (and torch when installed), gradients and double backward,
argument errors, CPU and OpenCL."""
import math

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

rng = np.random.default_rng(11)
DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])


def ref_linear_1d(x, out, align_corners):
    n = x.shape[-1]
    r = np.empty(x.shape[:-1] + (out,))
    for o in range(out):
        if align_corners:
            src = o * (n - 1) / (out - 1) if out > 1 else 0.0
        else:
            src = max((o + 0.5) * n / out - 0.5, 0.0)
        i0 = int(math.floor(src))
        i1 = min(i0 + 1, n - 1)
        lam = src - i0
        r[..., o] = x[..., i0] * (1 - lam) + x[..., i1] * lam
    return r


def ref_area_1d(x, out):
    n = x.shape[-1]
    r = np.empty(x.shape[:-1] + (out,))
    for o in range(out):
        a, b = (o * n) // out, -((-(o + 1) * n) // out)
        r[..., o] = x[..., a:b].mean(-1)
    return r


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("align_corners", [False, True])
def test_bilinear_is_separable_linear(dev, align_corners):
    x = rng.standard_normal((2, 3, 5, 6))
    ref = ref_linear_1d(ref_linear_1d(x, 4, align_corners).swapaxes(-1, -2), 9,
                        align_corners).swapaxes(-1, -2)
    y = F.interpolate(ember.tensor(x, device=dev), size=(9, 4), mode="bilinear",
                      align_corners=align_corners)
    np.testing.assert_allclose(y.cpu().numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
def test_nearest_and_area(dev):
    x = rng.standard_normal((1, 2, 7))
    y = F.interpolate(ember.tensor(x, device=dev), size=3, mode="area").cpu().numpy()
    np.testing.assert_allclose(y, ref_area_1d(x, 3), rtol=1e-12)
    up = F.interpolate(ember.tensor(x, device=dev), scale_factor=2).cpu().numpy()
    np.testing.assert_array_equal(up, np.repeat(x, 2, axis=-1))
    u8 = ember.tensor((rng.random((1, 1, 2, 3)) * 255).astype(np.uint8), device=dev)
    assert F.interpolate(u8, scale_factor=2).dtype is ember.uint8


@pytest.mark.parametrize("dev", DEVICES)
def test_modules_and_gradients(dev):
    x = ember.tensor(rng.standard_normal((1, 2, 4, 4)), device=dev, requires_grad=True)
    up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)(x)
    assert up.shape == (1, 2, 8, 8)
    up.sum().backward()
    # every input pixel spreads a total weight of 4 (the scale squared) when upsampling by 2
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.full((1, 2, 4, 4), 4.0), rtol=1e-12)
    assert type(up.grad_fn).__name__ == "UpsampleBilinear2DBackward0"
    assert nn.UpsamplingNearest2d(scale_factor=2)(x).shape == (1, 2, 8, 8)
    assert nn.UpsamplingBilinear2d(size=(3, 5))(x).shape == (1, 2, 3, 5)
    assert repr(nn.Upsample(scale_factor=2)) == "Upsample(scale_factor=2.0, mode='nearest')"


@pytest.mark.parametrize("mode,kw", [("bilinear", {}), ("bicubic", {"align_corners": True}),
                                     ("bicubic", {"antialias": True}), ("nearest", {}),
                                     ("area", {})])
def test_double_backward(mode, kw):
    x = ember.tensor(rng.standard_normal((1, 2, 5, 4)), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda x: F.interpolate(x, size=(3, 7), mode=mode, **kw)
                                        ** 2, (x,))


@pytest.mark.parametrize("call,exc,msg", [
    (lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), NotImplementedError,
     "needs 4D input"),
    (lambda x: F.interpolate(x, size=(2, 3)), ValueError, "same number of spatial dimensions"),
    (lambda x: F.interpolate(x), ValueError, "either size or scale_factor"),
    (lambda x: F.interpolate(x, size=2, scale_factor=2), ValueError, "only one of size"),
    (lambda x: F.interpolate(x, size=0), RuntimeError, "should be greater than 0"),
    (lambda x: F.interpolate(x, scale_factor=2, align_corners=True), ValueError,
     "align_corners option can only be set"),
    (lambda x: F.interpolate(x, scale_factor=2, mode="foo"), NotImplementedError,
     "Only 3D, 4D and 5D"),
    (lambda x: F.interpolate(x.long(), scale_factor=2, mode="linear"), NotImplementedError,
     "not implemented for 'Long'"),
    (lambda x: F.interpolate(x, size=3, recompute_scale_factor=True), ValueError,
     "recompute_scale_factor is not meaningful"),
    (lambda x: F.interpolate(x, scale_factor=2, mode="linear", antialias=True), ValueError,
     "Anti-alias option"),
])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(ember.rand(1, 1, 4))


def test_matches_torch_everywhere():
    torch = pytest.importorskip("torch")
    for dev in DEVICES:
        for nd, modes in ((1, ["linear"]), (2, ["bilinear", "bicubic"]), (3, ["trilinear"])):
            shape = (2, 3) + (5, 7, 4)[:nd]
            x = rng.standard_normal(shape).astype(np.float32)
            for mode in ["nearest", "nearest-exact", "area"] + modes:
                for kw in (dict(size=(9, 3, 6)[:nd]), dict(scale_factor=1.7),
                           dict(scale_factor=(0.6, 2.5, 1.0)[:nd]),
                           dict(scale_factor=1.7, recompute_scale_factor=True)):
                    acs = [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]
                    for ac in acs:
                        for aa in ([False, True] if mode in ("bilinear", "bicubic") and not ac
                                   else [False]):
                            t = torch.nn.functional.interpolate(
                                torch.tensor(x), mode=mode, align_corners=ac, antialias=aa, **kw)
                            e = F.interpolate(ember.tensor(x, device=dev), mode=mode,
                                              align_corners=ac, antialias=aa, **kw)
                            np.testing.assert_allclose(e.cpu().numpy(), t.numpy(), rtol=1e-5,
                                                       atol=1e-5, err_msg=f"{dev} {mode} {kw}")
