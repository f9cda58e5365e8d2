"""Lazy modules: parameters uninitialized until the first forward, then materialized in place
(references such as an optimizer's stay valid), the module turned into its regular class, and
the results those classes give (against torch when installed)."""
import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.nn.parameter import UninitializedParameter, is_lazy

CASES = [
    ("LazyLinear", (3,), {}, (2, 5), "Linear", (3, 5)),
    ("LazyConv1d", (4, 3), dict(padding=1), (2, 6, 7), "Conv1d", (4, 6, 3)),
    ("LazyConv2d", (4, 3), dict(groups=2), (1, 6, 5, 5), "Conv2d", (4, 3, 3, 3)),
    ("LazyConvTranspose1d", (4, 3), dict(groups=2), (1, 6, 5), "ConvTranspose1d", (6, 2, 3)),
    ("LazyConvTranspose2d", (2, 2), dict(stride=2), (1, 3, 4, 4), "ConvTranspose2d",
     (3, 2, 2, 2)),
    ("LazyBatchNorm1d", (), {}, (4, 3), "BatchNorm1d", (3,)),
    ("LazyBatchNorm2d", (), {}, (4, 3, 2, 2), "BatchNorm2d", (3,)),
    ("LazyBatchNorm3d", (), dict(affine=False), (2, 3, 2, 2, 2), "BatchNorm3d", None),
    ("LazyInstanceNorm1d", (), dict(affine=True), (2, 3, 5), "InstanceNorm1d", (3,)),
    ("LazyInstanceNorm2d", (), dict(affine=True, track_running_stats=True), (2, 3, 4, 4),
     "InstanceNorm2d", (3,)),
    ("LazyInstanceNorm3d", (), dict(affine=False, track_running_stats=True), (2, 3, 2, 2, 2),
     "InstanceNorm3d", None),
]


@pytest.mark.parametrize("name,args,kw,shape,becomes,weight_shape", CASES,
                         ids=[c[0] for c in CASES])
def test_lazy_module_materializes(name, args, kw, shape, becomes, weight_shape):
    m = getattr(nn, name)(*args, **kw)
    params = list(m.parameters())
    assert all(is_lazy(p) for p in params)
    opt = ember.optim.SGD(params, lr=0.1) if params else None
    x = ember.randn(*shape)
    y = m(x)
    assert type(m).__name__ == becomes
    assert not any(isinstance(p, UninitializedParameter) for p in m.parameters())
    if weight_shape is not None:
        assert tuple(m.weight.shape) == weight_shape
        assert m.weight is params[0]  # materialized in place
        (y * ember.randn(*y.shape)).sum().backward()
        before = m.weight.detach().clone()
        opt.step()
        assert not np.allclose(before.numpy(), m.weight.detach().numpy())
    regular = getattr(nn, becomes)
    assert isinstance(m, regular)


def test_lazy_against_torch():
    torch = pytest.importorskip("torch")
    for name, args, kw, shape, becomes, _ in CASES:
        me, mt = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
        assert repr(me) == repr(mt), name
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        me(ember.tensor(x)), mt(torch.tensor(x))
        with torch.no_grad():
            for (n1, p1), (n2, p2) in zip(me.named_parameters(), mt.named_parameters()):
                assert n1 == n2 and tuple(p1.shape) == tuple(p2.shape), name
                p2.copy_(torch.tensor(p1.detach().numpy()))
        me.eval(), mt.eval()
        np.testing.assert_allclose(me(ember.tensor(x)).detach().numpy(),
                                   mt(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)
        assert repr(me) == repr(mt), name


def test_lazy_instance_norm_unbatched_reads_channels_from_dim_0():
    m = nn.LazyInstanceNorm1d()
    assert m(ember.randn(3, 5)).shape == (3, 5) and m.num_features == 3
