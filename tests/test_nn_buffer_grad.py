"""nn.Buffer, nn.parameter.Uninitialized*, nn.grad's convolution gradients, nn.utils.skip_init,
clip_grads_with_norm_ and get_total_norm against torch."""
import numpy as np
import pytest

import ember
import ember.nn as enn
from ember.nn.parameter import Buffer, UninitializedBuffer, UninitializedTensorMixin

torch = pytest.importorskip("torch")

rng = np.random.default_rng(0)


def module_with_buffers(L):
    class M(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.kept = L.nn.Buffer(L.ones(2))
            self.scratch = L.nn.Buffer(L.zeros(3), persistent=False)
            self.register_buffer("old_style", L.ones(1), persistent=False)
            self.w = L.nn.Parameter(L.ones(2))
    return M()


def describe(m):
    return (sorted(m.state_dict()), sorted(n for n, _ in m.named_buffers()),
            sorted(n for n, _ in m.named_parameters()))


def test_buffer_assignment_registers_like_torch():
    e, t = module_with_buffers(ember), module_with_buffers(torch)
    assert describe(e) == describe(t)
    for m, L in ((e, ember), (t, torch)):
        m.scratch = L.ones(3)          # a plain tensor keeps the buffer non-persistent
        m.fresh = L.nn.Buffer(L.ones(1))
    assert describe(e) == describe(t)
    assert "scratch" not in e.state_dict()


def test_buffer_is_a_marked_plain_tensor():
    for L in (ember, torch):
        src = L.ones(2, requires_grad=True) * 2
        b = L.nn.Buffer(src)
        assert type(b) is L.Tensor and isinstance(b, L.nn.Buffer)
        assert b.requires_grad and b.grad_fn is None and b.persistent
        assert not isinstance(L.ones(1), L.nn.Buffer)
        assert L.nn.Buffer().shape == (0,)
    assert enn.Buffer is Buffer and enn.parameter.Buffer is Buffer


def _assign_buffer_over_parameter(L):
    m = module_with_buffers(L)
    m.w = L.nn.Buffer(L.ones(2))


def _assign_non_tensor_to_buffer(L):
    m = module_with_buffers(L)
    m.kept = 3


@pytest.mark.parametrize("fn", [_assign_buffer_over_parameter, _assign_non_tensor_to_buffer])
def test_buffer_errors_match_torch(fn):
    got = []
    for L in (ember, torch):
        with pytest.raises(Exception) as info:
            fn(L)
        got.append(type(info.value))
    assert got[0] is got[1]


def test_uninitialized_buffer_materializes():
    b = UninitializedBuffer(dtype=ember.float64)
    assert isinstance(b, UninitializedTensorMixin) and repr(b) == "<UninitializedBuffer>"
    assert repr(torch.nn.parameter.UninitializedBuffer()) == "<UninitializedBuffer>"
    b.materialize((2, 3))
    assert type(b) is ember.Tensor and b.shape == (2, 3) and b.dtype == ember.float64
    assert enn.parameter.is_lazy(enn.UninitializedParameter())


CONVS = [
    (1, (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, dilation=1, groups=2)),
    (1, (1, 3, 7), (2, 3, 2), dict()),
    (2, (2, 4, 7, 6), (4, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                                         groups=2)),
    (3, (1, 2, 5, 4, 6), (3, 2, 2, 3, 2), dict(stride=1, padding=1, dilation=1)),
]


@pytest.mark.parametrize("n,x_shape,w_shape,kw", CONVS)
def test_nn_grad_convolutions_match_torch(n, x_shape, w_shape, kw):
    x = rng.standard_normal(x_shape)
    w = rng.standard_normal(w_shape)
    conv = getattr(torch.nn.functional, f"conv{n}d")
    out_shape = conv(torch.tensor(x), torch.tensor(w), **kw).shape
    g = rng.standard_normal(tuple(out_shape))
    for which in ("input", "weight"):
        tf = getattr(torch.nn.grad, f"conv{n}d_{which}")
        ef = getattr(ember.nn.grad, f"conv{n}d_{which}")
        if which == "input":
            want = tf(x_shape, torch.tensor(w), torch.tensor(g), **kw)
            got = ef(x_shape, ember.tensor(w), ember.tensor(g), **kw)
        else:
            want = tf(torch.tensor(x), w_shape, torch.tensor(g), **kw)
            got = ef(ember.tensor(x), w_shape, ember.tensor(g), **kw)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_skip_init_matches_torch():
    for L in (ember, torch):
        m = L.nn.utils.skip_init(L.nn.Linear, 3, 4, bias=False)
        assert tuple(m.weight.shape) == (4, 3) and m.bias is None
        assert m.weight.device.type == "cpu" and m.weight.requires_grad
    assert ember.nn.utils.skip_init is ember.nn.utils.init.skip_init

    class NoDevice(ember.nn.Module):
        def __init__(self, n):
            super().__init__()

    class TNoDevice(torch.nn.Module):
        def __init__(self, n):
            super().__init__()

    for L, bad in ((ember, NoDevice), (torch, TNoDevice)):
        with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
            L.nn.utils.skip_init(bad, 3)
        with pytest.raises(RuntimeError, match="Expected a Module"):
            L.nn.utils.skip_init(int)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
def test_total_norm_and_clip_with_norm_match_torch(norm_type):
    grads = [rng.standard_normal((3, 2)), rng.standard_normal(4)]
    results = []
    for L in (ember, torch):
        params = [L.zeros(*g.shape, dtype=L.float64, requires_grad=True) for g in grads]
        for p, g in zip(params, grads):
            p.grad = L.tensor(g)
        total = L.nn.utils.get_total_norm([p.grad for p in params], norm_type)
        L.nn.utils.clip_grads_with_norm_(params, 0.5, total)
        results.append((float(total), [p.grad.numpy() for p in params]))
    assert results[0][0] == pytest.approx(results[1][0], rel=1e-12)
    for e, t in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(e, t, rtol=1e-12)
