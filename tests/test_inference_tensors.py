"""Tensor.is_inference / ember.is_inference against torch's rules: tensors made inside
inference_mode are inference tensors; in-place results and views of normal tensors stay
normal; nothing is marked outside the mode (or under inference_mode(False))."""
from __future__ import annotations

import pytest

import ember


def _flags(lib):
    n = lib.ones(3)
    with lib.inference_mode():
        made = lib.ones(3)
        product = made * 2
        from_normal = n * 2
        view = n.view(3)
        inplace = lib.ones(3)
        inplace.add_(1)
        data = lib.tensor([1.0, 2.0])
        with lib.inference_mode(False):
            outside = n * 3
    after = product * 2
    return [x.is_inference() for x in (n, made, product, from_normal, view, inplace, data,
                                       outside, after)]


def test_marks_follow_torchs_rules():
    assert _flags(ember) == [False, True, True, True, False, True, True, False, False]
    assert ember.is_inference(ember.ones(1)) is False
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.is_inference(3)


def test_same_as_torch():
    torch = pytest.importorskip("torch")
    assert _flags(ember) == _flags(torch)
