"""transpose / t / matmul / linear record PyTorch's backward graph: the same node names and
next_functions structure as torch 2.13 (LinearAlgebra.cpp ``_matmul_impl``, Linear.cpp
``linear``), and the same values and gradients, first and second order."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def graph(node):
    """(name, children) of a backward graph, the accumulators named alike in both libraries."""
    if node is None:
        return None
    return (node.name().replace("torch::autograd::", ""),
            tuple(graph(f) for f, _ in node.next_functions))


def leaves(lib, shapes, dtype="float64", seed=0):
    rs = np.random.RandomState(seed)
    return [lib.tensor(rs.randn(*s), dtype=getattr(lib, dtype), requires_grad=True)
            for s in shapes]


def compare(fn, shapes, dtype="float64"):
    """fn(lib, *leaves) under both: graphs, values, gradients of a weighted sum."""
    outs = {}
    for lib in (torch, ember):
        xs = leaves(lib, shapes, dtype)
        out = fn(lib, *xs)
        w = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)),
                       dtype=out.dtype)
        grads = lib.autograd.grad((out * w).sum(), xs, allow_unused=True)
        outs[lib] = (graph(out.grad_fn), out.detach().numpy(),
                     [None if g is None else g.numpy() for g in grads])
    (tg, tv, tgr), (eg, ev, egr) = outs[torch], outs[ember]
    assert eg == tg
    np.testing.assert_allclose(ev, tv, rtol=1e-10, atol=1e-12)
    for a, b in zip(egr, tgr):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


VIEWS = {
    "t": (lambda L, x: x.t(), [(3, 4)]),
    "t 1d": (lambda L, x: x.t(), [(4,)]),
    "t 0d": (lambda L, x: x.t(), [()]),
    "transpose": (lambda L, x: x.transpose(0, 1), [(3, 4)]),
    "transpose negative": (lambda L, x: x.transpose(-1, 0), [(2, 3, 4)]),
    "swapaxes": (lambda L, x: x.swapaxes(0, 2), [(2, 3, 4)]),
    "swapdims": (lambda L, x: x.swapdims(1, 2), [(2, 3, 4)]),
    "mT": (lambda L, x: x.mT, [(3, 4)]),
    "mT 3d": (lambda L, x: x.mT, [(2, 3, 4)]),
    "mH real": (lambda L, x: x.mH, [(2, 3, 4)]),
    "H real": (lambda L, x: x.H, [(3, 4)]),
    "adjoint real": (lambda L, x: x.adjoint(), [(3, 4)]),
    "T stays permute": (lambda L, x: x.T, [(2, 3, 4)]),
    "permute": (lambda L, x: x.permute(2, 0, 1), [(2, 3, 4)]),
}


@pytest.mark.parametrize("case", list(VIEWS))
def test_views_record_torchs_nodes(case):
    fn, shapes = VIEWS[case]
    compare(fn, shapes)


@pytest.mark.parametrize("name", ["H", "mH", "adjoint"])
def test_complex_adjoints_conjugate_a_transpose(name):
    for lib in (torch, ember):
        x = lib.randn(3, 4, dtype=lib.complex64, requires_grad=True)
        y = x.adjoint() if name == "adjoint" else getattr(x, name)
        # the conjugation's own node is conj's (ember records ConjPhysicalBackward0 there)
        assert graph(y.grad_fn) == (graph(x.conj().grad_fn)[0], (
            ("TransposeBackward0", (("AccumulateGrad", ()),)),))
        np.testing.assert_array_equal(y.detach().resolve_conj().numpy(),
                                      x.detach().numpy().conj().T)


def test_adjoint_errors_match_torch():
    for s in [(3,), (2, 3, 4)]:
        msgs = []
        for lib in (torch, ember):
            with pytest.raises(RuntimeError) as e:
                lib.zeros(s).H
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="mH is only supported on matrices"):
            lib.zeros(3).mH
        with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions"):
            lib.zeros(2, 3, 4).t()


def test_transpose_under_vmap_and_jvp():
    x = ember.randn(5, 2, 3, 4)
    out = ember.func.vmap(lambda a: a.transpose(0, -1))(x)
    np.testing.assert_array_equal(out.numpy(), x.numpy().transpose(0, 3, 2, 1))
    m = ember.randn(5, 3, 4)
    np.testing.assert_array_equal(ember.func.vmap(lambda a: a.t())(m).numpy(),
                                  m.numpy().transpose(0, 2, 1))
    v = ember.randn(5, 4)
    np.testing.assert_array_equal(ember.func.vmap(lambda a: a.t())(v).numpy(), v.numpy())
    p, t = ember.func.jvp(lambda a: a.t() * 2, (m[0],), (ember.ones(3, 4),))
    np.testing.assert_array_equal(t.numpy(), 2 * np.ones((4, 3)))
