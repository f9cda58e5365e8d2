"""split, chunk, split_with_sizes and unbind record one node for all their pieces, as torch does
(SplitBackward0, SplitWithSizesBackward0, UnbindBackward0, each piece at its own output_nr),
and a piece nothing used gets a zero gradient: compared with torch on names, next_functions,
values, first and second derivatives, under vmap and jvp too."""
from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

from helpers_graph import compare, leaves  # noqa: E402 - after torch's importorskip


PIECES = {
    "split(int)": (lambda L, x: x.split(2), [(6, 3)]),
    "split(int) uneven, dim 1": (lambda L, x: x.split(2, dim=1), [(3, 5)]),
    "split(int) one piece": (lambda L, x: x.split(9), [(6, 3)]),
    "split(list)": (lambda L, x: x.split([1, 3, 2]), [(6, 3)]),
    "split(list) with an empty piece": (lambda L, x: x.split([3, 0, 2], -1), [(2, 5)]),
    "torch.split": (lambda L, x: L.split(x, [2, 2], 1), [(3, 4)]),
    "torch.split_with_sizes": (lambda L, x: L.split_with_sizes(x, [1, 2]), [(3, 4)]),
    "chunk even": (lambda L, x: x.chunk(3), [(6, 2)]),
    "chunk uneven": (lambda L, x: x.chunk(3, 1), [(2, 7)]),
    "chunk more than size": (lambda L, x: L.chunk(x, 8), [(5,)]),
    "chunk of an empty dim": (lambda L, x: x.reshape(0, 3).chunk(3), [(0,)]),
    "unbind": (lambda L, x: x.unbind(), [(3, 4)]),
    "unbind(dim=-1)": (lambda L, x: L.unbind(x, -1), [(2, 3, 2)]),
    "iterating a tensor": (lambda L, x: tuple(x), [(3, 2)]),
    "one piece used": (lambda L, x: x.split(2)[1] * 3, [(5, 2)]),
    "two pieces used": (lambda L, x: x.chunk(3)[0] * x.chunk(3)[2], [(6, 2)]),
    "pieces combined": (lambda L, x: (lambda a, b, c: a * b.exp() + c)(*x.unbind(1)), [(4, 3)]),
    "split of a view": (lambda L, x: x.t().split([1, 2]), [(2, 3)]),
    "split of a non-leaf": (lambda L, x: (x * x).split(1, 0), [(2, 3)]),
}


@pytest.mark.parametrize("case", list(PIECES))
def test_split_family_records_one_node_like_torch(case):
    fn, shapes = PIECES[case]
    compare(fn, shapes)


def test_unused_pieces_get_zeros_and_pieces_are_views():
    x = ember.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    a, b = x.split([1, 3])
    assert a.grad_fn is b.grad_fn and (a.output_nr, b.output_nr) == (0, 1)
    assert a._base is x and b._base is x   # views of the input, as in torch
    b.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0, 0]] + [[1, 1, 1]] * 3)
    # a complex input: its gradient stays complex
    z = ember.randn(4, dtype=ember.complex128, requires_grad=True)
    g, = ember.autograd.grad(z.unbind()[2].abs(), z)
    assert g.dtype == ember.complex128 and np.count_nonzero(g.numpy()) == 1


@pytest.mark.parametrize("call", ["split", "split(list)", "unbind", "chunk"])
def test_split_family_under_vmap_and_jvp(call):
    fns = {"split": lambda t: t.split(2, 1), "split(list)": lambda t: t.split([1, 2], 0),
           "unbind": lambda t: t.unbind(1), "chunk": lambda t: t.chunk(2, -1)}
    fn = fns[call]
    got, want = [], []
    for lib, out in ((ember, got), (torch, want)):
        x, t = leaves(lib, [(3, 3, 4), (3, 3, 4)])
        x, t = x.detach(), t.detach()
        out.append([p.numpy() for p in lib.func.vmap(fn)(x)])
        out.append([p.numpy() for p in lib.func.vmap(fn, in_dims=1)(x)])
        primal, tangent = lib.func.jvp(lambda a: fn(a), (x[0],), (t[0],))
        out.append([p.numpy() for p in primal] + [p.numpy() for p in tangent])
    for g, w in zip(got, want):
        assert len(g) == len(w)
        for a, b in zip(g, w):
            np.testing.assert_allclose(a, b, rtol=0, atol=0)


def test_split_family_errors_match_torch():
    x = ember.zeros(3, 4)
    with pytest.raises(RuntimeError, match="split_sizes to sum exactly to 4"):
        x.split([1, 2], 1)
    with pytest.raises(RuntimeError, match="non-negative"):
        x.split([5, -1], 1)
    with pytest.raises(RuntimeError, match="split_size can only be 0"):
        x.split(0)
    with pytest.raises(IndexError, match="no dimensions"):
        ember.tensor(1.0).unbind()
