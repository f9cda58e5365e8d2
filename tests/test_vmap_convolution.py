"""vmap over convolution and its backward (issue #30, item 7): per-example gradients of a
convolution (``vmap(grad(f))``) match torch.func's, through batching rules — no op runs on
the per-example fallback — for every combination of batched input, weight and bias, grouped
and transposed convolutions, 1-3 spatial dims; and the fallback keeps an output an op leaves
undefined (None) as None instead of failing to stack it."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.func import VmapFallbackWarning
from ember.ops import _batching
from ember.ops.nn import conv as conv_ops

# (example input shape (N, C, *spatial), weight shape, keywords, transposed)
GEOMETRIES = [
    ((1, 3, 8, 8), (4, 3, 3, 3), dict(), False),
    ((2, 4, 7, 6), (6, 2, 3, 2), dict(groups=2, dilation=2), False),
    ((2, 3, 9), (4, 3, 3), dict(stride=2, padding=1), False),
    ((2, 4, 4, 4), (4, 2, 3, 3), dict(stride=2, padding=1, output_padding=1, groups=2), True),
    ((1, 2, 5), (2, 3, 3), dict(dilation=2), True),
    ((1, 2, 4, 5, 4), (3, 2, 2, 3, 2), dict(padding=1, stride=2), False),
]
IN_DIMS = [(0, None, None), (None, 0, None), (0, 0, None), (0, 0, 0), (None, None, 0),
           (None, 0, 0)]
BATCH = 3


def _conv(lib, x, w, b, kw, transposed):
    nsp = x.ndim - 2
    name = f"conv_transpose{nsp}d" if transposed else f"conv{nsp}d"
    return getattr(lib.nn.functional, name)(x, w, b, **kw)


def _inputs(seed, xs, ws, kw, transposed, in_dims):
    rng = np.random.default_rng(seed)
    oc = ws[1] * kw.get("groups", 1) if transposed else ws[0]
    shapes = [xs, ws, (oc,)]
    return [rng.standard_normal(((BATCH,) + s) if d == 0 else s)
            for s, d in zip(shapes, in_dims)]


def _per_example_grads(lib, kw, transposed, in_dims, argnums):
    def loss(x, w, b):
        return (_conv(lib, x, w, b, kw, transposed) ** 2).sum()
    return lib.func.vmap(lib.func.grad(loss, argnums=argnums), in_dims=in_dims)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: f"{len(g[0]) - 2}d "
                         f"{'transposed ' if g[3] else ''}{g[2]}")
def test_vmap_grad_of_convolution_matches_torch(geometry):
    torch = pytest.importorskip("torch")
    xs, ws, kw, transposed = geometry
    for k, in_dims in enumerate(IN_DIMS):
        values = _inputs(k, xs, ws, kw, transposed, in_dims)
        for argnums in [(0, 1, 2), (0,), (1,)]:
            expected = _per_example_grads(torch, kw, transposed, in_dims, argnums)(
                *(torch.tensor(v) for v in values))
            with warnings.catch_warnings():
                warnings.simplefilter("error", VmapFallbackWarning)
                got = _per_example_grads(ember, kw, transposed, in_dims, argnums)(
                    *(ember.tensor(v) for v in values))
            for g, e in zip(got, expected):
                np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-9, atol=1e-9,
                                           err_msg=f"in_dims={in_dims} argnums={argnums}")


@pytest.mark.parametrize("geometry", GEOMETRIES[:4], ids=lambda g: f"{len(g[0]) - 2}d "
                         f"{'transposed ' if g[3] else ''}{g[2]}")
def test_vmap_of_convolution_matches_torch(geometry):
    torch = pytest.importorskip("torch")
    xs, ws, kw, transposed = geometry
    for k, in_dims in enumerate(IN_DIMS):
        values = _inputs(10 + k, xs, ws, kw, transposed, in_dims)
        expected = torch.func.vmap(lambda x, w, b: _conv(torch, x, w, b, kw, transposed),
                                   in_dims=in_dims)(*(torch.tensor(v) for v in values))
        with warnings.catch_warnings():
            warnings.simplefilter("error", VmapFallbackWarning)
            got = ember.func.vmap(lambda x, w, b: _conv(ember, x, w, b, kw, transposed),
                                  in_dims=in_dims)(*(ember.tensor(v) for v in values))
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-9, atol=1e-9,
                                   err_msg=f"in_dims={in_dims}")


def test_issue_example_vmap_grad_conv2d_against_a_loop():
    """The report's program: per-example input gradients, against autograd example by
    example (no torch needed)."""
    ember.manual_seed(0)
    w = ember.randn(4, 3, 3, 3, dtype=ember.float64)
    x = ember.randn(5, 3, 8, 8, dtype=ember.float64)

    def f(xi):
        return ember.nn.functional.conv2d(xi.unsqueeze(0), w).sum()
    got = ember.func.vmap(ember.func.grad(f))(x)
    for i in range(5):
        xi = x[i].clone().requires_grad_(True)
        (expected,) = ember.autograd.grad(f(xi), [xi])
        np.testing.assert_allclose(got[i].numpy(), expected.numpy(), rtol=1e-12)


def test_grad_of_vmap_grad_convolution_matches_torch():
    """A gradient penalty: the per-example gradients differentiated again, so the batching
    rules' calls (with stand-in operands) are themselves recorded and differentiated."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((3, 4, 5, 5)), rng.standard_normal((4, 2, 3, 3))

    def penalty(lib):
        def per(w, xi):
            return lib.nn.functional.conv2d(xi.unsqueeze(0), w, groups=2).tanh().sum()

        def outer(w, x):
            return (lib.func.vmap(lib.func.grad(per), in_dims=(None, 0))(w, x) ** 2).sum()
        return lib.func.grad(outer)
    expected = penalty(torch)(torch.tensor(w), torch.tensor(x))
    got = penalty(ember)(ember.tensor(w), ember.tensor(x))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-9, atol=1e-9)


def test_fallback_keeps_undefined_outputs_none():
    """convolution_backward with output_mask (True, False, False) run example by example: the
    masked gradients are None for every example and stay None."""
    rng = np.random.default_rng(4)
    g = ember.tensor(rng.standard_normal((2, 1, 4, 6, 6)))
    x = ember.tensor(rng.standard_normal((2, 1, 3, 8, 8)))
    w = ember.tensor(rng.standard_normal((4, 3, 3, 3)))
    args = (g, x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, False, False])
    (gi, gw, gb), dim = _batching.per_example(conv_ops.convolution_backward_op, args,
                                              (0, 0, None) + (None,) * 8, 2)
    assert gw is None and gb is None and dim == 0
    for b in range(2):
        expected = conv_ops.convolution_backward_op(g[b], x[b], w, *args[3:])[0]
        np.testing.assert_allclose(gi[b].numpy(), expected.numpy())
