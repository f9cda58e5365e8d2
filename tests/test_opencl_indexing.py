"""OpenCL shape and indexing kernels (ops_shape, ops_indexing) against the CPU backend.

Every case runs the same ember call on CPU tensors and on OpenCL tensors holding the same
values, over every dtype the device has, with non-contiguous, broadcast, 0-d and empty inputs,
and checks no op falls back to the CPU. One program per dtype serves all indexing ops, so the
dtype loops cost one PoCL build per dtype (cached on disk afterwards).
"""
import warnings

import numpy as np
import pytest

import ember
from ember.testing import assert_close

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(),
                                reason=f"opencl unavailable: {ember.opencl.unavailable_reason()}")
BACKEND = ember.opencl._backend if ember.opencl.is_available() else None
ALL = [d for d in (ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64,
                   ember.float16, ember.float32, ember.float64)
       if BACKEND is not None and d in BACKEND.dtypes]
NUMERIC = [d for d in ALL if d is not ember.bool]
RNG = np.random.default_rng(7)


def host(shape, dtype):
    if dtype is ember.bool:
        return RNG.random(shape) > 0.5
    if dtype.is_floating_point:
        return (RNG.standard_normal(shape) * 3).astype(dtype.np)
    lo = 0 if dtype is ember.uint8 else -20
    return RNG.integers(lo, 20, size=shape).astype(dtype.np)


def check(fn, *arrays):
    """fn on (cpu tensors) vs fn on (opencl tensors); ndarrays become tensors, the rest is
    passed as is. Fails on any CPU fallback."""
    cpu = [ember.tensor(a) if isinstance(a, np.ndarray) else a for a in arrays]
    ocl = [ember.tensor(a, device="opencl") if isinstance(a, np.ndarray) else a for a in arrays]
    expected = fn(*cpu)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the fallback warns: it must not run
        actual = fn(*ocl)
    exp = expected if isinstance(expected, (tuple, list)) else (expected,)
    act = actual if isinstance(actual, (tuple, list)) else (actual,)
    for e, a in zip(exp, act):
        assert a.device.type == "opencl"
        assert a.dtype is e.dtype and a.shape == e.shape, (a.dtype, e.dtype, a.shape, e.shape)
        assert_close(a, e, check_device=False, rtol=0, atol=0, equal_nan=True)
    return actual


def idx(values, device=None, dtype=ember.int64):
    return ember.tensor(values, dtype=dtype, device=device)


def both_idx(values, dtype=ember.int64):
    """The same index on the device of whatever tensor ``x`` the lambda gets."""
    return lambda x: idx(values, x.device, dtype)


# -- shape ops ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_shape_ops_every_dtype(dtype):
    a = host((3, 4), dtype)
    check(lambda x: x.flip(0, 1), a)
    check(lambda x: x.t().flip(1), a)
    check(lambda x: x.roll((1, -2), (0, 1)), a)
    check(lambda x: x.roll(5), a)
    check(lambda x: x.t().tile(2, 1, 2), a)
    check(lambda x: x.tril(1), a)
    check(lambda x: x.t().triu(-1), a)
    check(lambda x: x.clone().fill_(1), a)
    check(lambda x, y: ember.cat([x, y.t()], 1), a, host((4, 3), dtype)[:3])
    check(lambda x, y: ember.stack([x, y], 0), a, host((3, 4), dtype))


def test_shape_layouts_and_edges():
    f = np.float32
    a = host((2, 3, 4), ember.float32)
    check(lambda x: x.permute(2, 0, 1).flip(0, 2), a)
    check(lambda x: x[:, 1:, ::2].roll((1, 1, -3), (0, 0, 2)), a)   # repeated dims add up
    check(lambda x: x.roll(-7, 1), a)                                # shift beyond the size
    check(lambda x: x.flip(0), np.zeros((0, 3), f))
    check(lambda x: x.roll(2, 0), np.zeros((0, 3), f))
    check(lambda x: x.flip(()), np.array(2.5, f))                    # 0-d
    check(lambda x: x.tile(3), np.array(2.5, f))
    check(lambda x: x.tile((2, 0)), host((3,), ember.float32))
    check(lambda x: x.expand(3, 4).tile(1, 2), host((1, 4), ember.float32))
    check(lambda x: x.repeat(2, 1, 3), host((3, 4), ember.float32))
    check(lambda x: x.tril(-5), a)
    check(lambda x: x.triu(2), a[:, :, :0])
    check(lambda x: x.transpose(1, 2).tril(0), a)
    check(lambda *ts: ember.cat(ts, 0), host((2, 3), ember.float32), np.zeros((0,), f),
          host((1, 3), ember.float32))                              # the legacy empty 1-D
    check(lambda *ts: ember.cat(ts, 1), host((2, 3), ember.int32), host((2, 1), ember.float64),
          host((2, 2), ember.bool))                                 # promotion to float64
    check(lambda x: x[::2].clone().fill_(-1), host((5, 2), ember.uint8))   # wraps to 255


def test_fill_writes_through_strided_views():
    a = host((4, 5), ember.int32)
    check(lambda x: (x.t()[1:3].fill_(7), x)[1], a)
    check(lambda x: (x.diagonal().fill_(3.7), x)[1], host((4, 4), ember.float32))


# -- gather / take style ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_indexing_every_dtype(dtype):
    a = host((3, 4), dtype)
    check(lambda x: x[[0, 2, 2, -1]], a)
    check(lambda x: x[both_idx([0, 2])(x), both_idx([-1, 3])(x)], a)
    check(lambda x: x.t()[both_idx([[1, 0], [3, 3]])(x)], a)
    check(lambda x: x.gather(1, both_idx([[0, 3], [1, 1], [2, 0]])(x)), a)
    check(lambda x: x.index_select(1, both_idx([3, 0, 3], ember.int32)(x)), a)
    check(lambda x, m: x.masked_fill(m, 1), a, host((4,), ember.bool))
    check(lambda x, m: x.masked_select(m), a, host((3, 1), ember.bool))
    check(lambda x: x.nonzero(), a)
    check(lambda x: x.t().nonzero(), a)
    check(lambda x: x.scatter(1, both_idx([[0, 3], [1, 2], [2, 0]])(x), x[:, :2].clone()), a)
    check(lambda x: x.index_put((both_idx([0, 2])(x), both_idx([1, 1])(x)),
                                x[0, :2].clone()), a)
    check(lambda x: x.index_put((both_idx([0, 0, 2, 0])(x),), x[:1].expand(4, 4).clone(),
                                accumulate=True), a)
    check(lambda x: x.scatter_add(1, both_idx([[0, 0], [1, 1], [3, 3]])(x), x[:, 1:3].clone()), a)
    check(lambda x: x.scatter(0, both_idx([[2, 0, 2, 2]])(x), x[:1].clone(), reduce="multiply"),
          a)
    check(lambda x: x.index_add(0, both_idx([2, 2, 0])(x), x.clone(), alpha=2), a)


def test_index_layouts():
    a = host((2, 3, 4), ember.float32)
    check(lambda x: x[both_idx([1, 0])(x), :, both_idx([3, 2])(x)], a)        # non-adjacent
    check(lambda x: x[:, both_idx([[0], [2]])(x), both_idx([1, 3])(x)], a)    # broadcast
    check(lambda x: x.permute(2, 0, 1)[both_idx([0, 3])(x), 1], a)
    check(lambda x: x[..., both_idx([], ember.int64)(x)], a)                  # empty result
    check(lambda x: x[x > 0], a)
    check(lambda x: x[:, 1:][x[:, 1:, 0] > 0], a)
    check(lambda x: x.take(both_idx([[0, 23], [-1, 5]])(x)), a)
    check(lambda x: x[both_idx([0, 1], ember.int32)(x), both_idx([2, 0])(x)], a)  # mixed
    check(lambda x: x.expand(5, 3)[[4, 0]], host((3,), ember.int64))


def test_gather_select_zero_d_and_empty():
    s = np.array(4.5, np.float32)
    check(lambda x: x.gather(0, both_idx(0)(x)), s)
    check(lambda x: x.gather(0, both_idx([0, 0])(x)), s)
    check(lambda x: x.gather(0, both_idx(2)(x)), host((5,), ember.float32))
    check(lambda x: x.index_select(0, both_idx([0])(x)), s)
    check(lambda x: x.index_select(0, both_idx([], ember.int64)(x)), host((3,), ember.float32))
    check(lambda x: x.gather(1, both_idx(np.zeros((2, 0), np.int64))(x)),
          host((2, 3), ember.float32))
    check(lambda x: x.nonzero(), np.array(0.0, np.float32))
    check(lambda x: x.nonzero(), np.array(-1, np.int64))
    check(lambda x: x.nonzero(), np.zeros((0, 4), np.float32))
    check(lambda x: x.nonzero(), np.array([0.0, np.nan, -0.0, 1.0], np.float32))   # NaN counts
    check(lambda x, m: x.masked_select(m), s, np.array([True, False, True]))
    big = (RNG.random(5000) > 0.7)                                # many chunks, order kept
    check(lambda x: x.nonzero(), big.reshape(50, 100))
    check(lambda x, m: x.masked_select(m), np.arange(5000, dtype=np.int32), big)


# -- scatter style: duplicates, reductions, determinism ------------------------------------------
@pytest.mark.parametrize("dtype", [ember.float32, ember.int64, ember.bool], ids=str)
def test_accumulation_with_duplicates_matches_cpu(dtype):
    x = host((6, 5), dtype)
    ii = RNG.integers(0, 6, size=40)
    jj = RNG.integers(0, 5, size=40)
    v = host((40,), dtype)
    check(lambda t, val: t.index_put((both_idx(ii)(t), both_idx(jj)(t)), val,
                                     accumulate=True), x, v)
    check(lambda t, val: t.index_put((both_idx(ii)(t),), val[:, None].expand(40, 5).clone(),
                                     accumulate=True), x, v)
    src = host((6, 40), dtype)
    check(lambda t, s: t.scatter_add(1, both_idx(np.tile(ii % 5, (6, 1)))(t), s), x, src)
    check(lambda t, s: t.index_add(1, both_idx(ii % 5)(t), s), x, src)
    check(lambda t, s: t.t().index_add(0, both_idx(ii % 5)(t), s.t()), x, src)


def test_scatter_value_zero_d_and_noncontiguous_src():
    check(lambda x: x.scatter(0, both_idx(1)(x), 9.0), host((3,), ember.float32))
    check(lambda x, s: x.scatter(0, both_idx(0)(x), s), np.array(1.0, np.float32),
          host((2, 2), ember.float32))
    check(lambda x, s: x.scatter(1, both_idx([[1, 0], [0, 1]])(x), s.t(), reduce="add"),
          host((2, 3), ember.float64), host((3, 2), ember.float64))
    check(lambda x, s: x.index_add(0, both_idx([0, 0])(x), s, alpha=3),
          np.array([1, 2], np.int8), np.array([100, 100], np.int8))   # int8 wraps like numpy
    check(lambda x, s: x.index_add(0, both_idx([0])(x), s), np.array(1.0, np.float32),
          np.array(2.0, np.float32))


def test_setitem_and_in_place_views():
    a = host((4, 5), ember.float32)
    check(lambda x: (x.__setitem__((both_idx([0, 3])(x), slice(None)), 7.0), x)[1], a)
    check(lambda x: (x.__setitem__(x > 1, 0.0), x)[1], a)
    check(lambda x: (x.t().__setitem__(both_idx([1, 2])(x), x[0, :4]), x)[1], a)
    check(lambda x: (x.__setitem__(both_idx([0, 1])(x), x[2]), x)[1], a)      # rhs aliases x
    check(lambda x: (x.index_copy_(1, both_idx([4, 0])(x), x[:, :2] * 2), x)[1], a)
    check(lambda x: x.masked_fill(x > 0, ember.tensor(-1.0)), a)


# -- errors surface at the next synchronization --------------------------------------------------
@pytest.mark.parametrize("fn, exc", [
    (lambda x: x[idx([0, 7], x.device)], IndexError),
    (lambda x: x[idx([-6], x.device)], IndexError),
    (lambda x: x.gather(1, idx([[0], [-1], [0], [0], [0]], x.device)), RuntimeError),
    (lambda x: x.index_select(0, idx([5], x.device)), IndexError),
    (lambda x: x.scatter(0, idx([[9, 0]], x.device), 1.0), RuntimeError),
    (lambda x: x.index_add(0, idx([5], x.device), x[:1].clone()), RuntimeError),
    (lambda x: x.index_put((idx([5], x.device),), x[:1].clone(), accumulate=True), IndexError),
])
def test_out_of_bounds_raises_like_cpu(fn, exc):
    x = host((5, 3), ember.float32)
    with pytest.raises(exc, match="out of bounds") as cpu_err:
        fn(ember.tensor(x))
    y = fn(ember.tensor(x, device="opencl"))      # queued: no wait for the device
    with pytest.raises(exc) as err:
        y.cpu()
    assert str(cpu_err.value) in str(err.value)
    ember.tensor([1.0], device="opencl").cpu()    # reported once; the device stays usable


def test_error_surfaces_at_synchronize():
    x = ember.ones(4, device="opencl")
    x[idx([4], x.device)]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 4"):
        ember.opencl.synchronize()


# -- gradients come from the core formulas over these kernels ------------------------------------
@pytest.mark.skipif(BACKEND is None or ember.float64 not in BACKEND.dtypes, reason="no fp64")
def test_gradients_through_indexing_and_shape_ops():
    from ember.autograd import gradcheck
    x = ember.tensor(host((3, 4), ember.float64), device="opencl", requires_grad=True)
    y = ember.tensor(host((2, 4), ember.float64), device="opencl", requires_grad=True)
    i = idx([[0, 3], [1, 1], [2, 0]], "opencl")
    assert gradcheck(lambda a: a.gather(1, i), (x,))
    assert gradcheck(lambda a: a[idx([0, 2, 2], "opencl")], (x,))
    assert gradcheck(lambda a, b: a.index_add(0, idx([2, 2], "opencl"), b, alpha=2), (x, y))
    assert gradcheck(lambda a, b: a.index_put((idx([0, 0], "opencl"),), b, accumulate=True),
                     (x, y))
    # without accumulate self's gradient is zeroed where values were written: the zeros reach
    # the index_put_ kernel shaped like the indexing result, as kernels expect
    assert gradcheck(lambda a, b: a.index_put((idx([2, 0], "opencl"),), b), (x, y))

    def setitem(a):
        a = a * 1
        a[idx([0, 2], "opencl"), idx([1, 1], "opencl")] = 5.0
        return a
    assert gradcheck(setitem, (x,))
    assert gradcheck(lambda a: a.masked_select(a > 0), (x,))
    assert gradcheck(lambda a, b: ember.cat([a, b], 0).flip(1).roll(1, 0).tile(2, 1).tril(),
                     (x, y))
    j = idx([[0, 3], [1, 2], [2, 0]], "opencl")   # scatter: no duplicates (undefined winner)
    assert gradcheck(lambda a: a.scatter(1, j, a[:, :2] * 3), (x,))
