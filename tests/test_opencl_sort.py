"""OpenCL sort, mode and unique (the bitonic network of ``ops_sort``) against the CPU backend.

Downloads are forbidden while the OpenCL side runs (see ``test_opencl_reduction.native``), except
in ``unique``, whose output size depends on the data: it reads one number back, as PyTorch does.
"""
import numpy as np
import pytest

import ember
from ember.testing import assert_close

from test_opencl_reduction import BACKEND, FLOATS, HAS_FP64, check, native, randn

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(),
                                reason=f"opencl unavailable: {ember.opencl.unavailable_reason()}")
RNG = np.random.default_rng(11)
DTYPES = FLOATS + [np.int64, np.int8, np.uint8, np.bool_]


def small_ints(shape, dtype, k=3):
    if dtype is np.bool_:
        return RNG.integers(0, 2, shape).astype(bool)
    return RNG.integers(0, k, shape).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_dims_directions_layouts(dtype):
    a = small_ints((5, 7), dtype, k=4) if dtype in (np.bool_, np.uint8) else \
        randn(5, 7).astype(dtype)
    for d in (0, 1):
        check(lambda t: tuple(t.sort(d)), a)
        check(lambda t: tuple(t.sort(d, descending=True)), a)
    check(lambda t: tuple(t.t().sort(1)), a)                     # non-contiguous
    check(lambda t: tuple(t[1:, ::2].sort(0, descending=True)), a)
    check(lambda t: tuple(t.sort(0)), a[0, 0])                   # 0-d
    check(lambda t: tuple(t.sort(1)), a[:0])                     # empty


def test_sort_stable_nan_signed_zero_and_padding():
    a = np.array([[1, np.nan, 3, np.nan, 2, 0, -0.0, 0, 1, 3, np.inf, -np.inf]], np.float32)
    for desc in (False, True):
        check(lambda t: tuple(t.sort(1, descending=desc, stable=True)), a)
    ties = small_ints((3, 37), np.int64)                          # many ties, N not 2^k
    check(lambda t: tuple(t.sort(1, stable=True)), ties)
    check(lambda t: tuple(t.sort(1, descending=True, stable=True)), ties)
    check(lambda t: tuple(t.sort(0)), randn(3000))                # many network stages


def test_sort_composites():
    a = randn(4, 9)
    check(lambda t: t.argsort(1, descending=True), a)
    check(lambda t: tuple(t.topk(3, dim=1)), a)
    check(lambda t: tuple(t.kthvalue(2, dim=0)), a)
    check(lambda t: t.msort(), a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mode(dtype):
    a = small_ints((6, 11), dtype)
    check(lambda t: tuple(t.mode(1)), a)
    check(lambda t: tuple(t.mode(0)), a)
    check(lambda t: tuple(t.t().mode(0)), a)
    check(lambda t: tuple(t.mode(0)), a[0, 0])                   # 0-d


def test_mode_nan_runs():
    a = np.array([[np.nan, np.nan, 1, 2, 2], [np.nan, 3, 3, np.nan, 3]], np.float32)
    check(lambda t: tuple(t.mode(1)), a)


def unique_check(fn, *arrays):
    """``check`` with downloads allowed: unique reads its output size back."""
    cpu = fn(*[ember.tensor(a) for a in arrays])
    dev = fn(*[ember.tensor(a, device="opencl") for a in arrays])
    for e, a in zip(cpu, dev):
        assert (a.dtype, a.shape) == (e.dtype, e.shape)
        assert_close(a, e, check_device=False, equal_nan=True)


def everything(t, **kw):
    return tuple(ember.unique(t, return_inverse=True, return_counts=True, **kw))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_flat_and_dim(dtype):
    a = small_ints((4, 6), dtype)
    unique_check(everything, a)
    unique_check(everything, a.T.copy() if dtype is np.bool_ else a)
    unique_check(lambda t: everything(t.t()), a)                 # non-contiguous input
    unique_check(lambda t: everything(t, dim=0), small_ints((5, 2), dtype, k=2))
    unique_check(lambda t: everything(t, dim=1), small_ints((2, 7), dtype, k=2))
    unique_check(lambda t: everything(t, dim=1), small_ints((2, 3, 4), dtype, k=2))
    unique_check(everything, a[0, 0])                            # 0-d
    unique_check(everything, a[:0])                              # empty


def test_unique_nan_and_sorted_values():
    a = np.array([2, np.nan, 1, 2, np.nan, -0.0, 0.0], np.float32)
    unique_check(everything, a)                                  # NaN: each its own value
    unique_check(lambda t: (ember.unique(t),), randn(500).round())


def test_unique_syncs_only_for_its_size():
    x = ember.tensor(small_ints((50,), np.int64), device="opencl")
    with native():  # the size is read with one small copy, never through to_numpy
        values, counts = ember.unique(x, return_counts=True)
    assert int(counts.sum().item()) == 50


@pytest.mark.skipif(not HAS_FP64, reason="gradcheck needs float64")
def test_sort_gradient():
    from ember.autograd import gradcheck
    x = ember.tensor(RNG.standard_normal((3, 5)), device="opencl", requires_grad=True)
    assert BACKEND is not None
    assert gradcheck(lambda t: t.sort(1).values, (x,))
    assert gradcheck(lambda t: t.max(0).values, (x,))
