"""The CPU kernels' vectorised paths, against numpy/scipy and PyTorch: the short-row reductions
(core/ember/kit/row_reduce.py: log-softmax over a small vocabulary, attention-shaped softmax and
layer norm over a narrow width take them only with many rows, so the shapes here are large
enough), float32 erf (core/ember/kit/erf32.py, under GELU) and the ``stack`` op."""
import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.kit import erf32
from ember.kit.row_reduce import row_max, row_sum

torch = pytest.importorskip("torch")

SHAPES = [(512, 27), (32, 4, 16, 16), (4096, 16), (300, 200)]


def _data(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype) * 4


@pytest.mark.parametrize("shape", SHAPES + [(10, 3), (100, 1000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_reductions_equal_numpy_with_nan_and_inf(shape, dtype):
    a = _data(shape, dtype)
    a.reshape(-1, shape[-1])[3, 1] = np.nan
    a.reshape(-1, shape[-1])[5, 0] = np.inf
    a.reshape(-1, shape[-1])[7, :] = -np.inf
    assert np.array_equal(row_max(np, a), a.max(-1, keepdims=True), equal_nan=True)
    want = a.sum(-1, keepdims=True)
    got = row_sum(np, a)
    assert got.shape == want.shape and got.dtype == want.dtype
    finite = np.isfinite(want)
    assert np.array_equal(np.isfinite(got), finite)
    assert np.array_equal(got[~finite], want[~finite], equal_nan=True)
    # summation order differs: bounded by n ulps of the sum of magnitudes
    bound = shape[-1] * np.finfo(dtype).eps * np.abs(a).sum(-1, keepdims=True)
    assert (np.abs(got - want)[finite] <= bound[finite]).all()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_of_many_short_rows_equals_torch(shape, dtype, fn):
    a = _data(shape, dtype)
    a.reshape(-1, shape[-1])[9, :3] = -np.inf      # masked positions, as attention has
    x = ember.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    y, ty = getattr(F, fn)(x, -1), getattr(torch.nn.functional, fn)(t, -1)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), **tol)
    g = _data(shape, dtype, seed=1)
    g.reshape(-1, shape[-1])[9, :3] = 0
    y.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), **tol)


@pytest.mark.parametrize("shape", [(512, 64), (32, 16, 64), (64, 200)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_of_many_short_rows_equals_torch(shape, dtype):
    a = _data(shape, dtype) + 3
    w, b = _data(shape[-1:], dtype, 2), _data(shape[-1:], dtype, 3)
    xs = [ember.tensor(v, requires_grad=True) for v in (a, w, b)]
    ts = [torch.tensor(v, requires_grad=True) for v in (a, w, b)]
    y = F.layer_norm(xs[0], shape[-1:], xs[1], xs[2])
    ty = torch.nn.functional.layer_norm(ts[0], shape[-1:], ts[1], ts[2])
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), **tol)
    g = _data(shape, dtype, seed=4)
    y.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), **tol)


# -- stack: one op (StackBackward0), as PyTorch's ---------------------------------------------
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack_values_gradients_and_node_equal_torch(dim):
    arrays = [_data((3, 4), np.float64, s) for s in range(5)]
    xs = [ember.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    y, ty = ember.stack(xs, dim), torch.stack(ts, dim)
    assert tuple(y.shape) == tuple(ty.shape)
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__ == "StackBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    g = _data(tuple(ty.shape), np.float64, 9)
    y.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    for x, t in zip(xs, ts):
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_stack_promotes_dtypes_skips_tensors_without_grad_and_writes_out():
    a, b = ember.ones(2, dtype=ember.int64), ember.ones(2, requires_grad=True)
    y = ember.stack([a, b])
    want = torch.stack([torch.ones(2, dtype=torch.int64), torch.ones(2)]).dtype
    assert str(y.dtype).split(".")[1] == str(want).split(".")[1] == "float32"
    y.sum().backward()
    assert a.grad is None and b.grad.tolist() == [1.0, 1.0]
    out = ember.empty(2, 2)
    r = ember.stack([ember.ones(2), ember.zeros(2)], 1, out=out)
    assert r is out and out.tolist() == [[1.0, 0.0], [1.0, 0.0]]


def test_stack_errors_name_the_shapes_as_torch():
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but "
                                           r"got \[2\] at entry 0 and \[3\] at entry 1"):
        ember.stack([ember.ones(2), ember.ones(3)])
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        ember.stack([])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.stack([ember.ones(2), ember.ones(2)], 3)


def test_stack_under_vmap_and_jvp_equal_the_composition():
    from ember.func import jvp, vmap
    xs = ember.tensor(_data((4, 3), np.float64))
    ys = ember.tensor(_data((4, 3), np.float64, 1))
    got = vmap(lambda a, b: ember.stack([a, b], 0))(xs, ys)
    assert got.tolist() == ember.stack([xs, ys], 1).tolist()
    got = vmap(lambda a: ember.stack([a, ys[0]], -1))(xs)
    assert got.tolist() == ember.stack([xs, ys[0].expand(4, 3)], -1).tolist()
    _, tangent = jvp(lambda a, b: ember.stack([a, b], 1), (xs, ys), (ys, xs))
    assert tangent.tolist() == ember.stack([ys, xs], 1).tolist()


# -- float32 erf under GELU -------------------------------------------------------------------
def test_float32_erf_is_within_two_ulp_of_scipys_double():
    special = pytest.importorskip("scipy.special")
    x = np.linspace(-7, 7, 1_400_001).astype(np.float32)
    be = ember.tensor([0.0])._backend()
    got = erf32.erf(be, x)
    assert got.dtype == np.float32
    assert np.abs(got.astype(np.float64) - special.erf(x.astype(np.float64))).max() < 1.2e-7
    edge = erf32.erf(be, np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32))
    assert np.isnan(edge[0]) and edge[1:].tolist() == [1.0, -1.0, 0.0, 0.0]
    out = np.empty_like(x)
    assert erf32.erf(be, x, out=out) is out and np.array_equal(out, got)
    # a large array goes a chunk at a time (bounded temporaries): the same bits as in one go
    assert x.size > erf32._CHUNK and np.array_equal(got, erf32._erf_into(x, None))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_and_its_gradient_equal_torch_on_a_large_activation(dtype):
    a = _data((8, 64, 512), dtype)
    x, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = F.gelu(x), torch.nn.functional.gelu(t)
    tol = dict(rtol=1e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), **tol)
    g = _data((8, 64, 512), dtype, 1)
    y.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), **tol)


# -- branch-free where (kit/select.py) and leaky_relu ------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int8, np.bool_,
                                   np.float16])
def test_branch_free_select_gives_wheres_bits(dtype):
    from ember.kit.select import MIN_SIZE, select
    rng = np.random.default_rng(0)
    n = MIN_SIZE + 17
    a = (rng.standard_normal(n) * 100).astype(dtype)
    b = (rng.standard_normal(n) * 100).astype(dtype)
    if np.dtype(dtype).kind == "f":
        a[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-30]
    cond = rng.random(n) > 0.5
    got, want = select(np, cond, a, b), np.where(cond, a, b)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    # a transposed operand and a 2-D mask
    a2, b2, c2 = a[:n - 17].reshape(256, -1), b[:n - 17].reshape(-1, 256).T, \
        cond[:n - 17].reshape(256, -1)
    assert np.array_equal(select(np, c2, a2, b2).view(np.uint8),
                          np.where(c2, a2, b2).view(np.uint8))


@pytest.mark.parametrize("slope", [0.2, 0.0, 1.0, -0.5, 3.0, 0.01])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_leaky_relu_and_its_gradient_have_torchs_bits(slope, dtype):
    a = _data((16, 8, 32, 32), dtype)
    a.reshape(-1)[:5] = [np.nan, -0.0, 0.0, np.inf, -np.inf]
    g = _data((16, 8, 32, 32), dtype, 1)
    x, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = F.leaky_relu(x, slope), torch.nn.functional.leaky_relu(t, slope)
    y.backward(ember.tensor(g))
    ty.backward(torch.tensor(g))
    assert np.array_equal(y.detach().numpy().view(np.uint8), ty.detach().numpy().view(np.uint8))
    assert np.array_equal(x.grad.numpy().view(np.uint8), t.grad.numpy().view(np.uint8))
