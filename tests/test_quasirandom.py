"""ember.quasirandom.SobolEngine against torch.quasirandom.SobolEngine: unscrambled sequences
bit for bit (draw, draw_base2, fast_forward, reset, out=, dtypes), scrambled ones by their
properties (torch's random bits come from torch's generator)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.quasirandom import SobolEngine

torch = pytest.importorskip("torch")
TorchSobol = torch.quasirandom.SobolEngine


@pytest.mark.parametrize("dimension", [1, 2, 5, 40, 1111, 21201])
def test_unscrambled_sequence_is_torchs(dimension):
    mine, theirs = SobolEngine(dimension), TorchSobol(dimension)
    n = 8 if dimension > 1000 else 300
    for step in (1, n, 3):  # the first point alone, then continuing draws
        a = mine.draw(step, dtype=ember.float64).numpy()
        b = theirs.draw(step, dtype=torch.float64).numpy()
        np.testing.assert_array_equal(a, b)
    assert mine.num_generated == theirs.num_generated


def test_default_dtype_and_float32_values_are_torchs():
    mine, theirs = SobolEngine(7), TorchSobol(7)
    a, b = mine.draw(257), theirs.draw(257)
    assert a.dtype == ember.float32 and b.dtype == torch.float32
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_fast_forward_reset_and_base2_like_torch():
    mine, theirs = SobolEngine(4), TorchSobol(4)
    mine.fast_forward(5), theirs.fast_forward(5)
    np.testing.assert_array_equal(mine.draw(3, dtype=ember.float64).numpy(),
                                  theirs.draw(3, dtype=torch.float64).numpy())
    assert mine.reset() is mine
    theirs.reset()
    np.testing.assert_array_equal(mine.draw_base2(3).numpy(), theirs.draw_base2(3).numpy())
    np.testing.assert_array_equal(mine.draw_base2(3).numpy(), theirs.draw_base2(3).numpy())
    mine.draw(1), theirs.draw(1)
    with pytest.raises(ValueError) as e_theirs:
        theirs.draw_base2(2)
    with pytest.raises(ValueError) as e_mine:
        mine.draw_base2(2)
    assert str(e_mine.value) == str(e_theirs.value)


def test_out_argument_and_repr_like_torch():
    mine, theirs = SobolEngine(3, scramble=True, seed=7), TorchSobol(3, scramble=True, seed=7)
    assert repr(mine) == repr(theirs) == "SobolEngine(dimension=3, scramble=True, seed=7)"
    assert repr(SobolEngine(2)) == repr(TorchSobol(2))
    out = ember.empty(0)
    assert mine.draw(4, out=out) is out and tuple(out.shape) == (4, 3)


@pytest.mark.parametrize("dimension", [0, 21202])
def test_dimension_range_like_torch(dimension):
    with pytest.raises(ValueError) as theirs:
        TorchSobol(dimension)
    with pytest.raises(ValueError) as mine:
        SobolEngine(dimension)
    assert str(mine.value) == str(theirs.value)


def test_scrambled_points_are_seeded_and_balanced():
    a = SobolEngine(6, scramble=True, seed=123).draw_base2(8).numpy()
    b = SobolEngine(6, scramble=True, seed=123).draw_base2(8).numpy()
    c = SobolEngine(6, scramble=True, seed=124).draw_base2(8).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    plain = SobolEngine(6).draw_base2(8).numpy()
    assert not np.array_equal(a, plain) and (a >= 0).all() and (a < 1).all()
    # a (t, m, s)-net in base 2: each dimension puts exactly 2**8 / 16 points in each 1/16
    for dim in range(6):
        counts = np.bincount((a[:, dim] * 16).astype(int), minlength=16)
        assert (counts == 16).all()
    ember.manual_seed(5)
    d = SobolEngine(2, scramble=True).draw(4).numpy()
    ember.manual_seed(5)
    np.testing.assert_array_equal(d, SobolEngine(2, scramble=True).draw(4).numpy())
