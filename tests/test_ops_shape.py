"""cat/stack & co., flip, roll, repeat/tile, repeat_interleave, tril/triu against numpy (and
PyTorch where it is installed)."""
import numpy as np
import pytest

import ember
from ember.ops.views import slice_op

rng = np.random.default_rng(0)
NP = {ember.float32: np.float32, ember.float64: np.float64, ember.int64: np.int64,
      ember.int32: np.int32, ember.bool: np.bool_}


def data(shape, dtype="float32"):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("int"):
        return rng.integers(-5, 5, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


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


def check(t, expected, dtype=None):
    expected = np.asarray(expected)
    assert isinstance(t, ember.Tensor)
    got = t.numpy()
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if dtype is not None:
        assert t.dtype is dtype, (t.dtype, dtype)
    else:
        assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


def fresh(out, *inputs):
    """A kernel's result owns new memory: no storage or bytes shared with any input."""
    for t in inputs:
        assert out.untyped_storage() is not t.untyped_storage()
        assert not np.shares_memory(out.numpy(), t.numpy())


# -- cat / stack --------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,dim", [((3, 4), 0), ((3, 4), 1), ((3, 4), -1), ((2, 3, 4), 1),
                                       ((2, 0, 3), 1), ((0, 3), 0), ((5,), 0)])
def test_cat_matches_numpy_in_every_layout(shape, dim):
    a = data(shape)
    other = list(shape)
    other[dim] = 2
    b = data(tuple(other))
    for ta, na in variants(a):
        for tb, nb in variants(b)[:2]:
            out = ember.cat([ta, tb], dim)
            check(out, np.concatenate([na, nb], dim))
            fresh(out, ta, tb)


@pytest.mark.parametrize("d1,d2,expected", [
    (ember.float32, ember.int64, ember.float32), (ember.int64, ember.bool, ember.int64),
    (ember.int32, ember.float64, ember.float64), (ember.bool, ember.bool, ember.bool),
    (ember.int32, ember.int64, ember.int64)])
def test_cat_promotes_like_torch(d1, d2, expected):
    a, b = data((2, 3)).astype(NP[d1]), data((1, 3)).astype(NP[d2])
    out = ember.cat([ember.tensor(a), ember.tensor(b)])
    check(out, np.concatenate([a, b]).astype(NP[expected]), dtype=expected)


def test_cat_legacy_empty_and_single_and_out():
    a = data((2, 3))
    empty = ember.zeros(0, dtype=ember.int64)
    check(ember.cat([empty, ember.tensor(a), empty], 1), a)
    check(ember.cat([empty, empty]), np.zeros(0, np.int64))
    # the skipped tensors still take part in the dtype promotion
    assert ember.cat([ember.zeros(0, dtype=ember.float64), ember.tensor(a)]).dtype is \
        ember.float64
    single = ember.tensor(a)
    out = ember.cat([single])
    check(out, a)
    fresh(out, single)
    check(ember.cat([ember.zeros(2, 0), ember.zeros(3, 0)]), np.zeros((5, 0), np.float32))
    dst = ember.empty(0)
    assert ember.cat([single, single], 0, out=dst) is dst
    check(dst, np.concatenate([a, a]))
    check(ember.concat((single, single), dim=-1), np.concatenate([a, a], -1))
    check(ember.concatenate([single], 0), a)


def test_cat_errors():
    a = ember.zeros(2, 3)
    # PyTorch's text after the op's name (issue #36: every message names the op)
    with pytest.raises(RuntimeError, match=r"^cat\(\): Sizes of tensors must match except in "
                                           r"dimension 1. Expected size 2 but got size 3 for "
                                           r"tensor number 1 in the list.$"):
        ember.cat([a, ember.zeros(3, 3)], 1)
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 "
                                           "and 3"):
        ember.cat([a, ember.zeros(2, 3, 1)])
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 1\) cannot "
                                           r"be concatenated"):
        ember.cat([ember.zeros(2), ember.tensor(1.0)])
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        ember.cat([])
    with pytest.raises(TypeError, match="sequence of Tensors"):
        ember.cat(a)
    with pytest.raises(TypeError, match="expected Tensor as element 1"):
        ember.cat([a, 1.0])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.cat([a, a], 2)


def test_stack_family():
    a, b = data((2, 3)), data((2, 3))
    for dim in (0, 1, 2, -1, -3):
        out = ember.stack([ember.tensor(a), ember.tensor(b).t().t()], dim)
        check(out, np.stack([a, b], dim))
    check(ember.stack([ember.tensor(1.0), ember.tensor(2)]), np.array([1.0, 2.0], np.float32))
    v, w = np.array([1, 2]), np.array([3, 4])
    for name in ("hstack", "vstack", "dstack", "column_stack", "row_stack"):
        np_name = "vstack" if name == "row_stack" else name
        check(getattr(ember, name)([ember.tensor(v), ember.tensor(w)]),
              getattr(np, np_name)([v, w]))
        check(getattr(ember, name)([ember.tensor(a), ember.tensor(b)]),
              getattr(np, np_name)([a, b]))
    check(ember.hstack([ember.tensor(1), ember.tensor([2, 3])]), np.array([1, 2, 3]))
    for n in (1, 2, 3):
        fn = getattr(ember, f"atleast_{n}d")
        for x in (np.array(5.0), v, a, data((2, 3, 4))):
            assert tuple(fn(ember.tensor(x)).shape) == getattr(np, f"atleast_{n}d")(x).shape
        assert [tuple(t.shape) for t in fn(ember.tensor(1), ember.tensor(v))] == \
            [np.shape(x) for x in getattr(np, f"atleast_{n}d")(1, v)]
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but "
                                           r"got \[2, 3\] at entry 0 and \[3, 2\] at entry 1"):
        ember.stack([ember.tensor(a), ember.tensor(a).t()])
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        ember.stack([])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.stack([ember.tensor(a)], 3)


# -- flip / roll --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_flip_and_roll_in_every_layout(dtype):
    a = data((3, 4), dtype)
    for t, n in variants(a):
        for dims in [(0,), (1,), (0, 1), (-1, 0), ()]:
            out = t.flip(dims)
            check(out, np.flip(n, dims) if dims else n)
            fresh(out, t)
        check(ember.flip(t, [0]), n[::-1])
        check(t.flip(1, 0), n[::-1, ::-1])
        check(ember.fliplr(t), np.fliplr(n))
        check(t.flipud(), np.flipud(n))
        for shifts, dims in [(1, 0), (-5, 1), ((1, 2), (0, 1)), ((2, -1), (1, 1)), (7, None),
                             (-3, None), (0, 0)]:
            out = t.roll(shifts, dims)
            check(out, np.roll(n, shifts, dims))
            fresh(out, t)


def test_flip_roll_edge_cases_and_errors():
    s = ember.tensor(3.0)
    check(s.flip(0), np.array(3.0, np.float32))
    check(s.roll(2), np.array(3.0, np.float32))
    check(ember.zeros(0, 3).roll(1, 0), np.zeros((0, 3), np.float32))
    check(ember.zeros(0, 3).flip(0), np.zeros((0, 3), np.float32))
    t = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        t.flip(0, -2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.flip(2)
    with pytest.raises(RuntimeError, match="Input must be >= 2-d."):
        ember.fliplr(ember.zeros(3))
    with pytest.raises(RuntimeError, match="Input must be >= 1-d."):
        ember.flipud(s)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:0"):
        t.roll((1, 2))
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 1, dims:2"):
        t.roll(1, (0, 1))
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        s.roll(1, 0)


# -- repeat / tile / repeat_interleave ----------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_repeat_and_tile_in_every_layout(dtype):
    a = data((2, 3), dtype)
    for t, n in variants(a):
        for reps in [(1, 1), (2, 3), (2, 1, 2), (0, 2), (1, 1, 1, 1)]:
            out = t.repeat(*reps)
            check(out, np.tile(n, reps))
            fresh(out, t)
            check(t.repeat(reps), np.tile(n, reps))
        for reps in [(2,), (), (3, 1), (2, 2, 2)]:
            check(t.tile(reps), np.tile(n, reps))
            check(ember.tile(t, reps), np.tile(n, reps))
    s = ember.tensor(7)
    check(s.repeat(()), np.array(7))
    check(s.repeat(2, 3), np.full((2, 3), 7))
    check(ember.zeros(0, 2).repeat(3, 1), np.zeros((0, 2), np.float32))


def test_repeat_errors():
    t = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be "
                                           "smaller than number of dimensions of tensor"):
        t.repeat(2)
    with pytest.raises(RuntimeError, match=r"Trying to create tensor with negative dimension "
                                           r"-2: \[-2, 3\]"):
        t.repeat(-1, 1)
    with pytest.raises(RuntimeError, match="negative dimension -3"):
        t.tile(-1)


def test_repeat_interleave():
    a = data((2, 3))
    t = ember.tensor(a)
    check(t.repeat_interleave(2), np.repeat(a, 2))
    check(ember.repeat_interleave(t, 2, 0), np.repeat(a, 2, 0))
    check(ember.repeat_interleave(t.t(), 3, dim=-1), np.repeat(a.T, 3, -1))
    check(t.repeat_interleave(ember.tensor([1, 0]), 0), np.repeat(a, [1, 0], 0))
    check(t.repeat_interleave(ember.tensor([2, 0, 1]), dim=1), np.repeat(a, [2, 0, 1], 1))
    check(t.repeat_interleave(ember.tensor(2), 1), np.repeat(a, 2, 1))
    check(t.repeat_interleave(ember.tensor([2]), 1), np.repeat(a, 2, 1))
    check(t.repeat_interleave(0, 0), np.zeros((0, 3), np.float32))
    check(ember.repeat_interleave(ember.tensor(5.0), 3), np.full(3, 5.0, np.float32))
    check(ember.repeat_interleave(ember.tensor([2, 0, 1])), np.array([0, 0, 2]))
    check(t.repeat_interleave(2, 0, output_size=4), np.repeat(a, 2, 0))
    with pytest.raises(RuntimeError, match=r"repeats must have the same size as input along "
                                           r"dim, but got repeats.size\(0\) = 3 and "
                                           r"input.size\(0\) = 2"):
        t.repeat_interleave(ember.tensor([1, 2, 3]), 0)
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        t.repeat_interleave(ember.tensor([-1, 2]), 0)
    with pytest.raises(RuntimeError, match="Repeats must be non-negative"):
        t.repeat_interleave(-1)
    with pytest.raises(RuntimeError, match="repeats must be 0-dim or 1-dim tensor"):
        t.repeat_interleave(ember.tensor([[1, 2]]), 0)
    with pytest.raises(RuntimeError, match="output_size"):
        t.repeat_interleave(2, 0, output_size=3)


# -- tril / triu --------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 4), (0, 3), (2, 0, 2)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_tril_triu_batched(shape, dtype):
    a = data(shape, dtype)
    for t, n in variants(a):
        for k in (-5, -1, 0, 1, 2, 5):
            out = t.tril(k)
            check(out, np.tril(n, k))
            fresh(out, t)
            check(ember.triu(t, diagonal=k), np.triu(n, k))


def test_tril_triu_inplace_out_and_errors():
    a = data((3, 3))
    t = ember.tensor(a)
    before = t._version
    assert t.tril_(-1) is t
    check(t, np.tril(a, -1))
    assert t._version > before
    t = ember.tensor(a)
    t.triu_()
    check(t, np.triu(a))
    out = ember.empty(0)
    ember.tril(ember.tensor(a), out=out)
    check(out, np.tril(a))
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        ember.tril(ember.zeros(3))
    with pytest.raises(RuntimeError, match="triu: input tensor must have at least 2 dimensions"):
        ember.zeros(3).triu()


# -- against PyTorch ----------------------------------------------------------------------------
def test_shape_ops_match_torch():
    torch = pytest.importorskip("torch")
    a = data((2, 3, 4))
    e, t = ember.tensor(a), torch.tensor(a)

    def same(x, y):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
        assert str(x.dtype).split(".")[-1] == str(y.dtype).split(".")[-1]

    same(ember.cat([e, e.long()], -1), torch.cat([t, t.long()], -1))
    same(ember.cat([ember.zeros(0, dtype=ember.int64), e.int()]),
         torch.cat([torch.zeros(0, dtype=torch.long), t.int()]))
    same(ember.dstack([e[0], e[1]]), torch.dstack([t[0], t[1]]))
    same(ember.column_stack([e[0, 0], e[0].t()]), torch.column_stack([t[0, 0], t[0].t()]))
    same(e.roll((1, -2), (2, 0)), t.roll((1, -2), (2, 0)))
    same(e.repeat(2, 1, 1, 2), t.repeat(2, 1, 1, 2))
    same(e.transpose(0, 2).tril(-1), t.transpose(0, 2).tril(-1))
    same(e.repeat_interleave(ember.tensor([1, 0, 2]), 1),
         t.repeat_interleave(torch.tensor([1, 0, 2]), 1))
