"""ember.testing.assert_close: PyTorch's default tolerances and messages."""
import numpy as np
import pytest

import ember
from ember.testing import assert_close


def test_close_within_default_float32_tolerance():
    a = ember.tensor([1.0, 2.0])
    assert_close(a, a + 1e-6)
    with pytest.raises(AssertionError, match="not close"):
        assert_close(a, a + 1e-3)


def test_integers_must_be_equal_and_dtypes_checked():
    assert_close(ember.tensor([1, 2]), ember.tensor([1, 2]))
    with pytest.raises(AssertionError, match="1 of 2 elements differ"):
        assert_close(ember.tensor([1, 2]), ember.tensor([1, 3]))
    with pytest.raises(AssertionError, match="dtype"):
        assert_close(ember.tensor([1.0]), ember.tensor([1.0], dtype=ember.float64))
    assert_close(ember.tensor([1.0]), ember.tensor([1.0], dtype=ember.float64),
                 check_dtype=False)


def test_nan_matches_nan_only_when_asked_and_custom_tolerances():
    nan = ember.tensor([np.nan, 1.0])
    with pytest.raises(AssertionError, match="equal_nan"):   # torch's default: equal_nan=False
        assert_close(nan, ember.tensor([np.nan, 1.0]))
    assert_close(nan, ember.tensor([np.nan, 1.0]), equal_nan=True)
    assert_close([nan], [ember.tensor([np.nan, 1.0])], equal_nan=True)
    with pytest.raises(AssertionError, match="^custom: Tensor-likes"):
        assert_close(ember.tensor([1.0]), ember.tensor([2.0]), msg=lambda m: "custom: " + m)
    assert_close(ember.tensor([1.0]), ember.tensor([1.1]), rtol=0.2, atol=0.0)
    with pytest.raises(ValueError, match="both rtol and atol"):
        assert_close(ember.tensor([1.0]), ember.tensor([1.0]), rtol=0.1)
