"""Indexing (t[...] and t[...] = v) and the gather/scatter family against numpy (and PyTorch
where it is installed)."""
import random

import numpy as np
import pytest

import ember
from ember.ops.views import slice_op

rng = np.random.default_rng(0)
B = rng.integers(-5, 5, (2, 3, 4))


def T(a, dtype=None):
    return ember.tensor(a, dtype=dtype)


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
    got = t.numpy()
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == (expected.dtype if dtype is None else dtype), (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got, expected)


def as_index(index, lib=ember):
    """numpy arrays inside an index -> tensors of ``lib``."""
    if isinstance(index, tuple):
        return tuple(as_index(i, lib) for i in index)
    return lib.tensor(index) if isinstance(index, np.ndarray) else index


# -- getitem ------------------------------------------------------------------------------------
# indices on which numpy and PyTorch agree
INDICES = [
    0, -1, (1, 2), (1, -1, 3), (slice(None), 1), (slice(1, None, 2),), (slice(-3, -1),),
    (slice(10, 20),), (slice(None, None, 3), 1), (Ellipsis,), (Ellipsis, 0), (None, 1),
    (0, None, slice(None), None), (None, Ellipsis, None), (1, Ellipsis, None),
    ([0, 1],), ([1, 0], [2, 2]), (slice(None), [0, 2, 2]), ([[0, 1], [1, 0]],), ([-1, -2],),
    (slice(None), [[0], [2]], [1, 3]), ([1, 0], slice(None), [3, 1]), (Ellipsis, [0, 3]),
    (slice(None), None, [2]), (np.array([[0, 1]]), slice(None), np.array([[1], [2]])),
    (B[:, 0, 0] > 0,), (slice(None), B[0] > 0), (B > 0,), (Ellipsis, B[0, 0] > 0),
    (B[:, 0, 0] >= 0, slice(1, 3), [0, 3]), ([],), (slice(None), []),
    (np.array([], dtype=np.int64), slice(None)), (np.array([0, 1], dtype=np.int32),),
    (slice(None), np.array(2)), ((0, 1),), (range(2), 0, [1, 2]),
]


@pytest.mark.parametrize("index", INDICES, ids=str)
def test_getitem_matches_numpy(index):
    for t, n in variants(B):
        check(t[as_index(index)], n[index])


def test_ints_select_before_advanced_placement():
    # PyTorch applies ints as selects, so the tensor indices left are adjacent (numpy would
    # count the int as an advanced index and move the result dims first)
    a = rng.integers(0, 9, (2, 3, 4, 5))
    check(T(a)[:, 1, :, [0, 1]], a[:, 1][:, :, [0, 1]])
    check(T(a)[[0, 1], :, 2], a[:, :, 2][[0, 1]])
    check(T(a)[0, :, [1, 2]], a[0][:, [1, 2]])
    check(T(a)[T(1), [0, 2]], a[1][[0, 2]])


def test_bool_scalars_and_0d_tensors():
    t = T(B)
    check(t[True], B[None])
    check(t[False], B[None][:0])
    check(t[True, 0], B[None, 0])
    check(t[T(True)], B[None])
    check(t[:, False], B[:, None][:, :0])
    s = T(5)
    check(s[...], np.array(5))
    check(s[None], np.array([5]))
    check(s[True], np.array([5]))
    check(s[False], np.zeros(0, np.int64))
    check(t[T(1)], B[1])
    check(t[np.int64(1), T(2, ember.int32)], B[1, 2])
    f = T(B.astype(np.float32))
    check(f[f > 0], B[B > 0].astype(np.float32))
    check(T(B > 0)[T(B > 1)], (B > 0)[B > 1])
    check(t[T([1, 0], ember.uint8)], B[[True, False]])  # uint8 tensors are masks, as in torch


def test_empty_and_0d_tensors():
    e = ember.zeros(0, 3)
    check(e[:, 1], np.zeros(0, np.float32))
    check(e[[]], np.zeros((0, 3), np.float32))
    check(e[e > 0], np.zeros(0, np.float32))
    check(T(B)[1:1], B[1:1])
    check(T(B)[5:], B[5:])
    check(T(B)[None, -1, 2:-2:3, -1:None:2], B[None, -1, 2:-2:3, -1:None:2])


def test_basic_indexing_returns_views_that_write_through():
    base = ember.zeros(3, 4)
    expected = np.zeros((3, 4), np.float32)
    for index in [(slice(1, None), slice(None, None, 2)), (0,), (Ellipsis, 1), (None, 2),
                  (slice(None),), (Ellipsis,), (1, slice(1, 3))]:
        v = base[index]
        assert v.untyped_storage() is base.untyped_storage()
        assert v is not base
        before = base._version
        v.add_(1)
        expected[np.index_exp[index]] += 1
        assert base._version > before
        check(base, expected)
    v = base[1:, ::2]
    assert (v.stride(), v.storage_offset()) == ((4, 2), 4)
    v[0, 1] = 7
    expected[1, 2] = 7
    check(base, expected)


def test_advanced_indexing_copies():
    base = T(B)
    for index in ([0, 1], (base > 0), (slice(None), [1])):
        r = base[index]
        assert r.untyped_storage() is not base.untyped_storage()
        assert not np.shares_memory(r.numpy(), base.numpy())
        r.fill_(100)
    check(base, B)


def test_getitem_errors():
    t = T(B)
    with pytest.raises(IndexError, match="^index 5 is out of bounds for dimension 0 with size 2$"):
        t[5]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 1 with size 3"):
        t[0, -4]
    with pytest.raises(IndexError, match="^too many indices for tensor of dimension 3$"):
        t[0, 0, 0, 0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        ember.zeros(2, 2)[T([[True, False], [True, True]]), 0]
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        T(5)[0]
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 2"):
        t[[0, 7]]
    with pytest.raises(IndexError, match="index -9 is out of bounds for dimension 1 with size 3"):
        t[:, [-9]]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or "
                                         "bool tensors"):
        t[T([0.0])]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        t[T([0], ember.int16)]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        t[::-1]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        t[::0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., 0, ...]
    with pytest.raises(IndexError, match="only integers, slices"):
        t[1.5]
    with pytest.raises(IndexError, match=r"The shape of the mask \[3\] at index 0 does not "
                                         r"match the shape of the indexed tensor \[2, 3, 4\] at "
                                         r"index 0"):
        t[T([True, False, True])]
    with pytest.raises(IndexError, match=r"The shape of the mask \[3, 3\] at index 1 does not "
                                         r"match the shape of the indexed tensor \[2, 3, 4\] at "
                                         r"index 2"):
        t[0:2, T(np.ones((3, 3), bool))]
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be "
                                         r"broadcast together with shapes \[1, 2\], \[3\]"):
        t[T([[0, 1]]), T([0, 1, 2])]


# -- setitem ------------------------------------------------------------------------------------
SET_CASES = [
    ((1,), 5), ((slice(None), 0), [1, 2, 3, 4]), (([0, 1], [1, 1]), 7), ((Ellipsis, -1), -2),
    ((slice(None), [0, 2], slice(1, 3)), np.arange(8).reshape(2, 2, 2)),
    (([1, 0], slice(None), [3, 0]), np.array([1, 2, 3])),
    ((slice(None), 0, [0, 1]), np.array([9, 8])), ((B > 0,), 0),
    ((slice(None), B[0] > 0), np.array([[1], [2]])),
    ((None, 0, 1), np.array([[[1, 2, 3, 4]]])), ((0, 0), np.array([[1, 2, 3, 4]])),
    (([0], 0), np.array([[[1, 2, 3, 4]]])), ((True,), 3), ((False,), 4), ((slice(5, None),), 1),
    ((slice(None, None, 2), slice(None), 0), np.array([[1, 2, 3]])),
]


@pytest.mark.parametrize("index,value", SET_CASES, ids=str)
@pytest.mark.parametrize("as_tensor", [False, True])
def test_setitem_matches_numpy(index, value, as_tensor):
    for layout, (src, _) in enumerate(variants(B)[:3]):
        t = src.clone() if layout == 0 else src  # the permuted and sliced views write through
        n = B.copy()
        v = T(value) if as_tensor else value
        before = t._version
        t[as_index(index)] = v
        nv = np.asarray(value)
        try:
            n[index] = nv
        except ValueError:  # numpy does not drop the value's leading 1s as PyTorch does
            n[index] = nv.reshape(nv.shape[-n[index].ndim:] if n[index].ndim else ())
        check(t, n)
        assert t._version > before


def test_setitem_casts_and_broadcasts():
    t = ember.zeros(2, 3, dtype=ember.int64)
    t[0] = 1.7
    t[1, [0, 2]] = T([2, -3])
    t[:, 1] = T(True)  # basic indexing copies (and casts), as PyTorch does
    check(t, np.array([[1, 1, 1], [2, 1, -3]]))
    # advanced indexing is index_put_: a tensor value of another dtype is refused (PyTorch)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match, got Long for the destination and "
                                           "Float for the source"):
        t[1, [0, 2]] = T([2.9, -3.5])
    f = ember.zeros(2, 3)
    f[f == 0] = 2.5
    f[:, None, [0]] = T([[[-1.0]]])
    check(f, np.array([[-1, 2.5, 2.5], [-1, 2.5, 2.5]], np.float32))
    base = ember.zeros(4)
    view = base[1:]
    view[[0, 2]] = 5.0
    check(base, np.array([0, 5, 0, 5], np.float32))


def test_setitem_errors():
    t = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3, 3\] "
                                           r"cannot be broadcast to indexing result of shape "
                                           r"\[2, 3\]"):
        t[[0, 1]] = ember.ones(3, 3)
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2, 1, 3\]"):
        t[[0, 1]] = ember.ones(2, 1, 3)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match "
                                           r"the existing size \(5\)"):
        t[0] = ember.ones(5)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        t[:, [3]] = 1.0
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0] = 1.0


def test_index_put():
    a = rng.standard_normal((3, 4)).astype(np.float32)
    t = T(a)
    before = t._version
    ones = ember.ones(4)
    assert t.index_put_((T([0, 0, 2]),), ones, accumulate=True) is t
    assert t._version > before
    expected = a.copy()
    np.add.at(expected, [0, 0, 2], 1)
    np.testing.assert_allclose(t.numpy(), expected)
    r = ember.index_put(T(a), (T([1, 2]), T([0, 3])), T(9.0))
    expected = a.copy()
    expected[[1, 2], [0, 3]] = 9
    check(r, expected)
    check(T(a).index_put((T(a > 0),), T(0.0)), np.where(a > 0, 0, a))
    check(T(a).index_put_((T(1),), T([1.0, 2, 3, 4]), True), a + np.array([[0] * 4, [1, 2, 3, 4],
                                                                            [0] * 4], np.float32))
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match, got Float for the destination and "
                                           "Long for the source."):
        T(a).index_put_((T([0]),), T(1))
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 2 \(got 3\)"):
        T(a).index_put_((T([0]),) * 3, T(1.0))
    with pytest.raises(TypeError, match="expected Tensor as element 1"):
        T(a).index_put_((T([0]), None), T(1.0))


def test_index_put_is_the_functional_op():
    """``index_put`` is an op of its own (the twin autograd records ``index_put_`` through):
    one IndexPutBackward0 node straight on the input, as PyTorch records it."""
    from ember.dispatch.dispatcher import get_op
    assert get_op("index_put_").functional is get_op("index_put")
    a = rng.standard_normal((3, 4))
    for t, n in variants(a):
        idx = (T([2, 0, 2]), T([1, 3, 1]))
        r = ember.index_put(t, idx, T([5.0, 6.0, 7.0], dtype=t.dtype), accumulate=True)
        want = n.copy()
        np.add.at(want, ([2, 0, 2], [1, 3, 1]), [5.0, 6.0, 7.0])
        check(r, want)
        check(t, n)  # the input is untouched
    # 0-d integer indices select first, as in t[indices]
    check(T(a).index_put((T(1), T([0, 2])), T(9.0, ember.float64)), np.where(
        (np.arange(3)[:, None] == 1) & np.isin(np.arange(4), [0, 2]), 9.0, a))
    x = T(a).requires_grad_()
    v = T([1.0, 2.0], ember.float64).requires_grad_()
    y = x.index_put((T([0, 2]), T([1, 1])), v)
    assert type(y.grad_fn).__name__ == "IndexPutBackward0"
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"
    from ember.autograd import gradcheck, gradgradcheck
    x64 = T(a).requires_grad_()
    v64 = T([1.0, 2.0], ember.float64).requires_grad_()

    def put(s, w):
        return ember.index_put(s, (T([0, 2]), T([1, 1])), w)

    def put_acc(s, w):
        return ember.index_put(s, (T([0, 0]), T([1, 1])), w, accumulate=True)
    assert gradcheck(put, (x64, v64)) and gradgradcheck(put, (x64, v64))
    assert gradcheck(put_acc, (x64, v64)) and gradgradcheck(put_acc, (x64, v64))


def test_index_put_matches_torch():
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((3, 4))
    g = rng.standard_normal((3, 4))
    for accumulate in (False, True):
        xe, ve = T(a).requires_grad_(), T([1.0, 2.0], ember.float64).requires_grad_()
        xt = torch.tensor(a, requires_grad=True)
        vt = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
        ye = ember.index_put(xe, (T([0, 0]), T([1, 1])), ve, accumulate)
        yt = torch.index_put(xt, (torch.tensor([0, 0]), torch.tensor([1, 1])), vt, accumulate)
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy())
        ye.backward(T(g))
        yt.backward(torch.tensor(g))
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy())
        np.testing.assert_allclose(ve.grad.numpy(), vt.grad.numpy())
        assert type(ye.grad_fn).__name__ == type(yt.grad_fn).__name__


# -- gather / scatter ---------------------------------------------------------------------------
A = rng.standard_normal((3, 4)).astype(np.float32)
IDX = np.array([[0, 3], [1, 1], [2, 0]])


def scatter_ref(a, dim, idx, src, op=None):
    out = a.copy()
    for pos in np.ndindex(*idx.shape):
        target = list(pos)
        target[dim] = idx[pos]
        value = src[pos] if np.ndim(src) else src
        if op == "add":
            out[tuple(target)] += value
        elif op == "multiply":
            out[tuple(target)] *= value
        else:
            out[tuple(target)] = value
    return out


def test_gather_in_every_layout():
    for t, n in variants(A):
        check(t.gather(1, T(IDX)), np.take_along_axis(n, IDX, 1))
        g = np.array([[0, 2], [1, 0]])
        check(ember.gather(t, 0, T(g)), np.take_along_axis(n[:, :2], g, 0))
        check(t.gather(-1, T(IDX[:2])), np.take_along_axis(n[:2], IDX[:2], 1))
        check(t.gather(1, T(IDX, ember.int32)), np.take_along_axis(n, IDX, 1))
    check(T(5.0).gather(0, T([0, 0])), np.array([5, 5], np.float32))
    check(T(A).gather(1, ember.zeros(3, 0, dtype=ember.int64)), np.zeros((3, 0), np.float32))
    out = ember.empty(0)
    T(A).gather(1, T(IDX), out=out)
    check(out, np.take_along_axis(A, IDX, 1))


@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
def test_scatter_family(reduce):
    src = rng.standard_normal((3, 2)).astype(np.float32)
    for t, n in variants(A):
        out = t.scatter(1, T(IDX), T(src), reduce=reduce)
        np.testing.assert_allclose(out.numpy(), scatter_ref(n, 1, IDX, src, reduce), rtol=1e-6)
        out = t.scatter(1, T(IDX), 2.5, reduce=reduce)
        np.testing.assert_allclose(out.numpy(), scatter_ref(n, 1, IDX, 2.5, reduce), rtol=1e-6)
    big = rng.standard_normal((4, 5)).astype(np.float32)  # src larger than the index
    small = np.array([[0, 2], [1, 1]])
    check(T(A).scatter(0, T(small), T(big)), scatter_ref(A, 0, small, big))
    check(ember.scatter(T(A), 1, T(IDX), value=9.0), scatter_ref(A, 1, IDX, 9.0))
    dup = np.array([[0, 0], [1, 1], [3, 3]])
    np.testing.assert_allclose(T(A).scatter_add(1, T(dup), T(src)).numpy(),
                               scatter_ref(A, 1, dup, src, "add"), rtol=1e-6)
    ints = rng.integers(0, 5, (3, 4))
    check(ember.scatter_add(T(ints), 0, T([[2, 0, 2, 1]]), T([[1, 2, 3, 4]])),
          scatter_ref(ints, 0, np.array([[2, 0, 2, 1]]), np.array([[1, 2, 3, 4]]), "add"))


def test_scatter_inplace_and_errors():
    t = ember.zeros(2, 3)
    v = t._version
    assert t.scatter_(1, T([[2], [0]]), ember.ones(2, 1)) is t
    t.scatter_add_(1, T([[2], [2]]), ember.ones(2, 1))
    t.scatter_(0, T([[1]]), 5.0)
    check(t, np.array([[0, 0, 2], [5, 0, 1]], np.float32))
    assert t._version >= v + 3
    a = T(A)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 4"):
        a.gather(1, T([[5]]))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 1"):
        a.scatter(1, T([[-1]]), 1.0)
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0"):
        a.gather(0, T([[-1]]))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        a.gather(1, T([[0.0]]))
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of "
                                           "dimensions as input tensor"):
        a.gather(1, T([0]))
    with pytest.raises(RuntimeError, match=r"Size does not match at dimension 0 expected index "
                                           r"\[4, 1\] to be no larger than self \[3, 4\] apart "
                                           r"from dimension 1"):
        a.gather(1, ember.zeros(4, 1, dtype=ember.int64))
    with pytest.raises(RuntimeError, match=r"Expected index \[1, 2\] to be no larger than self "
                                           r"\[3, 4\] apart from dimension 1 and to be no larger "
                                           r"size than src \[1, 1\]"):
        a.scatter(1, T([[0, 1]]), ember.ones(1, 1))
    with pytest.raises(RuntimeError, match="scatter\\(\\): Expected self.dtype to be equal to "
                                           "src.dtype"):
        a.scatter_add(1, T([[0]]), ember.ones(1, 1, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply."):
        a.scatter(1, T([[0]]), ember.ones(1, 1), reduce="mean")


# -- index_select / index_add / index_copy ------------------------------------------------------
def test_index_select_add_copy():
    idx = np.array([2, 0, 2])
    for t, n in variants(A):
        check(t.index_select(0, T(idx)), n[idx])
        check(ember.index_select(t, -1, T(idx, ember.int32)), n[:, idx])
        check(t.index_select(1, T(1)), n[:, [1]])
        src = np.ones((3, 4), np.float32)
        expected = n.copy()
        np.add.at(expected, idx, 2 * src)
        np.testing.assert_allclose(t.index_add(0, T(idx), T(src), alpha=2).numpy(), expected)
        expected = n.copy()
        expected[:, [3, 1]] = -1
        check(t.index_copy(1, T([3, 1]), ember.full((3, 2), -1.0)), expected)
    ints = np.arange(3)
    check(T(ints).index_add(0, T([0, 0]), T([1, 1]), alpha=2), np.array([4, 1, 2]))
    check(T(5.0).index_select(0, T([0])), np.array(5.0, np.float32))
    check(T(1.0).index_add(0, T([0]), T(2.0)), np.array(3.0, np.float32))
    check(T(A).index_select(0, T([], ember.int64)), np.zeros((0, 4), np.float32))
    t = T(A)
    v = t._version
    t.index_add_(1, T([0]), ember.ones(3, 1))
    t.index_copy_(0, T([2]), ember.zeros(1, 4))
    assert t._version >= v + 2
    expected = A.copy()
    expected[:, 0] += 1
    expected[2] = 0
    check(t, expected)


def test_index_select_add_copy_errors():
    a = T(A)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        a.index_select(0, T([5]))
    with pytest.raises(IndexError, match="index_select\\(\\): Index is supposed to be a vector"):
        a.index_select(0, T([[0]]))
    with pytest.raises(RuntimeError, match="Expected dtype int32 or int64 for index"):
        a.index_select(0, T([0.0]))
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value, got 2"):
        T(5.0).index_select(0, T([0, 0]))
    with pytest.raises(RuntimeError, match=r"source tensor shape must match self tensor shape, "
                                           r"excluding the specified dimension. Got self.shape = "
                                           r"\[3, 4\] source.shape = \[1, 3\]"):
        a.index_add(0, T([0]), ember.ones(1, 3))
    with pytest.raises(RuntimeError, match=r"index_add_\(\): Number of indices \(2\) should be "
                                           r"equal to source.size\(dim\): \(1\), for dim: 0"):
        a.index_add(0, T([0, 1]), ember.ones(1, 4))
    with pytest.raises(RuntimeError, match=r"index_add_\(\): self \(Float\) and source \(Long\) "
                                           r"must have the same scalar type"):
        a.index_add(0, T([0]), ember.ones(1, 4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0"):
        a.index_add(0, T([3]), ember.ones(1, 4))
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0"):
        a.index_copy(0, T([7]), ember.ones(1, 4))
    with pytest.raises(IndexError, match="index -1 is out of bounds for dimension 0"):
        a.index_copy(0, T([-1]), ember.ones(1, 4))
    with pytest.raises(IndexError, match="index -1 is out of bounds for dimension 0"):
        a.index_select(0, T([-1]))


# -- masks, nonzero, take, one_hot --------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_masked_fill_and_select(dtype):
    a = A > 0 if dtype == "bool" else (A * 3).astype(dtype)
    m = rng.random((3, 4)) > 0.5
    for t, n in variants(a):
        check(t.masked_fill(T(m), 1), np.where(m, np.array(1).astype(n.dtype), n))
        check(ember.masked_fill(t, T(m[0]), T(0)), np.where(m[0], np.array(0, n.dtype), n))
        check(t.masked_select(T(m)), n[m])
        check(ember.masked_select(t, T(m[:, :1])), np.broadcast_to(n, (3, 4))[
            np.broadcast_to(m[:, :1], (3, 4))])
    check(T(np.arange(3)).masked_fill(T(True), 2.7), np.array([2, 2, 2]))
    check(T(A).masked_fill(T(np.ones((2, 3, 4), bool)), 0.0), np.zeros((2, 3, 4), np.float32))
    check(T(A).masked_select(T(np.ones((2, 3, 4), bool))), np.broadcast_to(A, (2, 3, 4)).ravel())


def test_masked_fill_inplace_and_errors():
    t = T(A)
    v = t._version
    m = T(A > 0)
    assert t.masked_fill_(m, -1.0) is t
    assert t._version > v
    check(t, np.where(A > 0, -1, A).astype(np.float32))
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got "
                                           "mask with dtype"):
        t.masked_fill(T(A), 1.0)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor, but got "
                                           r"tensor with 1 dimension\(s\)."):
        t.masked_fill(m, ember.ones(1))
    with pytest.raises(RuntimeError, match=r"output with shape \[3, 4\] doesn't match the "
                                           r"broadcast shape \[2, 3, 4\]"):
        t.masked_fill_(T(np.ones((2, 3, 4), bool)), 1.0)
    with pytest.raises(RuntimeError, match="must match the size of tensor"):
        t.masked_fill(ember.ones(5, dtype=ember.bool), 1.0)
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        t.masked_select(T(A))


@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4)])
def test_nonzero_argwhere_where(shape):
    a = rng.integers(0, 2, shape) * rng.integers(1, 5, shape)
    for t, n in variants(a):
        expected = np.argwhere(n)
        check(t.nonzero(), expected)
        check(ember.argwhere(t), expected)
        for got, exp in zip(ember.nonzero(t, as_tuple=True), np.nonzero(np.atleast_1d(n))):
            check(got, exp)
        assert len(ember.nonzero(t, as_tuple=True)) == max(len(shape), 1)
        for got, exp in zip(ember.where(t > 0), np.nonzero(np.atleast_1d(n > 0))):
            check(got, exp)
    check(T(3.0).nonzero(as_tuple=True)[0], np.array([0]))
    check(T(0.0).nonzero(as_tuple=True)[0], np.zeros(0, np.int64))


def test_take():
    idx = np.array([[0, 11], [5, -1]])
    for t, n in variants(A):
        check(t.take(T(idx)), np.take(n, idx))
    check(ember.take(T(5.0), T([0, 0])), np.array([5, 5], np.float32))
    check(ember.take(T(A), T([], ember.int64)), np.zeros(0, np.float32))
    with pytest.raises(IndexError, match="out of range: tried to access index 12 on a tensor of "
                                         "12 elements."):
        T(A).take(T([12]))
    with pytest.raises(RuntimeError, match="take\\(\\): Expected a long tensor for index, but "
                                           "got Int"):
        T(A).take(T([1], ember.int32))


def test_one_hot():
    labels = np.array([[0, 2], [1, 3]])
    for t, n in variants(labels):
        out = ember.one_hot(t, 5)
        check(out, np.eye(5, dtype=np.int64)[n])
    check(ember.one_hot(T([0, 2, 1])), np.eye(3, dtype=np.int64)[[0, 2, 1]])
    check(ember.one_hot(T(2), 4), np.eye(4, dtype=np.int64)[2])
    check(ember.one_hot(T([], ember.int64), 3), np.zeros((0, 3), np.int64))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        ember.one_hot(T([3]), 2)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        ember.one_hot(T([-1]), 3)
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty "
                                           "tensor."):
        ember.one_hot(T([], ember.int64))
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type "
                                           "LongTensor."):
        ember.one_hot(T([1], ember.int32), 4)


def test_kernel_results_own_their_memory():
    a = T(A)
    m = T(A > 0)
    for out in (a[[0, 1]], a[m], a.gather(1, T(IDX)), a.scatter(1, T(IDX), 1.0),
                a.index_select(0, T([0])), a.index_add(0, T([0]), ember.ones(1, 4)),
                a.masked_fill(m, 0.0), a.masked_select(m), a.take(T([0])),
                a.index_put((T([0]),), T(1.0))):
        assert out.untyped_storage() is not a.untyped_storage()
        assert not np.shares_memory(out.numpy(), a.numpy())


# -- against PyTorch ----------------------------------------------------------------------------
def _random_index(shape, r):
    out, d, seen_ellipsis = [], 0, False
    while d < len(shape) and r.random() < 0.85:
        s, kind = shape[d], r.random()
        if kind < 0.2:
            out.append(r.randint(-s, s - 1))
            d += 1
        elif kind < 0.45:
            out.append(slice(r.choice([None, r.randint(-s - 1, s + 1)]),
                             r.choice([None, r.randint(-s - 1, s + 1)]),
                             r.choice([None, 1, 2, 3])))
            d += 1
        elif kind < 0.55:
            out.append(None)
        elif kind < 0.62 and not seen_ellipsis:
            out.append(Ellipsis)
            seen_ellipsis = True
            d = len(shape) - r.randint(0, len(shape) - d)
        elif kind < 0.85:
            out.append(rng.integers(-s, s, r.choice([(2,), (1,), (2, 1), ()])))
            d += 1
        else:
            k = r.randint(1, min(2, len(shape) - d))
            out.append(rng.random(shape[d:d + k]) > 0.5)
            d += k
    return tuple(out)


def test_random_indices_match_torch():
    torch = pytest.importorskip("torch")
    r = random.Random(0)
    for _ in range(300):
        shape = tuple(int(s) for s in rng.integers(1, 5, rng.integers(1, 5)))
        a = rng.integers(-9, 9, shape)
        index = _random_index(shape, r)
        try:
            expected = torch.tensor(a)[as_index(index, torch)]
        except IndexError:
            with pytest.raises(IndexError):
                T(a)[as_index(index)]
            continue
        got = T(a)[as_index(index)]
        np.testing.assert_array_equal(got.numpy(), expected.numpy(), err_msg=str(index))
        assert tuple(got.shape) == tuple(expected.shape), index
        t, e = torch.tensor(a), T(a)
        value = rng.integers(100, 200, tuple(expected.shape)[r.randint(0, expected.ndim):])
        t[as_index(index, torch)] = torch.tensor(value)
        e[as_index(index)] = T(value)
        written = torch.arange(a.size).reshape(shape)[as_index(index, torch)]
        if written.unique().numel() == written.numel():  # duplicates: any write may win
            np.testing.assert_array_equal(e.numpy(), t.numpy(), err_msg=str(index))


def test_tricky_cases_match_torch():
    torch = pytest.importorskip("torch")
    a = np.arange(120).reshape(2, 3, 4, 5)
    cases = [(slice(None), [0, 1], slice(None), [1, 2]), (None, [0, 1], None, [1, 2]),
             ([[0], [1]], slice(None), [[1, 2]], 0), (Ellipsis, [1, 0], [2, 3]),
             (slice(None), a[0, :, :, 0] > 40), (a[:, 0, 0, 0] > 0, 1, [0, 3]),
             (0, slice(None), [True, False, True, True])]
    for index in cases:
        expected = torch.tensor(a)[as_index(index, torch)].numpy()
        check(T(a)[as_index(index)], expected)
        t, e = torch.tensor(a), T(a)
        t[as_index(index, torch)] = -1
        e[as_index(index)] = -1
        check(e, t.numpy())
    for ta, tt in ((T(a)[:, 1, :, [0, 1]], torch.tensor(a)[:, 1, :, [0, 1]]),
                   (T(a).index_put((T([0, 0]), T([1, 1])), T(1), accumulate=True),
                    torch.tensor(a).index_put((torch.tensor([0, 0]), torch.tensor([1, 1])),
                                              torch.tensor(1), accumulate=True))):
        check(ta, tt.numpy())


def test_whole_dim_slices_in_a_tuple_record_no_node():
    """x[:, 3, :] is one select with one SelectBackward0, as in PyTorch (a slice of a whole dim
    inside a tuple index is skipped); a lone x[:] still slices. Gradients equal torch's."""
    torch = pytest.importorskip("torch")
    cases = [(slice(None), 1), (slice(0, 100), 1), (slice(None, None, 1), 1, slice(None)),
             (slice(None), slice(1, 3)), slice(None), (Ellipsis, 1), (None, slice(None)),
             (slice(0, 2), 0), (slice(None), [0, 2])]
    for idx in cases:
        w = ember.randn(4, 5, 6, requires_grad=True)
        tw = torch.tensor(w.detach().numpy(), requires_grad=True)
        y, ty = w[idx], tw[idx]
        chain, tchain = [], []
        for fn, out in ((y.grad_fn, chain), (ty.grad_fn, tchain)):
            while fn is not None and "AccumulateGrad" not in fn.name():
                out.append(fn.name())
                fn = fn.next_functions[0][0]
        assert chain == tchain, idx
        (y * 2).sum().backward()
        (ty * 2).sum().backward()
        np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())


@pytest.mark.parametrize("start", ["zeros", "values"])
def test_index_add_sums_rows_in_index_order(start):
    """index_add along dim 0 equals np.add.at bit for bit (each row's sources added in index
    order), whether the destination is fresh zeros (a sparse product's scatter) or not."""
    rng = np.random.default_rng(5)
    for shape, n in [((300, 16), 2000), ((40, 3, 4), 500), ((100,), 700)]:
        idx = rng.integers(0, shape[0], n)
        src = rng.standard_normal((n,) + shape[1:]).astype(np.float32)
        dst = np.zeros(shape, np.float32) if start == "zeros" else \
            rng.standard_normal(shape).astype(np.float32)
        ref = dst.copy()
        np.add.at(ref, idx, src)
        got = ember.tensor(dst).index_add(0, ember.tensor(idx), ember.tensor(src))
        np.testing.assert_array_equal(got.numpy(), ref)


# -- issue #36: a one-element value through a single mask is cast, as torch's masked_fill_ path
@pytest.mark.parametrize("case", ["half-inf", "float-long", "float-double1", "mask-then-int",
                                  "long-index-refused", "mask-vector-refused"])
def test_mask_setitem_casts_a_one_element_value_like_torch(case):
    torch = pytest.importorskip("torch")

    def run(m):
        inf = float("inf")
        if case == "half-inf":
            a = m.zeros(2, 3, dtype=m.float16)
            a[a.new_ones(2, 3).bool().logical_and(m.tensor([[True, False, True]] * 2))] = \
                m.tensor(-inf)
        elif case == "float-long":
            a = m.zeros(4)
            a[m.tensor([True, False, True, False])] = m.tensor(3)
        elif case == "float-double1":
            a = m.zeros(2, 3)
            a[m.tensor([True, False])] = m.tensor([5.0], dtype=m.float64)
        elif case == "mask-then-int":
            a = m.zeros(2, 3)
            a[m.tensor([True, False]), 1] = m.tensor(5)
        elif case == "long-index-refused":  # an integer index: index_put_, no cast
            a = m.zeros(4)
            a[m.tensor([0, 2])] = m.tensor(2)
        else:  # more than one element: no cast either
            a = m.zeros(2, 3)
            a[m.tensor([True, False])] = m.tensor([1, 2, 3])
        return a

    try:
        want = run(torch)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match="dtypes match"):
            run(ember)
        assert "dtypes match" in str(e)
        return
    got = run(ember)
    assert got.dtype.name == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


_PLAIN_INDICES = [0, -1, (0,), (slice(None),), (Ellipsis,), (Ellipsis, 1),
                  (1, Ellipsis, slice(1, 3)), (slice(None), -2), (slice(0, 10),),
                  (slice(1, None, 2), 2, slice(None), slice(-3, -1)), (0, 0, 0, 0),
                  (Ellipsis, slice(None), slice(None)), (slice(5, 1),), (slice(-100, 100, 3),),
                  (slice(None), slice(None), slice(None), slice(None))]


@pytest.mark.parametrize("index", _PLAIN_INDICES, ids=repr)
def test_plain_indexing_makes_torchs_views_and_nodes(index):
    """ints, slices and an Ellipsis take _plain_view's short path: the same views (shape,
    strides, offset), the same backward nodes and gradients as PyTorch."""
    torch = pytest.importorskip("torch")
    a = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5)
    x, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    e, w = x[index], t[index]
    assert tuple(e.shape) == tuple(w.shape)
    assert tuple(e.stride()) == tuple(w.stride()) and e.storage_offset() == w.storage_offset()
    if type(w.grad_fn).__name__ == "AliasBackward0":
        # an index that changes nothing (x[...], x[:, :]): PyTorch's alias op, ember's view
        assert type(e.grad_fn).__name__ == "ViewBackward0"
    else:
        assert type(e.grad_fn).__name__ == type(w.grad_fn).__name__
    e.sum().backward()
    w.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())
    assert x.detach()[index] is not x


@pytest.mark.parametrize("index, error", [
    (5, IndexError), ((0, 0, 0, 0, 0), IndexError), ((Ellipsis, Ellipsis), IndexError),
    ((0, 7), IndexError), ((slice(None, None, 0),), ValueError),
    ((slice(None, None, -1),), ValueError)], ids=repr)
def test_plain_indexing_errors_are_the_general_paths(index, error):
    x = ember.zeros(2, 3, 4, 5)
    with pytest.raises(error):
        x[index]
