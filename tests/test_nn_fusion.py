"""nn.utils.fuse_conv_bn_eval / fuse_conv_bn_weights / fuse_linear_bn_eval /
fuse_linear_bn_weights and convert_conv{2,3}d_weight_memory_format against torch, on random
eval-mode modules with trained running statistics."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _t(x):
    return ember.tensor(x.detach().numpy())


def _copy_state(mine, theirs):
    """Give the ember module the torch module's parameters and buffers."""
    state = {k: _t(v) for k, v in theirs.state_dict().items()}
    mine.load_state_dict(state)


def _pair(kind, *args, **kw):
    theirs = getattr(torch.nn, kind)(*args, **kw)
    mine = getattr(ember.nn, kind)(*args, **kw)
    return mine, theirs


def _trained_bn(kind, n, affine=True):
    mine, theirs = _pair(kind, n, affine=affine)
    with torch.no_grad():
        theirs.running_mean.uniform_(-1, 1)
        theirs.running_var.uniform_(0.5, 2.0)
        if affine:
            theirs.weight.uniform_(0.5, 1.5)
            theirs.bias.uniform_(-0.5, 0.5)
    _copy_state(mine, theirs)
    return mine.eval(), theirs.eval()


CONVS = [("Conv1d", "BatchNorm1d", (3, 4, 3), (2, 3, 9), False, True),
         ("Conv2d", "BatchNorm2d", (3, 5, 3), (2, 3, 8, 8), False, True),
         ("Conv2d", "BatchNorm2d", (3, 5, 3), (2, 3, 8, 8), False, False),
         ("Conv3d", "BatchNorm3d", (2, 4, 2), (1, 2, 5, 5, 5), False, True),
         ("ConvTranspose2d", "BatchNorm2d", (3, 4, 3), (2, 3, 6, 6), True, True)]


@pytest.mark.parametrize("conv_kind,bn_kind,conv_args,shape,transpose,bias", CONVS)
@pytest.mark.parametrize("affine", [True, False])
def test_fuse_conv_bn_eval_matches_torch(conv_kind, bn_kind, conv_args, shape, transpose,
                                         bias, affine):
    torch.manual_seed(0)
    conv_e, conv_t = _pair(conv_kind, *conv_args, bias=bias)
    _copy_state(conv_e, conv_t)
    conv_e.eval(), conv_t.eval()
    bn_e, bn_t = _trained_bn(bn_kind, conv_args[1], affine)
    fused_e = ember.nn.utils.fuse_conv_bn_eval(conv_e, bn_e, transpose=transpose)
    fused_t = torch.nn.utils.fuse_conv_bn_eval(conv_t, bn_t, transpose=transpose)
    assert type(fused_e) is type(conv_e) and fused_e is not conv_e
    assert isinstance(fused_e.weight, ember.nn.Parameter)
    np.testing.assert_allclose(fused_e.weight.detach().numpy(), fused_t.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused_e.bias.detach().numpy(), fused_t.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    with ember.no_grad():
        ref = bn_e(conv_e(ember.tensor(x))).numpy()
        np.testing.assert_allclose(fused_e(ember.tensor(x)).numpy(), ref, rtol=1e-4, atol=1e-5)
    # the original conv is untouched
    np.testing.assert_array_equal(conv_e.weight.detach().numpy(), conv_t.weight.detach().numpy())


@pytest.mark.parametrize("out,bn_features,bias", [(6, 6, True), (6, 1, False), (4, 4, False)])
def test_fuse_linear_bn_eval_matches_torch(out, bn_features, bias):
    torch.manual_seed(1)
    lin_e, lin_t = _pair("Linear", 5, out, bias=bias)
    _copy_state(lin_e, lin_t)
    lin_e.eval(), lin_t.eval()
    bn_e, bn_t = _trained_bn("BatchNorm1d", bn_features)
    fused_e = ember.nn.utils.fuse_linear_bn_eval(lin_e, bn_e)
    fused_t = torch.nn.utils.fuse_linear_bn_eval(lin_t, bn_t)
    assert tuple(fused_e.weight.shape) == tuple(fused_t.weight.shape)
    np.testing.assert_allclose(fused_e.weight.detach().numpy(), fused_t.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fused_e.bias.detach().numpy(), fused_t.bias.detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_fusion_refuses_training_mode_and_mismatched_features():
    for lib in (ember, torch):
        conv, bn = lib.nn.Conv2d(2, 3, 1), lib.nn.BatchNorm2d(3)
        with pytest.raises(AssertionError, match="Fusion only for eval"):
            lib.nn.utils.fuse_conv_bn_eval(conv, bn)
        lin, bn = lib.nn.Linear(2, 3).eval(), lib.nn.BatchNorm1d(4).eval()
        with pytest.raises(AssertionError, match="linear.out_features=3 and bn.num_features=4"):
            lib.nn.utils.fuse_linear_bn_eval(lin, bn)


def test_fuse_weights_keep_requires_grad_and_dtype():
    for lib in (ember, torch):
        w = lib.randn(4, 3, 1, 1, dtype=lib.float64)
        rm, rv = lib.zeros(4), lib.ones(4)
        fw, fb = lib.nn.utils.fuse_conv_bn_weights(w, None, rm, rv, 1e-5, None, None)
        assert fw.dtype == lib.float64 and fb.dtype == lib.float64
        assert fw.requires_grad is False and fb.requires_grad is False
        lw, lb = lib.nn.utils.fuse_linear_bn_weights(lib.randn(4, 3).requires_grad_(),
                                                     lib.randn(4).requires_grad_(), rm, rv,
                                                     1e-5, lib.ones(4), lib.zeros(4))
        assert lw.requires_grad and lb.requires_grad


@pytest.mark.parametrize("dims,fmt", [(2, "channels_last"), (3, "channels_last_3d")])
def test_convert_conv_weight_memory_format_matches_torch(dims, fmt):
    def build(lib):
        conv, convt = getattr(lib.nn, f"Conv{dims}d"), getattr(lib.nn, f"ConvTranspose{dims}d")
        other = getattr(lib.nn, f"Conv{5 - dims}d")  # a conv of the other rank: left alone
        return lib.nn.Sequential(conv(3, 4, 3), lib.nn.ReLU(),
                                 lib.nn.Sequential(convt(4, 2, 2)), other(2, 2, 1))
    torch.manual_seed(2)
    mine, theirs = build(ember), build(torch)
    _copy_state(mine, theirs)
    fn = f"convert_conv{dims}d_weight_memory_format"
    assert getattr(ember.nn.utils, fn)(mine, getattr(ember, fmt)) is mine
    getattr(torch.nn.utils, fn)(theirs, getattr(torch, fmt))
    for (name, pe), (_, pt) in zip(mine.named_parameters(), theirs.named_parameters()):
        assert pe.stride() == pt.stride(), name
        assert isinstance(pe, ember.nn.Parameter)
        np.testing.assert_array_equal(pe.detach().numpy(), pt.detach().numpy())
    assert theirs[0].weight.is_contiguous(memory_format=getattr(torch, fmt))
    assert not theirs[-1].weight.is_contiguous(memory_format=getattr(torch, fmt))
