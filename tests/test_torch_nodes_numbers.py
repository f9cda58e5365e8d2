"""A Python number where torch's overload takes a Scalar (pow's exponent, clamp's bounds, fmod's
divisor, 1 - x...) has no edge in torch's node, where a number torch wraps as a tensor (mul,
add, div, where) keeps an empty one: ember's next_functions match torch's, names (the overload
numbers) and derivatives too."""
from __future__ import annotations

import pytest

import ember

torch = pytest.importorskip("torch")

from helpers_graph import compare  # noqa: E402 - after torch's importorskip


NUMBERS = {
    "x ** 2": (lambda L, x: x ** 2, [(3,)]),
    "2 ** x": (lambda L, x: 2 ** x, [(3,)]),
    "x ** t": (lambda L, x, y: x.abs() ** y, [(3,), (3,)]),
    "2 - x": (lambda L, x: 2 - x, [(3,)]),
    "rsub(x, 2)": (lambda L, x: L.rsub(x, 2), [(3,)]),
    "x - 2 keeps its edge": (lambda L, x: x - 2, [(3,)]),
    "x * 2 keeps its edge": (lambda L, x: x * 2, [(3,)]),
    "where(c, x, 0.) keeps its edge": (lambda L, x: L.where(x > 0, x, 0.), [(3,)]),
    "clamp(number)": (lambda L, x: x.clamp(-0.5, 0.5), [(4,)]),
    "clamp(max=number)": (lambda L, x: x.clamp(max=0.5), [(4,)]),
    "clamp(tensor, None)": (lambda L, x, y: x.clamp(y), [(4,), (4,)]),
    "clamp_min(number)": (lambda L, x: L.clamp_min(x, 0.1), [(4,)]),
    "clamp_max(number)": (lambda L, x: L.clamp_max(x, 0.1), [(4,)]),
    "clamp_(number) in place": (lambda L, x: (x * 1).clamp_(0.1), [(4,)]),
    "pow_(number) in place": (lambda L, x: (x * 1).pow_(3), [(4,)]),
    "fmod(number)": (lambda L, x: L.fmod(x, 0.7), [(4,)]),
    "remainder(number)": (lambda L, x: L.remainder(x, 0.7), [(4,)]),
    "fmod(tensor)": (lambda L, x, y: L.fmod(x, y.abs() + 1), [(4,), (4,)]),
    "lerp(number)": (lambda L, x, y: L.lerp(x, y, 0.3), [(3,), (3,)]),
    "lerp(tensor)": (lambda L, x, y, w: L.lerp(x, y, w), [(3,), (3,), (3,)]),
    "xlogy(x, number)": (lambda L, x: L.xlogy(x, 2.5), [(3,)]),
    "xlogy(number, x)": (lambda L, x: L.xlogy(2.5, x.abs() + 0.1), [(3,)]),
    "xlogy(x, tensor)": (lambda L, x, y: L.xlogy(x, y.abs() + 0.1), [(3,), (3,)]),
    "copysign(number)": (lambda L, x: L.copysign(x, -1.5), [(3,)]),
    "copysign(tensor)": (lambda L, x, y: L.copysign(x, y), [(3,), (3,)]),
}


@pytest.mark.parametrize("case", list(NUMBERS))
def test_number_arguments_have_torchs_edges(case):
    fn, shapes = NUMBERS[case]
    compare(fn, shapes)


def test_hidden_edges_still_carry_gradients():
    # only next_functions leaves the slot out: backward through the node is unchanged
    x = ember.tensor([0.2, -0.4, 0.9], requires_grad=True)
    y = x.clamp(-0.3, 0.5) ** 2
    assert len(y.grad_fn.next_functions) == 1
    assert len(y.grad_fn.next_functions[0][0].next_functions) == 1
    y.sum().backward()
    assert x.grad.tolist() == pytest.approx([0.4, 0.0, 0.0])
