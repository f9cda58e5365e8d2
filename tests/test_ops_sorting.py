"""sort/argsort/msort/topk, kthvalue/median/nanmedian/mode and unique against numpy (and
PyTorch where it is installed)."""
import math

import numpy as np
import pytest

import ember
from ember.ops.views import slice_op

rng = np.random.default_rng(0)
nan = math.nan
SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)]


def data(shape, dtype):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype == "int64":
        return rng.integers(-3, 3, shape)  # small range: many ties
    a = rng.integers(-3, 3, shape).astype(dtype)
    a[rng.random(shape) < 0.2] = nan
    return a


def variants(a):
    """(tensor, values) pairs holding ``a``'s values in several layouts: contiguous, permuted,
    sliced with a step, and (with its own values) expanded with stride 0."""
    a = np.asarray(a)
    out = [(ember.from_numpy(a.copy()), a)]
    if a.ndim >= 2:
        rev = tuple(range(a.ndim))[::-1]
        out.append((ember.from_numpy(np.ascontiguousarray(a.transpose(rev))).permute(rev), a))
    if a.ndim >= 1:
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        wide[..., ::2] = a
        out.append((slice_op(ember.from_numpy(wide), a.ndim - 1, None, None, 2), a))
        if a.shape[0]:
            row = a[:1]
            out.append((ember.from_numpy(row.copy()).expand(*a.shape),
                        np.broadcast_to(row, a.shape)))
    return out


def check(t, expected):
    expected = np.asarray(expected)
    got = t.numpy()
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


def ref_sort(a, axis, descending):
    """Stable sort with NaN above every number; descending keeps ties in input order."""
    if a.ndim == 0:
        return a.copy(), np.zeros((), np.int64)
    if descending:
        rev = np.flip(a, axis)
        idx = a.shape[axis] - 1 - np.flip(np.argsort(rev, axis, kind="stable"), axis)
    else:
        idx = np.argsort(a, axis, kind="stable")
    return np.take_along_axis(a, idx, axis), idx


# -- sort / argsort / msort ---------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_sort_and_argsort_are_stable_in_every_layout(shape, dtype):
    a = data(shape, dtype)
    for t, n in variants(a):
        for dim in (0, -1):
            axis = dim % n.ndim if n.ndim else 0
            for descending in (False, True):
                values, indices = ref_sort(n, axis, descending)
                r = t.sort(dim, descending=descending, stable=True)
                check(r.values, values)
                check(r.indices, indices)
                assert r.values.untyped_storage() is not t.untyped_storage()
                check(ember.argsort(t, dim, descending), indices)
        if n.ndim:
            check(ember.msort(t), ref_sort(n, 0, False)[0])
            check(t.sort().values, ref_sort(n, n.ndim - 1, False)[0])


def test_sort_nan_and_ties_like_torch():
    x = ember.tensor([3.0, nan, 1.0, 3.0, -math.inf, nan])
    assert x.sort().indices.tolist() == [4, 2, 0, 3, 1, 5]
    assert x.sort(descending=True).indices.tolist() == [1, 5, 0, 3, 2, 4]
    assert ember.tensor([1, 1, 1]).sort(stable=True, descending=True).indices.tolist() == \
        [0, 1, 2]
    r = ember.sort(ember.tensor(2.0))
    assert (r.values.item(), r.indices.item(), r.indices.dtype) == (2.0, 0, ember.int64)
    assert isinstance(r, tuple) and r._fields == ("values", "indices")
    assert "return_types.sort" in repr(r)


def test_sort_errors():
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.zeros(2, 3).sort(2)
    with pytest.raises(RuntimeError, match="complex"):
        ember.zeros(3, dtype=ember.complex64).sort()
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.sort([3, 1])


# -- topk ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_topk(dtype):
    a = data((4, 6), dtype)
    for t, n in variants(a):
        for dim, k in [(1, 3), (0, 2), (-1, 0), (1, 6)]:
            axis = dim % 2
            top = t.topk(k, dim)
            values = np.take(ref_sort(n, axis, True)[0], range(k), axis)
            check(top.values, values)
            check(ember.gather(t, axis, top.indices), values)
            low = ember.topk(t, k, dim, largest=False, sorted=True)
            check(low.values, np.take(ref_sort(n, axis, False)[0], range(k), axis))
    x = ember.tensor([1.0, nan, 3.0])
    assert x.topk(2).indices.tolist() == [1, 2]
    assert x.topk(2, largest=False).indices.tolist() == [0, 2]
    s = ember.topk(ember.tensor(3.0), 1)
    assert (s.values.item(), s.indices.item()) == (3.0, 0)
    assert tuple(ember.zeros(2, 0).topk(0).values.shape) == (2, 0)
    for k in (4, -1):
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            ember.zeros(3).topk(k)


# -- order statistics ---------------------------------------------------------------------------
def ref_pick(a, axis, pos):
    """Values and indices at sorted positions ``pos`` (array broadcast over the other dims)."""
    values, indices = ref_sort(a, axis, False)
    pos = np.expand_dims(np.broadcast_to(pos, np.delete(a.shape, axis)), axis)
    return (np.take_along_axis(values, pos, axis).squeeze(axis),
            np.take_along_axis(indices, pos, axis).squeeze(axis))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_kthvalue_median_nanmedian(dtype):
    a = data((3, 5), dtype)
    for t, n in variants(a):
        for dim in (0, 1, -1):
            axis = dim % 2
            size = n.shape[axis]
            for k in (1, 3):
                r = t.kthvalue(k, dim)
                check(r.values, ref_pick(n, axis, k - 1)[0])
                r = ember.kthvalue(t, k, dim, keepdim=True)
                check(r.values, np.expand_dims(ref_pick(n, axis, k - 1)[0], axis))
            nans = np.isnan(n).sum(axis) if dtype != "int64" else np.zeros(n.shape[1 - axis], int)
            pos = np.where(nans > 0, size - nans, (size - 1) // 2)
            values, indices = ref_pick(n, axis, pos)
            r = t.median(dim)
            check(r.values, values)
            check(r.indices, indices)
            r = ember.median(t, dim, keepdim=True)
            check(r.values, np.expand_dims(values, axis))
            valid = size - nans
            pos = np.where(valid > 0, (valid - 1) // 2, 0)
            values, indices = ref_pick(n, axis, pos)
            r = t.nanmedian(dim)
            check(r.values, values)
            check(r.indices, indices)
        flat = np.sort(n.ravel(), kind="stable")
        if dtype == "int64":
            check(t.median(), flat[(flat.size - 1) // 2])
        else:
            valid = flat[~np.isnan(flat)]
            check(t.median(), flat[-1] if valid.size < flat.size else flat[(flat.size - 1) // 2])
            check(ember.nanmedian(t), valid[(valid.size - 1) // 2])


def test_order_statistics_edge_cases():
    s = ember.tensor(3.0)
    assert s.kthvalue(1).values.item() == 3.0
    assert s.median(0).indices.item() == 0
    assert s.median().item() == 3.0
    assert math.isnan(ember.zeros(0).median().item())
    assert math.isnan(ember.tensor([nan, nan]).nanmedian().item())
    r = ember.tensor([[2.0, nan], [nan, nan]]).nanmedian(1)
    assert r.values[0].item() == 2.0 and math.isnan(r.values[1].item())
    assert "return_types.kthvalue" in repr(s.kthvalue(1))
    with pytest.raises(RuntimeError, match="kthvalue\\(\\): selected number k out of range for "
                                           "dimension 1"):
        ember.zeros(2, 3).kthvalue(4, 1)
    with pytest.raises(RuntimeError, match="selected number k out of range for dimension 0"):
        s.kthvalue(2)
    with pytest.raises(IndexError, match="median\\(\\): Expected reduction dim 1 to have "
                                         "non-zero size."):
        ember.zeros(2, 0).median(1)
    with pytest.raises(IndexError, match="mode\\(\\): Expected reduction dim 0 to have non-zero "
                                         "size."):
        ember.zeros(0).mode()
    with pytest.raises(RuntimeError, match="cannot be empty"):
        ember.zeros(0, dtype=ember.int64).median()


def ref_mode(a, axis):
    """The smallest most frequent value along ``axis`` and its last position."""
    moved = np.moveaxis(a, axis, -1)
    values = np.empty(moved.shape[:-1], a.dtype)
    indices = np.empty(moved.shape[:-1], np.int64)
    for pos in np.ndindex(*moved.shape[:-1]):
        row = moved[pos]
        uniq, counts = np.unique(row, return_counts=True)
        best = uniq[np.argmax(counts)]
        values[pos] = best
        indices[pos] = np.nonzero(row == best)[0][-1]
    return values, indices


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_mode(dtype):
    a = rng.integers(0, 3, (3, 6)).astype(dtype)
    for t, n in variants(a):
        for dim in (0, 1, -1):
            values, indices = ref_mode(n, dim % 2)
            r = t.mode(dim)
            check(r.values, values)
            check(r.indices, indices)
            r = ember.mode(t, dim, keepdim=True)
            check(r.indices, np.expand_dims(indices, dim % 2))
    r = ember.tensor([3.0, 1.0, 3.0, 1.0, 2.0]).mode()
    assert (r.values.item(), r.indices.item()) == (1.0, 3)
    r = ember.tensor(5).mode()
    assert (r.values.item(), r.indices.item()) == (5, 0)
    assert tuple(ember.zeros(2, 0).mode(0).values.shape) == (0,)


# -- unique -------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_unique(shape, dtype):
    a = data(shape, dtype)
    for t, n in variants(a):
        values, inverse, counts = np.unique(n.ravel(), return_inverse=True, return_counts=True,
                                            equal_nan=False)
        check(t.unique(), values)
        u, inv, cnt = ember.unique(t, return_inverse=True, return_counts=True)
        check(u, values)
        check(inv, inverse.reshape(n.shape).astype(np.int64))
        check(cnt, counts.astype(np.int64))
        u, cnt = ember.unique(t, sorted=False, return_counts=True)
        check(cnt, counts.astype(np.int64))


def test_unique_dim():
    a = np.array([[1, 2, 1], [3, 4, 3], [1, 2, 1]])
    for t, n in variants(a):
        for dim in (0, 1, -1):
            values, inverse, counts = np.unique(n, return_inverse=True, return_counts=True,
                                                axis=dim % 2)
            u, inv, cnt = t.unique(dim=dim, return_inverse=True, return_counts=True)
            check(u, values)
            check(inv, inverse.reshape(-1).astype(np.int64))
            check(cnt, counts.astype(np.int64))
    with pytest.raises(RuntimeError, match="There are 0 sized dimensions, and they aren't "
                                           "selected"):
        ember.zeros(0, 3).unique(dim=1)
    nans = ember.tensor([nan, 1.0, nan])
    assert nans.unique(return_counts=True)[1].tolist() == [1, 1, 1]  # NaNs are all distinct


# -- against PyTorch ----------------------------------------------------------------------------
def test_sorting_matches_torch():
    torch = pytest.importorskip("torch")
    for dtype in ("float32", "int64"):
        a = data((4, 5), dtype)
        e, t = ember.tensor(a), torch.tensor(a)
        for dim in (0, 1):
            for desc in (False, True):
                for got, exp in zip(e.sort(dim, desc, stable=True),
                                    t.sort(dim=dim, descending=desc, stable=True)):
                    np.testing.assert_array_equal(got.numpy(), exp.numpy())
            for name in ("median", "nanmedian"):
                for got, exp in zip(getattr(e, name)(dim), getattr(t, name)(dim)):
                    np.testing.assert_array_equal(got.numpy(), exp.numpy())
            np.testing.assert_array_equal(e.topk(3, dim).values.numpy(),
                                          t.topk(3, dim).values.numpy())
            np.testing.assert_array_equal(e.kthvalue(2, dim).values.numpy(),
                                          t.kthvalue(2, dim).values.numpy())
        for got, exp in zip(e.unique(return_inverse=True, return_counts=True),
                            t.unique(return_inverse=True, return_counts=True)):
            np.testing.assert_array_equal(got.numpy(), exp.numpy())
    a = rng.integers(0, 3, (4, 7))
    for got, exp in zip(ember.tensor(a).mode(1), torch.tensor(a).mode(1)):
        np.testing.assert_array_equal(got.numpy(), exp.numpy())
