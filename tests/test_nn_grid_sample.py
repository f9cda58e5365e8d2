"""F.grid_sample / F.affine_grid over the grid_sampler op: identity and known-point checks,
gradients and double backward, errors, the op's composite against its kernels, CPU and OpenCL,
and torch when installed."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.ops import grid_sampling as G

rng = np.random.default_rng(3)
DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_identity_grid_reproduces_input(dev, mode):
    x = ember.tensor(rng.standard_normal((2, 3, 5, 4)), device=dev)
    theta = ember.tensor([[[1.0, 0, 0], [0, 1.0, 0]]] * 2, dtype=ember.float64, device=dev)
    grid = F.affine_grid(theta, (2, 3, 5, 4), align_corners=True)
    y = F.grid_sample(x, grid, mode=mode, align_corners=True)
    np.testing.assert_allclose(y.cpu().numpy(), x.cpu().numpy(), atol=1e-12)


@pytest.mark.parametrize("dev", DEVICES)
def test_bilinear_midpoint_and_padding(dev):
    x = ember.tensor([[[[0.0, 10.0], [20.0, 30.0]]]], device=dev)
    centre = ember.tensor([[[[0.0, 0.0]]]], device=dev)
    assert F.grid_sample(x, centre, align_corners=True).item() == pytest.approx(15.0)
    outside = ember.tensor([[[[3.0, 0.0]]]], device=dev)
    assert F.grid_sample(x, outside, align_corners=True).item() == 0.0
    assert F.grid_sample(x, outside, padding_mode="border",
                         align_corners=True).item() == pytest.approx(20.0)
    # reflection of x = 3 over [-1, 1] lands on x = -1
    assert F.grid_sample(x, outside, padding_mode="reflection",
                         align_corners=True).item() == pytest.approx(10.0)


@pytest.mark.parametrize("mode,pad", [("bilinear", "zeros"), ("bilinear", "reflection"),
                                      ("bicubic", "border"), ("nearest", "zeros")])
def test_gradients(mode, pad):
    x = ember.tensor(rng.standard_normal((1, 2, 4, 5)), requires_grad=True)
    g = ember.tensor(rng.uniform(-1.1, 1.1, (1, 3, 2, 2)), requires_grad=mode != "nearest")
    f = lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=pad)  # noqa: E731
    assert ember.autograd.gradcheck(f, (x, g))
    assert ember.autograd.gradgradcheck(f, (x, g))
    assert type(f(x, g).grad_fn).__name__ == "GridSampler2DBackward0"


def test_composite_matches_kernel():
    x = ember.tensor(rng.standard_normal((2, 2, 3, 4, 5)))
    g = ember.tensor(rng.uniform(-1.2, 1.2, (2, 2, 3, 2, 3)))
    for mode in (G.BILINEAR, G.NEAREST):
        for pad in (G.ZEROS, G.BORDER, G.REFLECTION):
            k = G.grid_sampler_op(x, g, mode, pad, False)
            c = G._grid_sample_composite(x, g, mode, pad, False)
            np.testing.assert_allclose(k.numpy(), c.numpy(), atol=1e-12)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda x, g: F.grid_sample(x, g[..., :1]), RuntimeError, "size 2 in last dimension"),
    (lambda x, g: F.grid_sample(x, g, mode="foo"), ValueError, "expected mode"),
    (lambda x, g: F.grid_sample(x, g, padding_mode="foo"), ValueError, "expected padding_mode"),
    (lambda x, g: F.grid_sample(x[:1], g), RuntimeError, "same batch size"),
    (lambda x, g: F.grid_sample(x.unsqueeze(2), ember.rand(2, 1, 3, 4, 3), mode="bicubic"),
     RuntimeError, "bicubic interpolation only supports 4D"),
    (lambda x, g: F.grid_sample(x.long(), g.long()), NotImplementedError, "not implemented"),
    (lambda x, g: F.affine_grid(ember.rand(2, 2, 3), (2, 3, 4)), NotImplementedError,
     "only supports 4D and 5D"),
    (lambda x, g: F.affine_grid(ember.rand(2, 1, 3), (2, 3, 4, 5)), ValueError, "Nx2x3"),
    (lambda x, g: F.affine_grid(ember.rand(2, 2, 3), (2, 3, 0, 5)), ValueError, "positive"),
])
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call(ember.rand(2, 3, 4, 5), ember.rand(2, 4, 5, 2))


def test_matches_torch():
    torch = pytest.importorskip("torch")
    for dev in DEVICES:
        for nd in (2, 3):
            x = rng.standard_normal((2, 3) + (5, 6, 4)[:nd])
            g = rng.uniform(-1.3, 1.3, (2,) + (4, 3, 2)[:nd] + (nd,))
            for mode in ["bilinear", "nearest"] + (["bicubic"] if nd == 2 else []):
                for pad in ("zeros", "border", "reflection"):
                    for ac in (False, True):
                        xt = torch.tensor(x, requires_grad=True)
                        gt = torch.tensor(g, requires_grad=True)
                        t = torch.nn.functional.grid_sample(xt, gt, mode=mode, padding_mode=pad,
                                                            align_corners=ac)
                        t.sum().backward()
                        xe = ember.tensor(x, device=dev, requires_grad=True)
                        ge = ember.tensor(g, device=dev, requires_grad=True)
                        e = F.grid_sample(xe, ge, mode=mode, padding_mode=pad, align_corners=ac)
                        e.sum().backward()
                        np.testing.assert_allclose(e.detach().cpu().numpy(), t.detach().numpy(),
                                                   atol=1e-10)
                        np.testing.assert_allclose(xe.grad.cpu().numpy(), xt.grad.numpy(),
                                                   atol=1e-10)
                        np.testing.assert_allclose(ge.grad.cpu().numpy(), gt.grad.numpy(),
                                                   atol=1e-9)
        theta = rng.standard_normal((2, 2, 3))
        for ac in (False, True):
            np.testing.assert_allclose(
                F.affine_grid(ember.tensor(theta, device=dev), (2, 3, 4, 5),
                              align_corners=ac).cpu().numpy(),
                torch.nn.functional.affine_grid(torch.tensor(theta), (2, 3, 4, 5),
                                                align_corners=ac).numpy(), atol=1e-12)
