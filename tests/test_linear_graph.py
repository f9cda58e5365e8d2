"""transpose / t / matmul / linear record PyTorch's backward graph: the same node names and
next_functions structure as torch 2.13 (LinearAlgebra.cpp ``_matmul_impl``, Linear.cpp
``linear``), and the same values and gradients, first and second order."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


from helpers_graph import compare, graph, leaves  # noqa: E402 - after torch's importorskip


VIEWS = {
    "t": (lambda L, x: x.t(), [(3, 4)]),
    "t 1d": (lambda L, x: x.t(), [(4,)]),
    "t 0d": (lambda L, x: x.t(), [()]),
    "transpose": (lambda L, x: x.transpose(0, 1), [(3, 4)]),
    "transpose 0d": (lambda L, x: x.transpose(0, -1), [()]),
    "transpose same dim": (lambda L, x: x.transpose(1, 1), [(3, 4)]),
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


def F(lib):
    return lib.nn.functional


# (fn, leaf shapes): every row of the brief's table and torch's other _matmul_impl branches
PRODUCTS = {
    "dot": (lambda L, v, u: v @ u, [(4,), (4,)]),
    "mv": (lambda L, x, v: x @ v, [(3, 4), (4,)]),
    "mm": (lambda L, x, w: x @ w.t(), [(3, 4), (5, 4)]),
    "vector @ matrix": (lambda L, v, x: v @ x.t(), [(4,), (3, 4)]),
    "batch @ matrix (fold)": (lambda L, xb, x: xb @ x.t(), [(2, 3, 4), (5, 4)]),
    "batch @ vector (fold)": (lambda L, xb, v: xb @ v, [(2, 3, 4), (4,)]),
    "vector @ batch (fold)": (lambda L, v, xb: v @ xb.mT, [(4,), (2, 3, 4)]),
    "matrix @ batch (fold, transposed)": (lambda L, x, xb: x.t() @ xb, [(3, 4), (2, 3, 5)]),
    "batch @ batch (bmm)": (lambda L, xb: xb @ xb.mT, [(2, 3, 4)]),
    "broadcast batches": (lambda L, a, b: a.unsqueeze(0).expand(2, 2, 3, 4) @ b.mT,
                          [(2, 3, 4), (2, 5, 4)]),
    "batch of one squeezed": (lambda L, a, b: a @ b.mT, [(1, 3, 4), (2, 5, 4)]),
    "4-d @ vector": (lambda L, a, v: a.transpose(0, 1) @ v, [(2, 3, 4, 5), (5,)]),
    "vector @ 4-d": (lambda L, v, a: v @ a, [(4,), (2, 3, 4, 5)]),
    "4-d @ 4-d": (lambda L, a, b: a @ b, [(2, 1, 3, 4), (1, 2, 4, 5)]),
    "matmul function": (lambda L, a, b: L.matmul(a, b), [(2, 3, 4), (4, 5)]),
    "empty fold": (lambda L, a, b: a @ b, [(2, 0, 4), (4, 5)]),
    "linear 1-d": (lambda L, v, w, b: F(L).linear(v, w, b), [(4,), (5, 4), (5,)]),
    "linear 2-d": (lambda L, x, w, b: F(L).linear(x, w, b), [(3, 4), (5, 4), (5,)]),
    "linear 3-d": (lambda L, x, w, b: F(L).linear(x, w, b), [(2, 3, 4), (5, 4), (5,)]),
    "linear 4-d": (lambda L, x, w, b: F(L).linear(x, w, b), [(2, 2, 3, 4), (5, 4), (5,)]),
    "linear bias (1, 5)": (lambda L, x, w, b: F(L).linear(x, w, b), [(2, 3, 4), (5, 4), (1, 5)]),
    "linear bias (3, 5)": (lambda L, x, w, b: F(L).linear(x, w, b), [(2, 3, 4), (5, 4), (3, 5)]),
    "linear 0-d bias": (lambda L, x, w, b: F(L).linear(x, w, b), [(2, 3, 4), (5, 4), ()]),
    "linear non-contiguous": (lambda L, x, w, b: F(L).linear(x.transpose(0, 1), w, b),
                              [(3, 2, 4), (5, 4), (5,)]),
    "linear non-contiguous 1-d": (lambda L, x, w, b: F(L).linear(x[::2], w, b),
                                  [(8,), (5, 4), (5,)]),
    "linear 3-d no bias": (lambda L, x, w: F(L).linear(x, w), [(2, 3, 4), (5, 4)]),
    "linear 1-d no bias": (lambda L, v, w: F(L).linear(v, w), [(4,), (5, 4)]),
    "linear 2-d no bias": (lambda L, x, w: F(L).linear(x, w), [(3, 4), (5, 4)]),
    "linear 1-d weight": (lambda L, x, w: F(L).linear(x, w), [(3, 4), (4,)]),
    "nn.Linear 3-d": (lambda L, x, w, b: _module(L, w, b)(x), [(2, 3, 4), (5, 4), (5,)]),
}


def _module(lib, w, b):
    m = lib.nn.Linear(4, 5).double()
    with lib.no_grad():
        m.weight.copy_(w)
        m.bias.copy_(b)
    return m


@pytest.mark.parametrize("case", list(PRODUCTS))
def test_products_record_torchs_graph(case):
    fn, shapes = PRODUCTS[case]
    compare(fn, shapes)


def test_no_matmul_node_is_left():
    a, b = leaves(ember, [(2, 3, 4), (2, 4, 5)])
    for out in (a @ b, a @ b[0], a[0] @ b, a[0, 0] @ b, a @ b[0, :, 0]):
        names, todo = set(), [out.grad_fn]
        while todo:
            n = todo.pop()
            if n is not None:
                names.add(n.name())
                todo += [f for f, _ in n.next_functions]
        assert "MatmulBackward0" not in names


@pytest.mark.parametrize("case", ["batch @ matrix (fold)", "vector @ matrix", "linear 1-d",
                                  "linear 3-d", "batch @ batch (bmm)", "broadcast batches",
                                  "linear non-contiguous"])
def test_double_backward_through_products(case):
    fn, shapes = PRODUCTS[case]
    results = []
    for lib in (torch, ember):
        xs = leaves(lib, shapes)
        out = fn(lib, *xs)
        grads = lib.autograd.grad((out * out).sum(), xs, create_graph=True)
        second = lib.autograd.grad(sum((g * g).sum() for g in grads), xs)
        results.append([g.detach().numpy() for g in list(grads) + list(second)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


def test_linear_errors_match_torch():
    cases = [((), (5, 4), None), ((4,), (), None), ((3, 4), (2, 5, 4), None)]
    for x, w, b in cases:
        msgs = []
        for lib in (torch, ember):
            args = [lib.zeros(x), lib.zeros(w)] + ([] if b is None else [lib.zeros(b)])
            with pytest.raises(RuntimeError) as e:
                F(lib).linear(*args)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]
    # the in-place bias add cannot grow the output, as in torch
    for lib in (torch, ember):
        x = lib.zeros(3, 2, 4).transpose(0, 1)
        with pytest.raises(RuntimeError):
            F(lib).linear(x, lib.zeros(5, 4), lib.zeros(7, 1, 1, 5))


def test_without_grad_matmul_is_one_product():
    a, b = ember.randn(2, 3, 4), ember.randn(4, 5)
    np.testing.assert_allclose((a @ b).numpy(), a.numpy() @ b.numpy(), rtol=1e-5, atol=1e-6)
    w = ember.randn(4, 5, requires_grad=True)
    with ember.no_grad():
        out = a @ w
    assert out.grad_fn is None
    np.testing.assert_allclose(out.numpy(), a.numpy() @ w.detach().numpy(), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("grad", [True, False])
def test_linear_bias_errors_match_torch_with_and_without_grad(grad):
    for x, w, b in [((5, 3), (4, 3), (5,)), ((2, 5, 3), (4, 3), (5,)), ((2, 5, 3), (4, 3), (3, 4))]:
        msgs = []
        for lib in (torch, ember):
            args = [lib.zeros(s, requires_grad=grad) for s in (x, w, b)]
            with pytest.raises(RuntimeError) as e:
                F(lib).linear(*args)
            msgs.append(str(e.value))
        assert msgs[0] in msgs[1]   # ember's add_ names itself and the shapes too
