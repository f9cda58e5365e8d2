"""torch's plain values at ``ember.``: the math constants, ``newaxis`` and ``default_generator``
(the CPU's Generator object, which seeds what ``ember.rand`` draws), compared with torch."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name", ["pi", "e", "inf", "nan", "newaxis"])
def test_constants_are_torchs(name):
    mine, theirs = getattr(ember, name), getattr(torch, name)
    assert type(mine) is type(theirs)
    if isinstance(theirs, float) and math.isnan(theirs):
        assert math.isnan(mine)
    else:
        assert mine == theirs


def test_newaxis_indexes_like_torch():
    x = np.arange(6.0).reshape(2, 3)
    mine = ember.tensor(x)[:, ember.newaxis, 1:]
    theirs = torch.tensor(x)[:, torch.newaxis, 1:]
    assert tuple(mine.shape) == tuple(theirs.shape) == (2, 1, 2)
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


def test_constants_in_ops():
    x = ember.tensor([1.0, -1.0, 0.0])
    np.testing.assert_array_equal(ember.clamp(x / 0.0, -ember.inf, ember.inf).numpy(),
                                  torch.clamp(torch.tensor([1.0, -1.0, 0.0]) / 0.0,
                                              -torch.inf, torch.inf).numpy())
    assert ember.full((2,), ember.nan).isnan().all()


def test_default_generator_is_the_cpu_generator():
    g = ember.default_generator
    assert isinstance(g, ember.Generator) and isinstance(torch.default_generator, torch.Generator)
    assert str(g.device) == str(torch.default_generator.device) == "cpu"
    assert g is ember.default_generator  # one object, as torch's
    assert ember.random.default_generator is g
    assert torch.random.default_generator is torch.default_generator


def test_default_generator_seeds_rand():
    for lib in (ember, torch):
        assert lib.default_generator.manual_seed(1234) is lib.default_generator
        a = lib.rand(5)
        lib.default_generator.manual_seed(1234)
        b = lib.rand(5)
        assert lib.equal(a, b)
        assert lib.default_generator.initial_seed() == lib.initial_seed() == 1234
        lib.manual_seed(7)  # the global seed reaches the same object
        assert lib.default_generator.initial_seed() == 7
        c = lib.rand(5)
        lib.default_generator.manual_seed(7)
        assert lib.equal(c, lib.rand(5))


def test_default_generator_state_round_trip():
    for lib in (ember, torch):
        g = lib.default_generator
        g.manual_seed(3)
        state = g.get_state()
        assert state.dtype == lib.uint8 and state.dim() == 1
        a = lib.randn(4)
        g.set_state(state)
        assert lib.equal(a, lib.randn(4))
        assert lib.equal(g.get_state(), lib.get_rng_state())


def test_default_generator_as_generator_argument():
    g = ember.default_generator
    g.manual_seed(11)
    a = ember.rand(3, generator=g)
    ember.manual_seed(11)
    assert ember.equal(a, ember.rand(3))
