"""Padding modules, InstanceNorm1d/2d/3d (running statistics too), LocalResponseNorm and
CrossMapLRN2d against torch (values, gradients, buffers and reprs), on CPU and OpenCL."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F

torch = pytest.importorskip("torch")
rng = np.random.default_rng(7)
DEVICES = ["cpu"] + (["opencl"] if ember.opencl.is_available() else [])


def run_both(make, x, dev, train=True):
    me, mt = make(nn), make(torch.nn)
    me.to(dev)
    if not train:
        me.eval(), mt.eval()
    xe = ember.tensor(x, device=dev, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    ye, yt = me(xe), mt(xt)
    np.testing.assert_allclose(ye.detach().cpu().numpy(), yt.detach().numpy(), rtol=1e-9,
                               atol=1e-10)
    (ye * ember.tensor(np.arange(ye.numel()).reshape(ye.shape) % 5, dtype=ye.dtype,
                       device=dev)).sum().backward()
    (yt * torch.tensor(np.arange(yt.numel()).reshape(yt.shape) % 5, dtype=yt.dtype)).sum(
    ).backward()
    np.testing.assert_allclose(xe.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-8, atol=1e-10)
    assert repr(me) == repr(mt)
    return me, mt


PADS = [("ConstantPad1d", ((1, 2), 3.5), (2, 3, 4)), ("ZeroPad2d", ((1, 0, 2, 1),), (2, 3, 4)),
        ("ReflectionPad1d", (2,), (2, 3, 4)), ("ReflectionPad2d", ((1, 2, 0, 3),), (1, 2, 4, 5)),
        ("ReflectionPad3d", (1,), (1, 2, 3, 3, 3)), ("ReplicationPad1d", ((3, 1),), (3, 4)),
        ("ReplicationPad2d", (2,), (1, 2, 3, 3)), ("ReplicationPad3d", ((1, 0, 2, 1, 0, 1),),
                                                    (1, 1, 2, 3, 2)),
        ("CircularPad1d", ((1, 2),), (2, 3, 4)), ("CircularPad2d", (1,), (1, 2, 3, 3)),
        ("CircularPad3d", ((1, 0, 0, 1, 1, 1),), (1, 1, 2, 3, 2)), ("ZeroPad3d", (1,),
                                                                     (1, 2, 2, 2)),
        ("ConstantPad3d", ((1, 0, 0, 1, 2, 0), -1.0), (1, 2, 2, 2))]


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("name,args,shape", PADS, ids=[p[0] for p in PADS])
def test_padding_modules(dev, name, args, shape):
    run_both(lambda mod: getattr(mod, name)(*args), rng.standard_normal(shape), dev)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (3, 4, 6)), ("InstanceNorm2d",
                                                                       (2, 4, 3, 5)),
                                       ("InstanceNorm3d", (2, 4, 2, 3, 2)),
                                       ("InstanceNorm2d", (4, 3, 5))])
def test_instance_norm(dev, cls, shape):
    x = rng.standard_normal(shape) * 2 + 1
    run_both(lambda mod: getattr(mod, cls)(4, dtype=mod is nn and ember.float64 or
                                           torch.float64), x, dev)
    me, mt = run_both(lambda mod: getattr(mod, cls)(
        4, affine=True, track_running_stats=True, momentum=0.3,
        dtype=mod is nn and ember.float64 or torch.float64), x, dev)
    np.testing.assert_allclose(me.running_mean.cpu().numpy(), mt.running_mean.numpy(),
                               rtol=1e-10)
    np.testing.assert_allclose(me.running_var.cpu().numpy(), mt.running_var.numpy(),
                               rtol=1e-10)
    me.eval(), mt.eval()
    xe, xt = ember.tensor(x, device=dev), torch.tensor(x)
    np.testing.assert_allclose(me(xe).detach().cpu().numpy(), mt(xt).detach().numpy(),
                               rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("dev", DEVICES)
@pytest.mark.parametrize("size,shape", [(3, (2, 5, 4)), (4, (2, 6, 3, 3)), (2, (1, 4, 2, 2, 3))])
def test_local_response_norm(dev, size, shape):
    run_both(lambda mod: mod.LocalResponseNorm(size, alpha=0.3, beta=0.6, k=1.5),
             rng.standard_normal(shape), dev)


@pytest.mark.parametrize("size", [3, 5, 2])
def test_cross_map_lrn2d_forward(size):
    x = rng.standard_normal((2, 9, 3, 3))
    got = nn.CrossMapLRN2d(size, alpha=0.5, beta=0.7, k=2)(ember.tensor(x)).numpy()
    want = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.7, k=2)(torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_errors():
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.InstanceNorm2d(3)(ember.ones(2, 3))
    with pytest.raises(ValueError, match="match num_features"):
        nn.InstanceNorm1d(3, affine=True)(ember.ones(2, 4, 5))
    with pytest.raises(ValueError, match="expected padding of length 4"):
        nn.ReflectionPad2d((1, 2))
    with pytest.raises(ValueError, match="Expected 3D or higher"):
        F.local_response_norm(ember.ones(2, 3), 2)
