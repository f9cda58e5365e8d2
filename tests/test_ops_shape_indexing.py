"""cat/stack/flip/roll/repeat/tile/tril/triu, indexing and sorting, against numpy."""
import numpy as np
import pytest

import ember

rng = np.random.default_rng(0)


def T(a):
    return ember.tensor(a)


def check(t, expected):
    got = t.numpy()
    assert got.shape == np.shape(expected), (got.shape, np.shape(expected))
    np.testing.assert_array_equal(got, expected)


A = rng.standard_normal((3, 4)).astype(np.float32)
B = rng.integers(-5, 5, (2, 3, 4))


# -- shape ops ----------------------------------------------------------------------------------
def test_cat_promotes_and_skips_legacy_empty():
    check(ember.cat([T(A), T(A[:, :2].astype(np.float64))], 1),
          np.concatenate([A, A[:, :2]], 1).astype(np.float64))
    check(ember.cat([T(np.zeros(0, np.float32)), T(A)]), A)
    check(ember.cat([T(A).t(), T(A).t()], -1), np.concatenate([A.T, A.T], -1))
    check(ember.stack([T(A), T(A) * 2], dim=2), np.stack([A, A * 2], 2))


def test_cat_errors_name_sizes():
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 1. "
                                           "Expected size 3 but got size 2 for tensor number 1"):
        ember.cat([T(A), T(A[:2])], 1)
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        ember.cat([T(1.0), T(2.0)])
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ember.stack([T(A), T(A[:2])])
    with pytest.raises(TypeError, match="sequence of Tensors"):
        ember.cat(T(A))


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_flip_roll_repeat_tile_tri(layout):
    a = B.reshape(6, 4)
    t = T(a) if layout == "contiguous" else T(np.ascontiguousarray(a.T)).t()
    check(t.flip(0), a[::-1])
    check(ember.flip(t, (0, 1)), a[::-1, ::-1])
    check(ember.fliplr(t), a[:, ::-1])
    check(t.roll(2, 0), np.roll(a, 2, 0))
    check(t.roll((1, -1), (0, 1)), np.roll(a, (1, -1), (0, 1)))
    check(t.roll(5), np.roll(a, 5))
    check(t.repeat(2, 1, 3), np.tile(a, (2, 1, 3)))
    check(t.tile(2), np.tile(a, 2))
    check(t.tril(), np.tril(a))
    check(t.triu(1), np.triu(a, 1))
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims"):
        t.repeat(2)
    with pytest.raises(RuntimeError, match="dims has duplicates"):
        t.flip(0, 0)


# -- indexing -----------------------------------------------------------------------------------
INDICES = [
    0, -1, (1, 2), (slice(None), 1), (slice(1, None, 2),), (Ellipsis, 0), (None, 1),
    (0, None, slice(None), None), ([0, 1],), ([1, 0], [2, 2]), (slice(None), [0, 2, 2]),
    ([[0, 1], [1, 0]],), (0, [1, 2], slice(1, 3)), ([1, 0], slice(None), [3, 1]),
    (Ellipsis, [0, 3]), (slice(None), None, [2]),
]


@pytest.mark.parametrize("index", INDICES, ids=str)
def test_getitem_matches_numpy(index):
    check(T(B)[index], B[index])


def test_bool_masks_and_scalar_bools():
    t = T(B)
    check(t[t > 0], B[B > 0])
    mask = B[0] > 0
    check(t[:, T(mask)], B[:, mask])
    check(t[True], B[None])
    check(t[False], B[None][:0])
    with pytest.raises(IndexError, match=r"The shape of the mask \[3\] at index 0 does not "
                                         r"match the shape of the indexed tensor \[2, 3, 4\]"):
        t[T([True, False, True])]


def test_basic_indexing_returns_views_that_write_through():
    base = ember.zeros(3, 4)
    v = base[1:, ::2]
    v.add_(1)
    expected = np.zeros((3, 4), np.float32)
    expected[1:, ::2] = 1
    check(base, expected)
    assert v.untyped_storage() is base.untyped_storage()


def test_setitem_all_forms_and_version_counter():
    t = ember.zeros(3, 4, dtype=ember.int64)
    n = np.zeros((3, 4), np.int64)
    for index, value in [((1,), 5), ((slice(None), 0), T([1, 2, 3])), (([0, 2], [1, 1]), 7),
                         ((Ellipsis, -1), -2)]:
        before = t._version
        t[index] = value
        n[index] = value.numpy() if isinstance(value, ember.Tensor) else value
        assert t._version > before
    t[t > 4] = 0
    n[n > 4] = 0
    check(t, n)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        t[[0, 1]] = T([[1, 2, 3]])


def test_index_errors():
    t = T(B)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        t[5]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 3"):
        t[0, 0, 0, 0]
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 2"):
        t[[0, 7]]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        t[T([0.0])]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        t[::-1]


def test_gather_scatter_family():
    a = rng.standard_normal((3, 4))
    idx = np.array([[0, 3], [1, 1], [2, 0]])
    check(T(a).gather(1, T(idx)), np.take_along_axis(a, idx, 1))
    check(T(a).gather(1, T(idx[:2])), np.take_along_axis(a[:2], idx[:2], 1))
    out = a.copy()
    np.put_along_axis(out, idx, 9.0, 1)
    check(T(a).scatter(1, T(idx), value=9.0), out)
    src = rng.standard_normal((3, 2))
    out = a.copy()
    for i in range(3):
        for j in range(2):
            out[i, idx[i, j]] += src[i, j]
    np.testing.assert_allclose(T(a).scatter_add(1, T(idx), T(src)).numpy(), out)
    check(T(a).index_select(0, T([2, 0])), a[[2, 0]])
    out = a.copy()
    np.add.at(out, [0, 0], 2 * np.ones((2, 4)))
    np.testing.assert_allclose(T(a).index_add(0, T([0, 0]), T(np.ones((2, 4))), alpha=2).numpy(),
                               out)
    check(T(a).masked_fill(T(a > 0), -1.0), np.where(a > 0, -1.0, a))
    check(T(a).masked_select(T(a > 0)), a[a > 0])
    check(ember.nonzero(T(a > 0)), np.argwhere(a > 0))
    assert [x.tolist() for x in ember.nonzero(T(a > 0), as_tuple=True)] == \
        [x.tolist() for x in np.nonzero(a > 0)]
    check(ember.one_hot(T([0, 2, 1]), 4), np.eye(4, dtype=np.int64)[[0, 2, 1]])
    with pytest.raises(RuntimeError, match="out of bounds"):
        T(a).gather(1, T([[5]]))
    with pytest.raises(RuntimeError, match="Expected dtype int64 for index"):
        T(a).gather(1, T([[0.0]]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        ember.one_hot(T([3]), 2)


def test_inplace_scatter_and_masked_fill():
    t = ember.zeros(2, 3)
    t.scatter_(1, T([[2], [0]]), ember.ones(2, 1))
    t.masked_fill_(T([[True, False, False], [False, False, False]]), 4.0)
    check(t, np.array([[4, 0, 1], [1, 0, 0]], np.float32))


# -- sorting ------------------------------------------------------------------------------------
def test_sort_argsort_topk():
    a = rng.standard_normal((4, 5)).astype(np.float32)
    v, i = T(a).sort(dim=1)
    check(v, np.sort(a, 1))
    check(i, np.argsort(a, 1, kind="stable"))
    v, i = T(a).sort(dim=0, descending=True)
    check(v, -np.sort(-a, 0))
    check(T(a).argsort(dim=-1), np.argsort(a, -1, kind="stable"))
    top = T(a).topk(3, dim=1)
    check(top.values, -np.sort(-a, 1)[:, :3])
    small = T(a).topk(2, dim=0, largest=False)
    check(small.values, np.sort(a, 0)[:2])
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        T(a).topk(9)


def test_sort_nan_and_ties_like_torch():
    x = T([3.0, float("nan"), 1.0, 3.0])
    assert x.sort().indices.tolist() == [2, 0, 3, 1]
    assert x.sort(descending=True).indices.tolist() == [1, 0, 3, 2]
    assert T([1, 1, 1]).sort(stable=True).indices.tolist() == [0, 1, 2]
