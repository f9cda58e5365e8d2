"""OpenCL reductions with indices, var, vector_norm, scans, softmax, einsum and the GEMM, against
the CPU backend on the same inputs.

Every OpenCL call runs with downloads forbidden (``native``): an op on the CPU fallback, or one
that reads data back to the host, fails the test. Each compiled kernel costs a PoCL build, so
the cases share shapes and dtypes where they can.
"""
import contextlib
import math
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.testing import assert_close

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(),
                                reason=f"opencl unavailable: {ember.opencl.unavailable_reason()}")
BACKEND = ember.opencl._backend if ember.opencl.is_available() else None
HAS_FP64 = BACKEND is not None and ember.float64 in BACKEND.dtypes
FLOATS = [np.float32] + ([np.float64] if HAS_FP64 else [])
RNG = np.random.default_rng(7)


@contextlib.contextmanager
def native():
    """Fail on any device -> host copy of data (the CPU fallback makes one for every input).
    A 0-d read is allowed: the one value linalg's non-finite check reads before a
    decomposition (PyTorch synchronizes there too)."""
    def refuse(t):
        if t.ndim == 0:
            return saved(t)
        raise AssertionError("opencl data was copied to the host")
    saved = BACKEND.to_numpy
    BACKEND.to_numpy = refuse
    try:
        yield
    finally:
        BACKEND.to_numpy = saved


def check(fn, *arrays, equal_nan=True, **tol):
    cpu = [ember.tensor(a) for a in arrays]
    dev = [ember.tensor(a, device="opencl") for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # var's degrees-of-freedom warning
        expected = fn(*cpu)
        with native():
            actual = fn(*dev)
    if not isinstance(expected, tuple):
        expected, actual = (expected,), (actual,)
    for e, a in zip(expected, actual):
        assert a.device.type == "opencl"
        assert (a.dtype, a.shape) == (e.dtype, e.shape)
        assert_close(a, e, check_device=False, equal_nan=equal_nan, **tol)


def randn(*shape, dtype=np.float32):
    return (RNG.standard_normal(shape) * 3).astype(dtype)


def with_nans(a):
    a = a.copy()
    a.flat[1::5] = np.nan
    return a


def test_kernels_are_native():
    for op in ("argmax", "argmin", "max_dim", "min_dim", "var", "vector_norm", "cumsum",
               "cumprod", "softmax", "log_softmax", "sort", "mode", "unique", "einsum",
               "matmul", "linalg_svdvals"):
        assert op in BACKEND.kernels, op


# -- arg reductions --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS + [np.int64, np.uint8])
def test_max_min_dim_and_argmax(dtype):
    a = randn(6, 9, dtype=dtype)
    for d in (0, 1, -1):
        check(lambda t: tuple(t.max(d)), a)
        check(lambda t: tuple(t.min(d, keepdim=True)), a)
        check(lambda t: t.argmax(d), a)
        check(lambda t: t.argmin(d, keepdim=True), a)
    check(lambda t: t.argmax(), a)
    check(lambda t: t.argmin(keepdim=True), a)
    check(lambda t: tuple(t.t().max(1)), a)                      # non-contiguous
    check(lambda t: t[:, 1::2].argmin(0), a)                     # offset + stride


def test_arg_reductions_nan_ties_long_and_0d():
    a = with_nans(randn(5, 7))
    check(lambda t: tuple(t.max(1)), a)
    check(lambda t: tuple(t.min(0)), a)
    ties = np.array([[1, 3, 3, 2, 3], [0, 0, 0, 0, 0]], np.float32)
    check(lambda t: tuple(t.max(1)), ties)                       # first index on ties
    check(lambda t: t.argmin(), ties)
    long = np.full(40000, 2.0, np.float32)
    long[[30000, 35000]] = 5.0                                   # split in chunks: first wins
    check(lambda t: t.argmax(), long)
    long[[31000, 36000]] = np.nan
    check(lambda t: tuple(t.max(0)), long)
    check(lambda t: tuple(t.max(0)), np.array(1.5, np.float32))  # 0-d
    check(lambda t: t.argmax(0), np.array(1.5, np.float32))
    check(lambda t: tuple(t.max(1)), randn(0, 4))                # empty outputs
    check(lambda t: tuple(t.max(0)), np.array([True, False, True]))


# -- var, vector_norm ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_var_and_std(dtype):
    a = randn(4, 6, 5, dtype=dtype)
    check(lambda t: t.var(1), a)
    check(lambda t: t.var((0, 2), correction=0, keepdim=True), a)
    check(lambda t: t.std(), a)
    check(lambda t: t.var(-1, correction=2.5), a)
    check(lambda t: t.permute(2, 0, 1).var(0), a)
    check(lambda t: t.var(0), randn(30000, dtype=dtype), rtol=1e-4, atol=1e-4)
    check(lambda t: t.var(), np.array(2.0, dtype))               # 0-d: nan (1 - 1 dof)
    check(lambda t: t.var(1), randn(3, 0, dtype=dtype))          # empty reduction: nan
    check(lambda t: t.var(0), randn(0, 3, dtype=dtype))          # empty output


@pytest.mark.parametrize("ord", [2, 1, 0, math.inf, -math.inf, 3, 0.5, -1.5])
def test_vector_norm(ord):
    a = randn(5, 8)
    a[0, 0] = 0.0
    check(lambda t: t.norm(ord, dim=1), a, rtol=1e-5, atol=1e-5)
    check(lambda t: t.norm(ord), a, rtol=1e-5, atol=1e-5)
    check(lambda t: t.t().norm(ord, dim=(0,), keepdim=True), a, rtol=1e-5, atol=1e-5)
    check(lambda t: t.norm(ord, dim=0), randn(20000), rtol=1e-4, atol=1e-4)
    check(lambda t: t.norm(ord), with_nans(a))


# -- scans -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.uint8, np.bool_])
def test_cumsum_cumprod(dtype):
    a = (RNG.standard_normal((6, 7)) * 1.2).astype(dtype)
    for d in (0, 1):
        check(lambda t: t.cumsum(d), a)
        check(lambda t: t.cumprod(d), a)
    check(lambda t: t.t().cumsum(1), a)
    check(lambda t: t.cumsum(0, dtype=ember.float32), a)
    check(lambda t: t.cumsum(0), a[0, 0])                        # 0-d
    check(lambda t: t.cumprod(1), a[:0])                         # empty


def test_scan_long_lines_work_group_path():
    a = randn(2, 5000)
    check(lambda t: t.cumsum(1), a, rtol=1e-4, atol=1e-3)
    check(lambda t: t.cumsum(0), randn(70000) * 0.01, rtol=1e-4, atol=1e-3)
    b = (1 + RNG.standard_normal((1, 3000)) * 1e-3).astype(np.float64 if HAS_FP64 else
                                                               np.float32)
    check(lambda t: t.cumprod(1), b, rtol=1e-4, atol=1e-4)
    check(lambda t: t.cumsum(1), RNG.integers(-9, 9, (2, 4000)))   # exact in ints


# -- softmax ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_log_softmax(dtype):
    a = randn(4, 5, 6, dtype=dtype)
    for d in (0, 1, 2):
        check(lambda t: t.softmax(d), a)
        check(lambda t: t.log_softmax(d), a)
    check(lambda t: t.transpose(0, 2).softmax(1), a)
    check(lambda t: t.softmax(0), a[0, 0, 0])                    # 0-d
    check(lambda t: t.log_softmax(1), a[:0])                     # empty
    check(lambda t: t.softmax(1), randn(3, 5000, dtype=dtype))   # work-group path
    check(lambda t: t.log_softmax(0), randn(2000, dtype=dtype) * 30)


def test_softmax_special_values_and_dtype():
    a = np.array([[1, np.inf, 2], [np.nan, 1, 2], [-np.inf] * 3, [1e30, -1e30, 0]], np.float32)
    check(lambda t: t.softmax(1), a)
    check(lambda t: t.log_softmax(1), a)
    check(lambda t: t.softmax(0, dtype=ember.float32), np.arange(6))
    if HAS_FP64:
        check(lambda t: t.log_softmax(1, dtype=ember.float64), randn(3, 4))


# -- einsum and matmul -----------------------------------------------------------------------------
@pytest.mark.parametrize("eq,shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij->ji", [(3, 4)]), ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]), ("ij->", [(3, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,j->ij", [(3,), (4,)]), ("i,i->", [(5,), (5,)]), ("...ij,...jk", [(2, 1, 3, 4), (5, 4, 2)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]), ("iij,jk->ik", [(3, 3, 4), (4, 2)]),
    ("ij,jk->ik", [(3, 1), (4, 5)]), ("bij,bjk->bik", [(1, 3, 4), (2, 4, 5)]),
    ("ij,kl->", [(2, 3), (4, 5)]), ("ij,ij->ij", [(2, 3), (2, 3)]), ("ij", [(2, 3)]),
    ("abc,cd,bd->a", [(2, 3, 4), (4, 5), (3, 5)]), ("ij,jk->ik", [(0, 4), (4, 5)]),
    ("ij,jk->ik", [(3, 0), (0, 5)])])
def test_einsum(eq, shapes):
    check(lambda *ts: ember.einsum(eq, *ts), *[randn(*s) for s in shapes], rtol=1e-5, atol=1e-5)


def test_einsum_integers_and_fresh_result():
    check(lambda a, b: ember.einsum("ij,jk->ik", a, b), RNG.integers(-5, 5, (3, 4)),
          RNG.integers(-5, 5, (4, 2)))
    x = ember.tensor(randn(3, 3), device="opencl")
    r = ember.einsum("ij->ij", x)
    assert r._storage is not x._storage


@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_fast_path_layouts(dtype):
    tol = dict(rtol=1e-4, atol=1e-4)
    check(lambda a, b: a @ b, randn(64, 64, dtype=dtype), randn(64, 64, dtype=dtype), **tol)
    check(lambda a, b: a @ b, randn(100, 37, dtype=dtype), randn(37, 50, dtype=dtype), **tol)
    check(lambda a, b: a.t() @ b.t(), randn(37, 100, dtype=dtype), randn(50, 37, dtype=dtype),
          **tol)
    check(lambda a, b: a @ b, randn(2, 1, 40, 33, dtype=dtype), randn(3, 33, 70, dtype=dtype),
          **tol)
    check(lambda a, b: a @ b, randn(3, 40, 33, dtype=dtype), randn(33, 70, dtype=dtype),
          **tol)                                                 # b packed once, stride 0
    check(lambda a, b: b.t() @ a.transpose(1, 2), randn(3, 40, 33, dtype=dtype),
          randn(33, 70, dtype=dtype), **tol)
    check(lambda a, b: a[:, ::2] @ b, randn(64, 100, dtype=dtype), randn(50, 64, dtype=dtype),
          **tol)
    check(lambda a, b: a @ b, randn(40, 300, dtype=dtype), randn(300, dtype=dtype), **tol)
    check(lambda a, b: a @ b, randn(64, 0, dtype=dtype), randn(0, 64, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_svdvals_jacobi(dtype):
    from ember.ops.linalg import svdvals_op
    for shape in [(4, 4), (5, 3), (3, 5), (2, 3, 6, 4), (1, 1), (0, 3), (2, 0, 3), (30, 20)]:
        check(svdvals_op, randn(*shape, dtype=dtype), rtol=1e-5, atol=1e-5)
    check(lambda t: svdvals_op(t.t()), randn(6, 4, dtype=dtype), rtol=1e-5, atol=1e-5)
    check(lambda t: t.norm("nuc"), randn(5, 7, dtype=dtype), rtol=1e-5, atol=1e-5)
    rank1 = np.outer(np.arange(5.0), np.arange(4.0)).astype(dtype)
    check(svdvals_op, rank1, rtol=1e-5, atol=1e-5)


# -- gradients through the native kernels ----------------------------------------------------------
@pytest.mark.skipif(not HAS_FP64, reason="gradcheck needs float64")
def test_gradients():
    def leaf(*shape):
        return ember.tensor(RNG.standard_normal(shape), device="opencl", requires_grad=True)
    x = leaf(3, 4)
    assert gradcheck(lambda t: t.softmax(1), (x,))
    assert gradcheck(lambda t: t.log_softmax(0), (x,))
    assert gradcheck(lambda t: t.cumsum(1), (x,))
    assert gradcheck(lambda t: t.var(1), (x,))
    assert gradcheck(lambda t: t.norm(3, dim=0), (x,))
    assert gradcheck(lambda a, b: ember.einsum("ij,jk->ik", a, b), (x, leaf(4, 2)))
    assert gradcheck(lambda a, b: a @ b, (leaf(9, 20), leaf(20, 17)))
