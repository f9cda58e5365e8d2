"""ember.testing.make_tensor and the deprecated assert_allclose, against torch.testing's."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64", "complex64", "complex128"]


def _make(lib, *shape, dtype, **kw):
    if "memory_format" in kw:
        kw["memory_format"] = getattr(lib, kw["memory_format"])
    return lib.testing.make_tensor(*shape, dtype=getattr(lib, dtype), device="cpu", **kw)


def _parts(t):
    a = t.detach()
    a = (a.float() if "bfloat16" in str(t.dtype) else a).numpy()
    return np.concatenate([a.real.ravel(), a.imag.ravel()]) if np.iscomplexobj(a) else a.ravel()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kw", [{}, dict(low=-2, high=3), dict(noncontiguous=True),
                                dict(exclude_zero=True, low=0, high=2),
                                dict(memory_format="channels_last")])
def test_make_tensor_layout_and_range_match_torch(dtype, kw):
    if dtype == "bool" and "low" in kw:
        kw = dict(kw, low=0, high=2)
    mine, theirs = _make(ember, 2, 3, 4, 5, dtype=dtype, **kw), _make(torch, (2, 3, 4, 5),
                                                                       dtype=dtype, **kw)
    assert str(mine.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert tuple(mine.shape) == tuple(theirs.shape)
    assert mine.stride() == theirs.stride() and mine.storage_offset() == theirs.storage_offset()
    assert mine.is_contiguous() == theirs.is_contiguous()
    values = _parts(mine).astype(np.float64)
    low, high = (kw.get("low"), kw.get("high"))
    if dtype == "bool":
        low, high = 0, 1
    elif low is None:
        low, high = (0 if dtype == "uint8" else -9), (9 if dtype.startswith(("float", "bfloat",
                                                                           "complex")) else 10)
    assert values.min() >= low and values.max() <= high
    if kw.get("exclude_zero"):
        assert (values != 0).all() and (_parts(theirs).astype(np.float64) != 0).all()
    if not kw.get("exclude_zero"):  # over [0, 2) only ones are left
        assert len(np.unique(values)) > 1


@pytest.mark.parametrize("dtype", ["float32", "complex128"])
def test_make_tensor_requires_grad(dtype):
    assert _make(ember, 3, dtype=dtype, requires_grad=True).requires_grad
    assert not _make(ember, 3, dtype=dtype).requires_grad


def test_make_tensor_shapes_like_torch():
    for shape in [(), (0,), (1,), (4,)]:
        mine, theirs = _make(ember, *shape, dtype="float32"), _make(torch, *shape, dtype="float32")
        assert tuple(mine.shape) == tuple(theirs.shape)
    # fewer than two elements: noncontiguous is ignored, as in torch
    assert _make(ember, 1, dtype="float32", noncontiguous=True).is_contiguous()
    t = _make(ember, [2, 3], dtype="int32")
    assert tuple(t.shape) == (2, 3)


@pytest.mark.parametrize("kw", [dict(dtype="int64", requires_grad=True),
                                dict(dtype="float32", low=3, high=1),
                                dict(dtype="float32", low=float("nan")),
                                dict(dtype="float32", noncontiguous=True,
                                     memory_format="channels_last"),
                                dict(dtype="uint8", low=300, high=400)])
def test_make_tensor_errors_match_torch(kw):
    with pytest.raises(ValueError) as theirs:
        _make(torch, 2, 2, 2, 2, **kw)
    with pytest.raises(ValueError) as mine:
        _make(ember, 2, 2, 2, 2, **kw)
    assert str(mine.value).replace("ember.", "torch.") == str(theirs.value)


def test_make_tensor_low_equal_high_warns_like_torch():
    for lib in (ember, torch):
        with pytest.warns(FutureWarning, match="low==high"):
            t = _make(lib, 3, dtype="float32", low=2, high=2)
        assert (t.numpy() == 2).all()


def test_assert_allclose_is_deprecated_and_loose_like_torch():
    for lib in (ember, torch):
        with pytest.warns(FutureWarning, match="assert_allclose\\(\\)` is deprecated"):
            lib.testing.assert_allclose(lib.tensor([1.0, 2.0]), [1.00005, 2.0])  # rtol 1e-4
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            lib.testing.assert_allclose([1, 2], lib.tensor([1.0, 2.0], dtype=lib.float64))
            lib.testing.assert_allclose(lib.tensor([1.0, float("nan")]), [1.0, float("nan")])
            with pytest.raises(AssertionError):
                lib.testing.assert_allclose(lib.tensor([1.0, 2.0]), [1.001, 2.0])
            with pytest.raises(AssertionError):
                lib.testing.assert_allclose(lib.tensor([1.0, float("nan")]), [1.0, float("nan")],
                                            equal_nan=False)
            with pytest.raises(AssertionError, match="custom"):
                lib.testing.assert_allclose(lib.tensor([1.0]), [3.0], msg="custom")
            lib.testing.assert_allclose(lib.tensor([1.0]), [1.5], rtol=0.5, atol=0.0)
