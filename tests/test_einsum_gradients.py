"""einsum's derivative (issue #30, item 7): complex operands get PyTorch's conjugate convention,
and repeated subscripts (diagonals, traces) and broadcasting (size-1 dims, ellipses) give the
gradients torch's einsum gives — compared with torch, and with finite differences
(gradcheck/gradgradcheck, complex inputs differenced as pairs of reals) where torch is absent."""
from __future__ import annotations

import numpy as np
import pytest

import ember

CASES = [  # (equation, operand shapes)
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(3, 3)]),
    ("iij,jk->ik", [(2, 2, 3), (3, 4)]),
    ("iji->j", [(2, 3, 2)]),
    ("ii,i->i", [(3, 3), (3,)]),
    ("ii,i->i", [(1, 1), (3,)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("...ij,...jk->...ik", [(1, 2, 3), (5, 3, 4)]),
    ("...i,...i->...", [(2, 1, 3), (4, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij,kj->", [(2, 3), (4, 3)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
]
IDS = [f"{eq} {shapes}" for eq, shapes in CASES]


def _values(seed, shapes, complex_):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        v = rng.standard_normal(s)
        out.append(v + 1j * rng.standard_normal(s) if complex_ else v)
    return out


@pytest.mark.parametrize("complex_", [False, True], ids=["float64", "complex128"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_einsum_gradient_matches_torch(case, complex_):
    torch = pytest.importorskip("torch")
    eq, shapes = case
    values = _values(len(eq), shapes, complex_)
    ts = [torch.tensor(v, requires_grad=True) for v in values]
    es = [ember.tensor(v, requires_grad=True) for v in values]
    # a real loss of a complex result: |y|^2 weighted, so every output element matters
    torch.einsum(eq, *ts).abs().pow(2).sum().backward()
    ember.einsum(eq, *es).abs().pow(2).sum().backward()
    for e, t in zip(es, ts):
        assert tuple(e.grad.shape) == tuple(t.grad.shape)
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_issue_example_complex64():
    torch = pytest.importorskip("torch")
    a0, b0 = _values(7, [(2, 3), (3, 2)], True)
    a = ember.tensor(a0.astype(np.complex64), requires_grad=True)
    b = ember.tensor(b0.astype(np.complex64))
    ember.einsum("ij,jk->ik", a, b).abs().sum().backward()
    ta = torch.tensor(a0.astype(np.complex64), requires_grad=True)
    torch.einsum("ij,jk->ik", ta, torch.tensor(b0.astype(np.complex64))).abs().sum().backward()
    assert a.grad.dtype is ember.complex64
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", [CASES[i] for i in (0, 3, 5, 6, 9)],
                         ids=[IDS[i] for i in (0, 3, 5, 6, 9)])
def test_einsum_complex_gradcheck_and_gradgradcheck(case):
    eq, shapes = case
    xs = [ember.tensor(v, requires_grad=True) for v in _values(1, shapes, True)]

    def f(*operands):
        return ember.einsum(eq, *operands)
    assert ember.autograd.gradcheck(f, xs, check_batched_grad=True)
    assert ember.autograd.gradgradcheck(f, xs)


@pytest.mark.parametrize("case", [CASES[i] for i in (0, 3, 8)],
                         ids=[IDS[i] for i in (0, 3, 8)])
def test_einsum_complex_jvp_matches_torch(case):
    torch = pytest.importorskip("torch")
    eq, shapes = case
    primals = _values(2, shapes, True)
    tangents = _values(3, shapes, True)
    _, expected = torch.func.jvp(lambda *xs: torch.einsum(eq, *xs),
                                 tuple(torch.tensor(v) for v in primals),
                                 tuple(torch.tensor(v) for v in tangents))
    _, got = ember.func.jvp(lambda *xs: ember.einsum(eq, *xs),
                            tuple(ember.tensor(v) for v in primals),
                            tuple(ember.tensor(v) for v in tangents))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
