"""ember.func.vmap: the batching dispatch layer, its arguments, nesting, randomness, in-place and
view semantics, the fallback, and PyTorch's error messages. Every result is compared with the
function run on each example and stacked (or with torch.func where torch is installed)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.func import VmapFallbackWarning, vmap


def _loop(fn, *args, in_dims=0):
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    outs = [fn(*[a if d is None else a.select(d, b) for a, d in zip(args, dims)])
            for b in range(size)]
    if isinstance(outs[0], tuple):
        return tuple(ember.stack([o[k] for o in outs]) for k in range(len(outs[0])))
    return ember.stack(outs)


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


@pytest.fixture(autouse=True)
def _no_fallback_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error", VmapFallbackWarning)
        yield


def test_elementwise_broadcasting_and_in_dims():
    ember.manual_seed(0)
    x, y = ember.randn(4, 3), ember.randn(3, 4)
    b = ember.randn(2, 1, 3)
    f = lambda a, c: (a * c).exp() + b   # noqa: E731 - broadcasts an unbatched rank-3 tensor
    _close(vmap(f, in_dims=(0, 1))(x, y), _loop(f, x, y, in_dims=(0, 1)))
    _close(vmap(f, in_dims=(0, None))(x, y[:, 0]), _loop(f, x, y[:, 0], in_dims=(0, None)))
    _close(vmap(f, in_dims=-1)(x.t().contiguous(), y), _loop(f, x.t(), y, in_dims=(1, 1)))


@pytest.mark.parametrize("fn", [
    lambda a: a.sum(),
    lambda a: a.sum(0, keepdim=True),
    lambda a: a.mean(-1),
    lambda a: a.max(0).values,
    lambda a: a.argmax(),
    lambda a: a.softmax(1),
    lambda a: a.cumsum(0),
    lambda a: a.sort(1, descending=True)[0],
    lambda a: a.t().reshape(-1)[1:5],
    lambda a: a.unsqueeze(0).expand(2, 3, 4).flip(0),
    lambda a: a.diagonal(),
    lambda a: a.unfold(1, 2, 1),
    lambda a: ember.cat([a, a * 2], 1),
    lambda a: a.tile(2, 1),
    lambda a: a.tril(),
    lambda a: a @ a.t(),
    lambda a: ember.einsum("ij,kj->ik", a, a),
    lambda a: a.gather(1, ember.tensor([[0, 1], [2, 0], [1, 1]])),
    lambda a: a[ember.tensor([2, 0])],
    lambda a: a[:, ember.tensor([3, 0])],
    lambda a: a.index_select(1, ember.tensor([1, 3])),
    lambda a: a.masked_fill(a > 0, 0.5),
    lambda a: ember.where(a > 0, a, a * 2),
    lambda a: a.clamp(-0.5, 0.5),
    lambda a: a.var(1),
    lambda a: F.gelu(a) + F.softplus(a),
])
def test_rules_match_the_loop(fn):
    x = ember.randn(5, 3, 4, generator=ember.Generator().manual_seed(1))
    _close(vmap(fn)(x), _loop(fn, x))
    _close(vmap(fn, in_dims=1)(x.transpose(0, 1)), _loop(fn, x))


def test_matmul_shapes():
    g = ember.Generator().manual_seed(2)
    a3, b3 = ember.randn(4, 2, 3, generator=g), ember.randn(4, 3, 5, generator=g)
    v = ember.randn(4, 3, generator=g)
    w = ember.randn(3, 6, generator=g)
    m = ember.randn(7, 3, generator=g)
    for fn, args, dims in [
        (ember.matmul, (a3, b3), (0, 0)),
        (ember.matmul, (a3, w), (0, None)),
        (ember.matmul, (v, w), (0, None)),
        (ember.matmul, (m, v), (None, 0)),
        (ember.matmul, (v, v), (0, 0)),
        (ember.matmul, (a3, v), (0, 0)),
        (ember.matmul, (v, b3), (0, 0)),
        (lambda x, y: F.linear(x, y), (v, m), (0, None)),
        (lambda x, y: ember.addmm(y[0], x, y), (a3, w), (0, None)),
    ]:
        _close(vmap(fn, in_dims=dims)(*args), _loop(fn, *args, in_dims=dims))


def test_pytrees_out_dims_and_nesting():
    x = ember.randn(3, 4)

    def f(d, scale):
        return {"sum": d["a"].sum() * scale, "pair": (d["a"] * 2, d["b"])}
    out = vmap(f, in_dims=({"a": 0, "b": None}, None), out_dims={"sum": 0, "pair": (1, None)})(
        {"a": x, "b": ember.ones(2)}, 3.0)
    _close(out["sum"], x.sum(1) * 3)
    _close(out["pair"][0], (x * 2).t())
    assert out["pair"][1].shape == (2,)
    # nested: vmap(vmap(f)) over two dims, inner one from dim 1
    y = ember.randn(2, 3, 4)
    _close(vmap(vmap(lambda a: a.sum(), in_dims=1), in_dims=0)(y.transpose(1, 2)), y.sum(2))
    # an unbatched output is broadcast over the batch
    assert vmap(lambda a: ember.ones(2))(x).shape == (3, 2)


def test_chunk_size_gives_the_same_result():
    x = ember.randn(10, 3)
    _close(vmap(lambda a: a.softmax(0), chunk_size=3)(x), x.softmax(1))
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        vmap(lambda a: a, chunk_size=0)


def test_randomness():
    x = ember.zeros(4, 3)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda a: a + ember.rand(3))(x)
    diff = vmap(lambda a: a + ember.rand(3), randomness="different")(x)
    same = vmap(lambda a: a + ember.rand(3), randomness="same")(x)
    assert diff.std(0).min().item() > 0
    assert same.std(0).max().item() == 0
    drop = vmap(lambda a: F.dropout(a + 1, 0.5), randomness="different")(x)
    assert drop.shape == (4, 3)
    in_place = vmap(lambda a: a.clone().normal_(), randomness="same")(x)
    assert in_place.std(0).max().item() == 0
    with pytest.raises(RuntimeError, match="different inplace randomness on an unbatched"):
        vmap(lambda a: ember.zeros(3).uniform_() + a, randomness="different")(x)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda a: a, randomness="sometimes")
    # chunks of randomness='same' draw the same numbers
    chunked = vmap(lambda a: a + ember.rand(3), randomness="same", chunk_size=2)(x)
    assert chunked.std(0).max().item() == 0


def test_inplace_and_views_under_vmap():
    x = ember.randn(3, 4)
    y = x.clone()
    vmap(lambda a: a.mul_(2))(y)
    _close(y, x * 2)
    z = x.clone()
    vmap(lambda a: a[1:3].add_(1))(z)          # through a view: the batch's memory changes
    expected = x.clone()
    expected[:, 1:3] += 1
    _close(z, expected)
    w = x.clone()
    out = vmap(lambda a: a.view(2, 2).t())(w)
    assert out._storage is w._storage          # a view of the input, as in torch
    with pytest.raises(RuntimeError, match=r"vmap: add_\(self, \*extra_args\) is not possible"):
        vmap(lambda a: ember.zeros(4).add_(a))(x)
    # new_zeros/zeros_like of a batched tensor are batched, so library code can fill them
    _close(vmap(lambda a: ember.zeros_like(a).add_(a))(x), x)
    _close(vmap(lambda a: F.pad(a, (1, 1)))(x), F.pad(x, (1, 1)))


def test_errors_name_the_function_and_argument():
    x = ember.randn(3, 4)

    def fn(a, b):
        return a + b
    with pytest.raises(ValueError, match=r"vmap: Expected all tensors to have the same size in "
                                         r"the mapped dimension, got sizes \[3, 4\]"):
        vmap(fn)(x, x.t())
    with pytest.raises(ValueError, match=r"vmap\(fn, in_dims=\(0, 2\), \.\.\.\)\(<inputs>\): Got "
                                         r"in_dim=2 for some input, but that input is a Tensor of "
                                         r"dimensionality 2"):
        vmap(fn, in_dims=(0, 2))(x, x)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        vmap(fn, in_dims=(0, 0))(x, 2.0)
    with pytest.raises(ValueError, match=r"vmap\(fn, in_dims=\[0\], \.\.\.\)\(<inputs>\): "
                                         r"expected `in_dims` to be int or a"):
        vmap(fn, in_dims=[0])(x, x)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure"):
        vmap(fn, in_dims=(0, 0, 0))(x, x)
    with pytest.raises(ValueError, match=r"`fn2` must only return Tensors, got type <class "
                                         r"'float'>"):
        def fn2(a):
            return 1.0
        vmap(fn2)(x)
    with pytest.raises(ValueError, match="Expected at least one Tensor to vmap over"):
        vmap(fn, in_dims=(None, None))(x, x)
    with pytest.raises(ValueError, match="got no inputs"):
        vmap(fn)()
    with pytest.raises(RuntimeError, match=r"calling \.item\(\) on a Tensor"):
        vmap(lambda a: a.sum().item())(x)
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        vmap(lambda a: a if a.sum() > 0 else -a)(x)
    escaped = []
    vmap(lambda a: escaped.append(a) or a)(x)
    with pytest.raises(RuntimeError, match="escaped its vmap"):
        escaped[0] + 1


def test_fallback_warns_once_naming_the_op():
    import ember.library as L
    op = L.custom_op("functest::twice", lambda x: x * 2)
    x = ember.randn(3, 2)
    with pytest.warns(VmapFallbackWarning, match="batching rule for functest::twice"):
        out = vmap(op)(x)
    _close(out, x * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        vmap(op)(x)                  # once per op
    from ember.func import _handler
    assert "functest::twice" in _handler.fallback_ops


def test_registered_vmap_rule_replaces_the_fallback():
    import ember.library as L
    op = L.custom_op("functest::thrice", lambda x: x * 3)
    seen = {}

    @op.register_vmap
    def rule(info, in_dims, x):
        seen["batch"] = info.batch_size
        return x * 3, in_dims[0]
    _close(vmap(op)(ember.ones(4, 2)), ember.full((4, 2), 3.0))
    assert seen == {"batch": 4}


def test_no_transform_leaves_no_batched_key():
    from ember.dispatch import keys as K
    x = ember.randn(3)
    vmap(lambda a: a * 2)(x.unsqueeze(0))
    assert not K.state.masks[0] & K.BATCHED
    assert not (x * 2)._ks & K.BATCHED


def test_against_torch_func():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 2)).astype(np.float32)

    def f(lib, x, y):
        return (x @ y).relu().sum(0).softmax(0)
    ours = vmap(lambda x: f(ember, x, ember.tensor(b)))(ember.tensor(a))
    theirs = torch.func.vmap(lambda x: f(torch, x, torch.tensor(b)))(torch.tensor(a))
    _close(ours, theirs.numpy())
