"""View ops (``ember.ops.views``) against numpy: values, strides, storage sharing, writes through
views, contiguity, data_ptr identity and the version counter shared with the base."""
import numpy as np
import pytest

import ember
from ember.ops.views import slice_op
from helpers_ops import check, values

rng = np.random.default_rng(7)


def arange(*shape, dtype=np.float32):
    n = int(np.prod(shape)) if shape else 1
    return np.arange(n, dtype=dtype).reshape(shape)


def T(a):
    """A contiguous tensor holding a copy of ``a`` (from_numpy alone would share its memory)."""
    return ember.from_numpy(np.array(a, copy=True, order="C"))


def np_strides(a):
    return tuple(s // a.itemsize for s in a.strides)


def is_view_of(v, base):
    return v._storage is base._storage


def bases():
    """(label, tensor, values) for a (2, 3, 4) tensor stored contiguously, transposed (permuted
    back), and as a stepped slice of a larger tensor."""
    a = arange(2, 3, 4)
    out = [("contiguous", T(a), a)]
    out.append(("permuted", T(a.transpose(2, 0, 1)).permute(1, 2, 0), a))
    wide = np.zeros((2, 3, 9), np.float32)
    wide[..., 1::2] = a
    out.append(("stepped", slice_op(T(wide), 2, 1, None, 2), a))
    return out


def written_base(base_values, index_view, write):
    """The base's values after ``write`` (a function of the view's current values) is stored
    through a view whose elements are the base's flat ``index_view`` positions."""
    out = base_values.copy().reshape(-1)
    idx = np.asarray(index_view)
    new = write(out[idx])
    out[idx.reshape(-1)] = np.asarray(new).reshape(-1)
    return out.reshape(base_values.shape)


# -- view / reshape ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(6, 4), (24,), (-1,), (2, -1), (-1, 4), (2, 3, 2, 2),
                                   (1, 24, 1), (4, 1, 6), (2, 12)])
def test_view_contiguous(shape):
    a = arange(2, 3, 4)
    t = T(a)
    v = t.view(*shape)
    want = a.reshape(shape)
    check(v, want, "float32")
    assert is_view_of(v, t)
    assert v.stride() == np_strides(want)
    assert v.is_contiguous() and v.storage_offset() == 0
    check(t.view(shape), want, "float32")  # a tuple works as well as varargs
    check(t.view(list(shape)), want, "float32")


def test_view_non_contiguous_viewable():
    base = T(arange(4, 6))
    s = slice_op(base, 1, 0, 4, 1)  # (4, 4) with strides (6, 1)
    v = s.view(4, 2, 2)
    check(v, arange(4, 6)[:, :4].reshape(4, 2, 2), "float32")
    assert v.stride() == (6, 2, 1) and is_view_of(v, base)
    t = T(arange(2, 3, 4).transpose(1, 0, 2)).permute(1, 0, 2)  # dims 0, 1 swapped in memory
    v = t.view(2, 3, 2, 2)
    check(v, arange(2, 3, 4).reshape(2, 3, 2, 2), "float32")
    u = T(arange(3, 4)).t().unsqueeze(1)  # (4, 1, 3): a size-1 dim can go anywhere
    check(u.view(4, 3), arange(3, 4).T, "float32")
    check(u.view(4, 3, 1), arange(3, 4).T[:, :, None], "float32")


def test_view_errors():
    t = T(arange(2, 3, 4))
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's size "
                                           r"and stride .*Use \.reshape\(\.\.\.\) instead"):
        t.transpose(0, 1).view(-1)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.transpose(1, 2).view(2, 12)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        t.view(-1, -1)
    with pytest.raises(RuntimeError, match=r"shape '\[5, -1\]' is invalid for input of size 24"):
        t.view(5, -1)
    with pytest.raises(RuntimeError, match=r"shape '\[5, 5\]' is invalid for input of size 24"):
        t.view(5, 5)
    with pytest.raises(RuntimeError, match="invalid shape dimension -2"):
        t.view(-2, 12)


def test_view_0d_and_empty():
    s = T(np.float32(5.0))
    for shape in [(1,), (1, 1), (), (-1,)]:
        v = s.view(*shape)
        check(v, np.full(shape if shape != (-1,) else (1,), 5.0, np.float32), "float32")
        assert is_view_of(v, s)
    e = ember.zeros(0, 5)
    for shape, want in [((5, 0), (5, 0)), ((-1, 5), (0, 5)), ((0,), (0,)), ((2, 0, 5), (2, 0, 5))]:
        assert tuple(e.view(*shape).shape) == want
    for shape in [(-1, 0), (2, 0, -1)]:  # -1 could be any size
        with pytest.raises(RuntimeError):
            e.view(*shape)


def test_view_as():
    t = T(arange(2, 3, 4))
    v = t.view_as(ember.empty(4, 6))
    check(v, arange(4, 6), "float32")
    assert is_view_of(v, t)


def test_view_dtype():
    a = arange(2, 4)
    t = T(a)
    for d, nd in [(ember.int32, np.int32), (ember.int16, np.int16), (ember.uint8, np.uint8),
                  (ember.float64, np.float64), (ember.int64, np.int64)]:
        v = t.view(d)
        check(v, a.view(nd), d)
        assert is_view_of(v, t)
    # a stepped / offset tensor views into a smaller type element-wise along the last dim
    s = slice_op(T(arange(3, 4)), 0, 1, None, 1)
    check(s.view(ember.int16), arange(3, 4)[1:].view(np.int16), ember.int16)
    assert s.view(ember.int16).storage_offset() == 8
    with pytest.raises(RuntimeError, match="stride"):
        t.t().view(ember.float64)
    with pytest.raises(RuntimeError, match="divisible"):
        T(arange(2, 3)).view(ember.float64)
    with pytest.raises(RuntimeError):
        T(np.float32(1.0)).view(ember.float64)
    # same-size reinterpretation keeps the layout
    p = t.t().view(ember.int32)
    assert p.stride() == t.t().stride()
    check(p, a.view(np.int32).T, ember.int32)
    # writes through the dtype view reach the base's bytes
    t.view(ember.int32).bitwise_and_(0)
    check(t, np.zeros((2, 4), np.float32), "float32")


@pytest.mark.parametrize("label,t,a", bases(), ids=lambda x: x if isinstance(x, str) else "")
def test_reshape_copy_vs_view(label, t, a):
    for shape in [(6, 4), (24,), (2, 12), (4, -1), (2, 3, 2, 2)]:
        r = t.reshape(*shape)
        check(r, a.reshape(shape), "float32", msg=f"{label} {shape}")
        # which shapes fit each layout's strides (contiguous (12, 4, 1); permuted (3, 1, 6);
        # stepped (27, 9, 2)): merging dims needs stride[i] == size[i+1] * stride[i+1]
        viewable = label == "contiguous" or shape in ((6, 4), (2, 3, 2, 2))
        assert is_view_of(r, t) == viewable, (label, shape)
        check(t.reshape(shape), a.reshape(shape), "float32")
    assert is_view_of(ember.reshape(t, (2, 3, 4)), t)
    r = t.reshape(-1)
    r.add_(1)  # a copy leaves the base alone; a view writes through
    check(t, a + 1 if label == "contiguous" else a, "float32")
    check(t.reshape_as(ember.empty(4, 6)), values(t).reshape(4, 6), "float32")


# -- flatten / unflatten -------------------------------------------------------------------------
@pytest.mark.parametrize("start,end", [(0, -1), (1, -1), (0, 1), (-2, -1), (1, 1), (2, 2)])
def test_flatten(start, end):
    for label, t, a in bases():
        f = t.flatten(start, end)
        s, e = start % 3, end % 3
        want = a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1:])
        check(f, want, "float32", msg=label)
        check(ember.flatten(t, start_dim=start, end_dim=end), want, "float32")
        if label == "contiguous":
            assert is_view_of(f, t)


def test_flatten_edge_cases():
    check(T(np.float32(3)).flatten(), np.float32([3]), "float32")
    check(ember.zeros(2, 0, 3).flatten(1), np.zeros((2, 0)), "float32")
    with pytest.raises(RuntimeError, match="flatten\\(\\) has invalid args: start_dim cannot come "
                                           "after end_dim"):
        ember.zeros(2, 3, 4).flatten(2, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.zeros(2, 3).flatten(0, 2)


def test_unflatten():
    t = T(arange(2, 12))
    for dim, sizes, want in [(1, (3, 4), (2, 3, 4)), (-1, (2, -1), (2, 2, 6)),
                             (0, (1, 2), (1, 2, 12)), (1, [12], (2, 12)),
                             (1, (2, 2, 3), (2, 2, 2, 3))]:
        u = t.unflatten(dim, sizes)
        check(u, arange(2, 12).reshape(want), "float32")
        assert is_view_of(u, t)
    check(ember.unflatten(t.t(), 0, (3, 4)), arange(2, 12).T.reshape(3, 4, 2), "float32")
    with pytest.raises(RuntimeError, match=r"unflatten: Provided sizes \[5, 2\] don't multiply up "
                                           r"to the size of dim 1 \(12\)"):
        t.unflatten(1, (5, 2))


# -- permutations --------------------------------------------------------------------------------
@pytest.mark.parametrize("dims", [(0, 1, 2), (2, 0, 1), (1, 2, 0), (2, 1, 0), (-1, 0, 1),
                                  (0, -1, -2)])
def test_permute(dims):
    for label, t, a in bases():
        p = t.permute(*dims)
        want = np.transpose(a, dims)
        check(p, want, "float32", msg=label)
        check(t.permute(dims), want, "float32")
        check(ember.permute(t, dims), want, "float32")
        assert is_view_of(p, t)
        assert p.stride() == tuple(t.stride(d) for d in dims)


def test_permute_errors():
    t = ember.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match="duplicate dims are not allowed"):
        t.permute(0, 0, 1)
    with pytest.raises(RuntimeError, match="number of dimensions in the tensor input does not "
                                           "match the length of the desired ordering"):
        t.permute(0, 1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.permute(0, 1, 3)


@pytest.mark.parametrize("d0,d1", [(0, 1), (0, 2), (1, 2), (-1, 0), (1, 1), (-2, -1)])
def test_transpose_family(d0, d1):
    for label, t, a in bases():
        want = np.swapaxes(a, d0, d1)
        for fn in (t.transpose, t.swapaxes, t.swapdims):
            r = fn(d0, d1)
            check(r, want, "float32", msg=label)
            assert is_view_of(r, t)
        check(ember.transpose(t, d0, d1), want, "float32")
        check(ember.swapaxes(t, d0, d1), want, "float32")


def test_t_T_mT():
    m = T(arange(3, 4))
    check(m.t(), arange(3, 4).T, "float32")
    check(ember.t(m), arange(3, 4).T, "float32")
    assert m.t().stride() == (1, 4) and is_view_of(m.t(), m)
    v = T(arange(5))
    check(v.t(), arange(5), "float32")
    check(T(np.float32(2)).t(), np.float32(2), "float32")
    with pytest.raises(RuntimeError, match="t\\(\\) expects a tensor with <= 2 dimensions, but "
                                           "self is 3D"):
        ember.zeros(2, 3, 4).t()
    b = T(arange(2, 3, 4))
    check(b.T, arange(2, 3, 4).T, "float32")
    check(m.T, arange(3, 4).T, "float32")
    check(v.T, arange(5), "float32")
    check(b.mT, np.swapaxes(arange(2, 3, 4), -1, -2), "float32")
    check(m.mT, arange(3, 4).T, "float32")
    assert is_view_of(b.mT, b) and is_view_of(b.T, b)
    with pytest.raises(RuntimeError, match="mT is only supported on matrices or batches of "
                                           "matrices. Got 1-D tensor"):
        v.mT


@pytest.mark.parametrize("src,dst", [(0, 2), (2, 0), (-1, 0), (1, -1), ((0, 1), (2, 0)),
                                     ((0, 2), (1, 0)), ([0, 1, 2], [2, 1, 0]), ((), ())])
def test_movedim(src, dst):
    for label, t, a in bases():
        want = np.moveaxis(a, src, dst)
        r = t.movedim(src, dst)
        check(r, want, "float32", msg=label)
        check(t.moveaxis(src, dst), want, "float32")
        check(ember.movedim(t, src, dst), want, "float32")
        check(ember.moveaxis(t, src, dst), want, "float32")
        assert is_view_of(r, t)


def test_movedim_errors():
    t = ember.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match=r"movedim: repeated dim in `source` \(\[0, 0\]\)"):
        t.movedim((0, 0), (1, 2))
    with pytest.raises(RuntimeError, match=r"movedim: repeated dim in `destination`"):
        t.movedim((0, 1), (1, 1))
    with pytest.raises(RuntimeError, match="movedim: Invalid source or destination dims"):
        t.movedim((0,), (1, 2))
    with pytest.raises(IndexError):
        t.movedim(3, 0)


# -- expand / broadcast --------------------------------------------------------------------------
@pytest.mark.parametrize("src,sizes", [((3, 1), (3, 4)), ((1, 4), (5, 4)), ((3, 1), (2, 3, 4)),
                                       ((1,), (0,)), ((3, 1), (-1, 4)), ((2, 1, 1), (2, 3, 5)),
                                       ((), (2, 3)), ((4,), (2, 3, 4)), ((1, 1), (1, 1))])
def test_expand(src, sizes):
    a = rng.standard_normal(src).astype(np.float32)
    full = tuple(s if s != -1 else a.shape[i - (len(sizes) - a.ndim)] for i, s in enumerate(sizes))
    for label, t in [("contiguous", T(a))] + ([("transposed", T(a.T).t())] if a.ndim == 2 else []):
        e = t.expand(*sizes)
        want = np.broadcast_to(a, full)
        check(e, want, "float32", msg=label)
        assert is_view_of(e, t)
        # new and size-1 dims that grew have stride 0; kept dims keep theirs
        n_new = len(sizes) - a.ndim
        for i, s in enumerate(e.stride()):
            j = i - n_new
            if j < 0 or (a.shape[j] == 1 and full[i] != 1):
                assert s == 0, (label, e.stride())
            else:
                assert s == t.stride(j)
        check(t.expand(sizes), want, "float32")
        check(t.expand(list(sizes)), want, "float32")
        check(t.broadcast_to(full), want, "float32")
        check(ember.broadcast_to(t, full), want, "float32")
        check(t.expand_as(ember.empty(*full)), want, "float32")


def test_expand_errors():
    t = ember.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(5\) must match the "
                                           r"existing size \(3\) at non-singleton dimension 1.  "
                                           r"Target sizes: \[2, 5, 4\].  Tensor sizes: "
                                           r"\[2, 3, 4\]"):
        t.expand(2, 5, 4)
    with pytest.raises(RuntimeError, match=r"the number of sizes provided \(2\) must be greater "
                                           r"or equal to the number of dimensions in the tensor "
                                           r"\(3\)"):
        t.expand(3, 4)
    with pytest.raises(RuntimeError, match=r"the expanded size of the tensor \(-1\) isn't allowed "
                                           r"in a leading, non-existing dimension 0"):
        t.expand(-1, 2, 3, 4)
    with pytest.raises(RuntimeError, match="The expanded size of the tensor"):
        ember.broadcast_to(t, (2, 2, 4))
    with pytest.raises(RuntimeError):
        t.expand_as(ember.zeros(3, 4))


def test_broadcast_tensors():
    a, b, c = T(arange(3, 1)), T(arange(4)), T(np.float32(7))
    ra, rb, rc = ember.broadcast_tensors(a, b, c)
    want = np.broadcast_arrays(arange(3, 1), arange(4), np.float32(7))
    for r, w, src in zip((ra, rb, rc), want, (a, b, c)):
        check(r, w, "float32")
        assert is_view_of(r, src)
    with pytest.raises(RuntimeError, match="must match"):
        ember.broadcast_tensors(ember.zeros(3), ember.zeros(4))


# -- squeeze / unsqueeze -------------------------------------------------------------------------
def test_squeeze():
    a = arange(1, 3, 1, 4, 1)
    for label, t in [("contiguous", T(a)),
                     ("permuted", T(a.transpose(3, 1, 0, 2, 4)).permute(2, 1, 3, 0, 4))]:
        check(t.squeeze(), a.squeeze(), "float32", msg=label)
        for dim in [0, 1, 2, -1, -5, (0, 2), (0, 1, 4), [2, -1], ()]:
            want = a.squeeze(axis=tuple(d for d in (dim if isinstance(dim, (tuple, list))
                                                    else (dim,)) if a.shape[d] == 1))
            r = t.squeeze(dim)
            check(r, want, "float32", msg=f"{label} {dim}")
            check(ember.squeeze(t, dim), want, "float32")
            assert is_view_of(r, t)
    s = T(np.float32(1))
    check(s.squeeze(), np.float32(1), "float32")
    check(s.squeeze(0), np.float32(1), "float32")
    check(s.squeeze(-1), np.float32(1), "float32")
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.zeros(2, 3).squeeze(2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        ember.zeros(1, 3).squeeze((0, 0))


@pytest.mark.parametrize("dim", [0, 1, 2, 3, -1, -2, -4])
def test_unsqueeze(dim):
    for label, t, a in bases():
        u = t.unsqueeze(dim)
        want = np.expand_dims(a, dim)
        check(u, want, "float32", msg=label)
        check(ember.unsqueeze(t, dim), want, "float32")
        assert is_view_of(u, t)
        # PyTorch's stride for the new dim: size * stride of the dim it lands before (1 at end)
        d = dim % 4
        expected_stride = t.shape[d] * t.stride(d) if d < 3 else 1
        assert u.stride(d) == expected_stride
        assert u.stride()[:d] + u.stride()[d + 1:] == t.stride()
    e = ember.zeros(1, 4).expand(3, 4)
    assert e.unsqueeze(1).stride() == (0, 4, 1)
    check(T(np.float32(3)).unsqueeze(0), np.float32([3]), "float32")
    check(T(np.float32(3)).unsqueeze(-1), np.float32([3]), "float32")
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.zeros(2, 3).unsqueeze(3)


# -- slicing -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim,start,length", [(0, 0, 1), (1, 1, 2), (2, 0, 4), (2, 3, 1),
                                              (-1, -3, 2), (1, 3, 0), (-2, -3, 3), (2, 4, 0)])
def test_narrow(dim, start, length):
    for label, t, a in bases():
        r = t.narrow(dim, start, length)
        idx = [slice(None)] * 3
        s = start % a.shape[dim] if start < 0 else start
        idx[dim] = slice(s, s + length)
        check(r, a[tuple(idx)], "float32", msg=label)
        check(ember.narrow(t, dim, start, length), a[tuple(idx)], "float32")
        assert is_view_of(r, t)


def test_narrow_errors():
    t = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"start \(2\) \+ length \(2\) exceeds dimension size "
                                           r"\(3\)"):
        t.narrow(1, 2, 2)
    with pytest.raises(IndexError, match=r"start out of range \(expected to be in range of "
                                         r"\[-3, 3\], but got 4\)"):
        t.narrow(1, 4, 0)
    with pytest.raises(IndexError, match="start out of range"):
        t.narrow(1, -4, 1)
    with pytest.raises(RuntimeError, match="0-dim"):
        ember.tensor(1.0).narrow(0, 0, 1)


@pytest.mark.parametrize("dim,index", [(0, 0), (0, 1), (1, 2), (2, 3), (-1, -1), (-2, -3)])
def test_select(dim, index):
    for label, t, a in bases():
        r = t.select(dim, index)
        want = np.take(a, index, axis=dim)
        check(r, want, "float32", msg=label)
        check(ember.select(t, dim, index), want, "float32")
        assert is_view_of(r, t)
        assert r.storage_offset() == t.storage_offset() + (index % a.shape[dim]) * t.stride(dim)


def test_select_errors():
    t = ember.zeros(2, 3, 4)
    with pytest.raises(IndexError, match=r"select\(\): index 3 out of range for tensor of size "
                                         r"\[2, 3, 4\] at dimension 1"):
        t.select(1, 3)
    with pytest.raises(IndexError, match="out of range"):
        t.select(1, -4)
    with pytest.raises(IndexError, match="Dimension out of range"):
        t.select(3, 0)
    with pytest.raises(IndexError, match="0-dim"):
        ember.tensor(1.0).select(0, 0)


@pytest.mark.parametrize("dim,size,step", [(2, 2, 1), (2, 2, 2), (1, 2, 1), (1, 3, 1), (2, 4, 4),
                                           (-1, 3, 2), (0, 1, 1), (2, 1, 3)])
def test_unfold(dim, size, step):
    for label, t, a in bases():
        u = t.unfold(dim, size, step)
        win = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
        idx = [slice(None)] * 4
        idx[dim % 3] = slice(None, None, step)
        want = win[tuple(idx)]
        check(u, want, "float32", msg=label)
        assert is_view_of(u, t)


def test_unfold_0d_and_errors():
    s = T(np.float32(5))
    check(s.unfold(0, 1, 1), np.float32([5]), "float32")
    t = ember.zeros(2, 3)
    with pytest.raises(RuntimeError, match="maximum size for tensor at dimension 1 is 3 but size "
                                           "is 4"):
        t.unfold(1, 4, 1)
    with pytest.raises(RuntimeError, match="step is 0 but must be > 0"):
        t.unfold(1, 2, 0)


@pytest.mark.parametrize("offset,d1,d2", [(0, 0, 1), (1, 0, 1), (-1, 0, 1), (0, 1, 2), (2, 1, 2),
                                          (-2, 2, 1), (5, 1, 2), (-5, 1, 2), (1, 2, 0), (0, -1, -2),
                                          (3, 1, 2), (-1, 0, 2)])
def test_diagonal(offset, d1, d2):
    for label, t, a in bases():
        r = t.diagonal(offset, d1, d2)
        want = np.diagonal(a, offset, d1, d2)
        check(r, want, "float32", msg=label)
        check(ember.diagonal(t, offset=offset, dim1=d1, dim2=d2), want, "float32")
        assert is_view_of(r, t)


def test_diagonal_errors():
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 1, 1"):
        ember.zeros(2, 3, 4).diagonal(0, 1, 1)
    with pytest.raises((RuntimeError, IndexError)):
        ember.zeros(3).diagonal()


def test_as_strided():
    a = arange(24)
    t = T(a)
    for size, stride, off in [((3, 3), (1, 2), 0), ((2, 2), (4, 1), 5), ((4,), (6,), 1),
                              ((2, 3), (0, 1), 3), ((2,), (1,), 22), ((0, 5), (5, 1), 24)]:
        r = t.as_strided(size, stride, off)
        want = np.lib.stride_tricks.as_strided(a[off:], size, [s * 4 for s in stride]) \
            if 0 not in size else np.zeros(size, np.float32)
        check(r, want, "float32")
        assert r.stride() == stride and r.storage_offset() == off and is_view_of(r, t)
        check(ember.as_strided(t, size, stride, off), want, "float32")
    # the default offset is the tensor's own; strides count from the storage start
    v = slice_op(t, 0, 4, None, 1)
    check(v.as_strided((2, 2), (1, 1)), np.float32([[4, 5], [5, 6]]), "float32")
    with pytest.raises(RuntimeError, match=r"setStorage: sizes \[5, 5\], strides \[5, 1\], "
                                           r"storage offset 0, and itemsize 4 requiring a storage "
                                           r"size of 100 are out of bounds for storage of size 96"):
        t.as_strided((5, 5), (5, 1))
    with pytest.raises(RuntimeError, match="out of bounds"):
        t.as_strided((2,), (1,), 23)
    with pytest.raises(RuntimeError, match="negative strides"):
        t.as_strided((2,), (-1,), 5)
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        t.as_strided((2, 2), (1,))


def _scatter_ref(storage, view, target, src):
    """numpy reference of as_strided_scatter: ``view`` = (shape, stride, offset) of the input
    in the flat ``storage``; ``src`` written at the ``target`` positions of that storage."""
    out = storage.copy()
    size, stride, off = target
    for pos in np.ndindex(*size):
        out[off + sum(i * s for i, s in zip(pos, stride))] = src[pos]
    shape, vstride, voff = view
    return np.lib.stride_tricks.as_strided(out[voff:], shape, [s * out.itemsize
                                                               for s in vstride]).copy()


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "offset", "3d"])
@pytest.mark.parametrize("target", [((2, 2), (1, 2), None), ((2, 2), (1, 2), 3),
                                    ((3,), (5,), 0), ((2, 3), (3, 1), 2)])
def test_as_strided_scatter_matches_numpy(layout, target):
    storage = arange(40)
    base = T(storage)
    x = {"contiguous": base[:24].view(4, 6), "transposed": base[:24].view(6, 4).t(),
         "stepped": base[:36].view(3, 12)[:, 1::3], "offset": base[5:29].view(4, 6),
         "3d": base[:24].view(2, 3, 4).permute(2, 0, 1)}[layout]
    size, stride, off = target
    src = -T(arange(*size)) - 1
    r = ember.as_strided_scatter(x, src, size, stride, off) if off is not None else \
        x.as_strided_scatter(src, size, stride)
    off = x.storage_offset() if off is None else off
    want = _scatter_ref(storage, (x.shape, x.stride(), x.storage_offset()), (size, stride, off),
                        values(src))
    check(r, want, "float32")
    assert not is_view_of(r, x) and r.shape == x.shape
    check(x, values(x), "float32")  # input untouched


def test_as_strided_scatter_expanded_input_and_errors():
    # an expanded input is cloned contiguous first (PyTorch): positions count in the clone
    x = T(arange(4)).expand(3, 4)
    r = ember.as_strided_scatter(x, -T(arange(2, 2)) - 1, (2, 2), (1, 2), 1)
    want = np.tile(arange(4), (3, 1)).reshape(-1)
    want[[1, 2, 3, 4]] = [-1, -3, -2, -4]
    check(r, want.reshape(3, 4), "float32")
    t = T(arange(3, 4))
    with pytest.raises(RuntimeError, match=r"expected src to have a size equal to the slice of "
                                           r"self. src size = \[2, 3\], slice size = \[2, 2\]"):
        ember.as_strided_scatter(t, ember.ones(2, 3), (2, 2), (1, 2), 1)
    with pytest.raises(RuntimeError, match=r"setStorage: sizes \[2, 2\], strides \[1, 20\]"):
        ember.as_strided_scatter(t, ember.ones(2, 2), (2, 2), (1, 20), 1)
    with pytest.raises(RuntimeError, match="invalid storage offset -1"):
        ember.as_strided_scatter(t, ember.ones(2, 2), (2, 2), (1, 2), -1)
    with pytest.raises(TypeError, match="argument 'src' must be Tensor"):
        ember.as_strided_scatter(t, 1.0, (2, 2), (1, 2), 1)
    # src takes input's dtype, as copy_ would
    r = ember.as_strided_scatter(t, ember.ones(1, dtype=ember.int64), (1,), (1,), 0)
    assert r.dtype == ember.float32 and r[0, 0].item() == 1


def test_as_strided_scatter_gradients():
    from ember.autograd import gradcheck, gradgradcheck
    src = ember.randn(2, 2, dtype=ember.float64, requires_grad=True)
    for x in (ember.randn(3, 4, dtype=ember.float64),
              ember.randn(4, 3, dtype=ember.float64).t(),
              ember.randn(20, dtype=ember.float64)[4:16].view(3, 4)):
        x = x.detach().requires_grad_()

        def fn(a, b):
            return ember.as_strided_scatter(a, b, (2, 2), (1, 2), 1)
        assert gradcheck(fn, (x, src)) and gradgradcheck(fn, (x, src))
    y = ember.as_strided_scatter(x * 1, src, (2, 2), (1, 2), 1)
    assert type(y.grad_fn).__name__ == "AsStridedScatterBackward0"


def test_as_strided_scatter_matches_torch():
    torch = pytest.importorskip("torch")
    a = arange(24).reshape(4, 6)
    for make in (lambda m, t: t, lambda m, t: t.t(), lambda m, t: t[:, 1::2],
                 lambda m, t: m.flatten(t)[3:19].reshape(4, 4)):
        got = ember.as_strided_scatter(make(ember, T(a)), T(-arange(3, 2)), (3, 2), (2, 5), 1)
        want = torch.as_strided_scatter(make(torch, torch.tensor(a)), torch.tensor(-arange(3, 2)),
                                        (3, 2), (2, 5), 1)
        np.testing.assert_array_equal(values(got), want.numpy())
    # src's gradient (PyTorch 2.13's gradient for self keeps the overwritten positions instead
    # of the others, so self's is checked by gradcheck above)
    g = arange(4, 6) ** 2
    src_e = T(arange(3, 2)).requires_grad_()
    ember.as_strided_scatter(T(a), src_e, (3, 2), (2, 5), 1).backward(T(g))
    src_t = torch.tensor(arange(3, 2), requires_grad=True)
    torch.as_strided_scatter(torch.tensor(a), src_t, (3, 2), (2, 5), 1).backward(torch.tensor(g))
    np.testing.assert_array_equal(values(src_e.grad), src_t.grad.numpy())


# -- split family --------------------------------------------------------------------------------
def _check_pieces(pieces, want, base, msg=""):
    assert len(pieces) == len(want), msg
    for p, w in zip(pieces, want):
        check(p, w, "float32", msg=msg)
        assert is_view_of(p, base), msg


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_split(dim):
    for label, t, a in bases():
        n = a.shape[dim]
        for size in range(1, n + 2):
            want = np.split(a, list(range(size, n, size)), axis=dim)
            _check_pieces(t.split(size, dim), want, t, f"split({size}) {label}")
            _check_pieces(ember.split(t, size, dim=dim), want, t)
        for sections in ([n], [1, n - 1], [0, n], [n, 0], [1] * n):
            want = np.split(a, np.cumsum(sections)[:-1], axis=dim)
            _check_pieces(t.split(sections, dim), want, t, f"split({sections}) {label}")
            _check_pieces(t.split(tuple(sections), dim), want, t)


def test_split_errors_and_empty():
    t = ember.zeros(2, 4)
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly "
                                           r"to 4 \(input tensor's size at dimension 1\), but "
                                           r"got split_sizes=\[1, 2\]"):
        t.split([1, 2], 1)
    with pytest.raises(RuntimeError, match="split expects split_size be non-negative, but got "
                                           "split_size=-1"):
        t.split(-1, 1)
    with pytest.raises(RuntimeError, match="split_size can only be 0 if dimension size is 0"):
        t.split(0, 1)
    e = ember.zeros(0, 5)
    assert [tuple(p.shape) for p in e.split(2)] == [(0, 5)]
    assert [tuple(p.shape) for p in e.split(0)] == [(0, 5)]
    assert [tuple(p.shape) for p in e.split(2, 1)] == [(0, 2), (0, 2), (0, 1)]


@pytest.mark.parametrize("chunks", [1, 2, 3, 4, 5, 7])
def test_chunk(chunks):
    for label, t, a in bases():
        for dim in (0, 1, 2, -1):
            n = a.shape[dim]
            step = -(-n // chunks)
            want = np.split(a, list(range(step, n, step)), axis=dim)
            _check_pieces(t.chunk(chunks, dim), want, t, f"chunk({chunks}, {dim}) {label}")
            _check_pieces(ember.chunk(t, chunks, dim=dim), want, t)
    x = T(arange(13))
    assert [p.numel() for p in x.chunk(6)] == [3, 3, 3, 3, 1]  # PyTorch may return fewer chunks
    e = ember.zeros(0, 5)
    assert [tuple(p.shape) for p in e.chunk(3)] == [(0, 5)] * 3
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0, got: 0"):
        x.chunk(0)


@pytest.mark.parametrize("arg", [1, 2, 3, 5, [1, 3], [3, 1, 7], [-1], [0], [2, 2], (1,), [-3, -1],
                                 [10]])
def test_tensor_split(arg):
    for label, t, a in bases():
        for dim in (0, 1, 2, -1):
            want = np.array_split(a, arg, axis=dim) if isinstance(arg, int) else \
                np.split(a, list(arg), axis=dim)
            _check_pieces(t.tensor_split(arg, dim), want, t, f"{arg} {dim} {label}")
            _check_pieces(ember.tensor_split(t, arg, dim=dim), want, t)
    idx = ember.tensor([1, 3])
    pieces = T(arange(5)).tensor_split(idx)
    for p, w in zip(pieces, np.split(arange(5), [1, 3])):
        check(p, w, "float32")
    assert len(T(arange(5)).tensor_split(ember.tensor(2))) == 2
    with pytest.raises(RuntimeError, match="number of sections must be larger than 0, got 0"):
        T(arange(5)).tensor_split(0)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_unbind(dim):
    for label, t, a in bases():
        pieces = t.unbind(dim)
        assert isinstance(pieces, tuple)
        _check_pieces(pieces, [np.take(a, i, axis=dim) for i in range(a.shape[dim])], t, label)
        _check_pieces(ember.unbind(t, dim), [np.take(a, i, axis=dim) for i in range(a.shape[dim])],
                      t)
    assert ember.zeros(0, 3).unbind() == ()
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        ember.tensor(1.0).unbind()
    # iteration unbinds dim 0
    rows = list(T(arange(3, 2)))
    assert [values(r).tolist() for r in rows] == arange(3, 2).tolist()


# -- complex views -------------------------------------------------------------------------------
def test_real_imag_views():
    c = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(np.complex64)
    t = T(c)
    for fn, get in [(lambda x: x.real, np.real), (lambda x: x.imag, np.imag)]:
        for label, x, v in [("contiguous", t, c), ("transposed", t.t(), c.T),
                            ("sliced", slice_op(t, 1, 1, None, 2), c[:, 1::2])]:
            r = fn(x)
            check(r, get(v), "float32", msg=label)
            assert is_view_of(r, t)
    t.imag.mul_(-1)
    check(t, np.conj(c), "complex64")
    t.real.mul_(0)
    check(t, 1j * np.conj(c).imag, "complex64")
    r = ember.ones(3)
    assert r.real is r
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex "
                                           "dtypes"):
        r.imag


# -- writes through views reach the base ---------------------------------------------------------
def _view_cases():
    """(name, ember view fn, numpy fn on an index array) pairs; the numpy side may copy."""
    return [
        ("view", lambda t: t.view(6, 4), lambda i: i.reshape(6, 4)),
        ("reshape", lambda t: t.reshape(4, 6), lambda i: i.reshape(4, 6)),
        ("flatten", lambda t: t.flatten(), lambda i: i.reshape(-1)),
        ("unflatten", lambda t: t.unflatten(2, (2, 2)), lambda i: i.reshape(2, 3, 2, 2)),
        ("permute", lambda t: t.permute(2, 0, 1), lambda i: i.transpose(2, 0, 1)),
        ("transpose", lambda t: t.transpose(0, 2), lambda i: np.swapaxes(i, 0, 2)),
        ("mT", lambda t: t.mT, lambda i: np.swapaxes(i, -1, -2)),
        ("movedim", lambda t: t.movedim(0, -1), lambda i: np.moveaxis(i, 0, -1)),
        ("squeeze", lambda t: t.narrow(1, 1, 1).squeeze(1), lambda i: i[:, 1]),
        ("unsqueeze", lambda t: t.unsqueeze(1), lambda i: i[:, None]),
        ("narrow", lambda t: t.narrow(2, 1, 2), lambda i: i[:, :, 1:3]),
        ("select", lambda t: t.select(1, 2), lambda i: i[:, 2]),
        ("slice_step", lambda t: slice_op(t, 2, 0, None, 3), lambda i: i[:, :, ::3]),
        ("unfold", lambda t: t.unfold(2, 2, 2), lambda i: i.reshape(2, 3, 2, 2)),
        ("diagonal", lambda t: t.diagonal(1, 1, 2), lambda i: np.diagonal(i, 1, 1, 2)),
        ("as_strided", lambda t: t.as_strided((2, 2), (12, 5), t.storage_offset() + 1),
         None),
        ("split", lambda t: t.split(2, 2)[1], lambda i: i[:, :, 2:4]),
        ("chunk", lambda t: t.chunk(3, 1)[2], lambda i: i[:, 2:3]),
        ("tensor_split", lambda t: t.tensor_split([1], 2)[1], lambda i: i[:, :, 1:]),
        ("unbind", lambda t: t.unbind(0)[1], lambda i: i[1]),
        ("chain", lambda t: t.permute(1, 2, 0).narrow(0, 1, 2).select(2, 1).t(),
         lambda i: i.transpose(1, 2, 0)[1:3, :, 1].T),
    ]


@pytest.mark.parametrize("case", _view_cases(), ids=lambda c: c[0])
def test_writes_through_views(case):
    name, fn, np_fn = case
    a = arange(2, 3, 4)
    t = T(a)
    idx = np.arange(24).reshape(2, 3, 4)
    if np_fn is None:  # as_strided on a contiguous base: positions from its size/stride
        positions = np.lib.stride_tricks.as_strided(idx.reshape(-1)[1:], (2, 2), (96, 40))
    else:
        positions = np_fn(idx)
    v = fn(t)
    assert is_view_of(v, t), name
    check(v, a.reshape(-1)[positions], "float32", msg=name)
    v0 = t._version
    v.add_(100)
    check(t, written_base(a, positions, lambda x: x + 100), "float32", msg=name + " add_")
    assert t._version == v._version == v0 + 1
    src = rng.standard_normal(tuple(v.shape)).astype(np.float32)
    before = values(t)
    v.copy_(T(src))
    check(t, written_base(before, positions, lambda x: src), "float32", msg=name + " copy_")
    assert t._version == v0 + 2
    v.mul_(ember.zeros(tuple(v.shape)[-1:]))  # a broadcast operand
    check(t, written_base(before, positions, lambda x: np.zeros_like(x)), "float32",
          msg=name + " mul_")


def test_writes_through_views_of_views_of_noncontiguous():
    wide = np.zeros((4, 10), np.float32)
    base = T(wide)
    v = slice_op(base, 1, 1, None, 3).t()  # (3, 4): columns 1, 4, 7 of every row
    v.select(0, 1).add_(5)
    want = wide.copy()
    want[:, 4] = 5
    check(base, want, "float32")
    v.diagonal().sub_(1)
    for i in range(3):
        want[i, 1 + 3 * i] -= 1
    check(base, want, "float32")


# -- contiguity, strides, offsets, identity ------------------------------------------------------
def test_is_contiguous_and_contiguous():
    t = T(arange(2, 3, 4))
    cases = [
        (t, True), (t.transpose(0, 1), False), (t.narrow(1, 0, 1), False),
        (t.narrow(0, 1, 1), True),
        (t.narrow(2, 0, 2), False), (slice_op(t, 2, None, None, 2), False), (t.select(0, 1), True),
        (t.select(2, 0), False), (t.unsqueeze(1), True), (t.unsqueeze(3), True),
        (t.narrow(1, 1, 1).expand(2, 1, 4), False), (t.narrow(1, 1, 1).expand(2, 3, 4), False),
        (t.narrow(0, 1, 1).expand(1, 3, 4), True), (t.select(1, 0).unsqueeze(1), False),
        (T(arange(4, 1)).t(), True), (T(np.float32(1)), True), (t.view(-1), True),
        (t.flatten(), True), (t.permute(0, 2, 1).permute(0, 2, 1), True),
    ]
    for i, (x, want) in enumerate(cases):
        assert x.is_contiguous() is want, i
        c = x.contiguous()
        if want:
            assert c is x
        else:
            assert c._storage is not x._storage
            assert c.is_contiguous()
            check(c, values(x), "float32")
            strides, acc = [], 1
            for s in reversed(tuple(c.shape)):
                strides.append(acc)
                acc *= s
            assert c.stride() == tuple(reversed(strides))


def test_stride_and_storage_offset():
    t = T(arange(2, 3, 4))
    assert t.stride() == (12, 4, 1) and t.storage_offset() == 0
    assert t.stride(0) == 12 and t.stride(-1) == 1 and t.stride(-3) == 12
    with pytest.raises(IndexError):
        t.stride(3)
    v = slice_op(slice_op(t, 1, 1, None, 1), 2, 1, None, 2)
    assert v.stride() == (12, 4, 2) and v.storage_offset() == 5
    assert t.select(0, 1).storage_offset() == 12
    assert t.unbind(2)[3].storage_offset() == 3
    assert t.diagonal(1, 1, 2).storage_offset() == 1
    assert t.diagonal(-1, 1, 2).storage_offset() == 4
    assert t.split(2, 2)[1].storage_offset() == 2
    assert t.as_strided((2,), (3,), 7).storage_offset() == 7
    np.testing.assert_array_equal(values(v), arange(2, 3, 4)[:, 1:, 1::2])


def test_data_ptr_identity():
    t = T(arange(2, 3, 4))
    isz = 4
    assert t.view(6, 4).data_ptr() == t.data_ptr()
    assert t.permute(2, 1, 0).data_ptr() == t.data_ptr()
    assert t.select(0, 1).data_ptr() == t.data_ptr() + 12 * isz
    assert t.narrow(2, 1, 2).data_ptr() == t.data_ptr() + 1 * isz
    assert t.unsqueeze(0).expand(3, 2, 3, 4).data_ptr() == t.data_ptr()
    assert t.view(ember.int32).data_ptr() == t.data_ptr()
    assert t.clone().data_ptr() != t.data_ptr()
    assert t.contiguous().data_ptr() == t.data_ptr()
    assert t.transpose(0, 1).contiguous().data_ptr() != t.data_ptr()
    assert T(arange(3)).data_ptr() != T(arange(3)).data_ptr()
    c = T(np.complex64([1 + 2j, 3 + 4j]))
    assert c.real.data_ptr() == c.data_ptr() and c.imag.data_ptr() == c.data_ptr() + 4


def test_version_counter_shared_with_views():
    t = T(arange(3, 4))
    views = [t.view(12), t.t(), t.select(0, 1), t.narrow(1, 1, 2), t.unsqueeze(0),
             t.split(2, 1)[0], t.diagonal(), t.expand(2, 3, 4)]
    other = T(arange(3, 4))
    v0, o0 = t._version, other._version
    for k, v in enumerate(views[:-1]):
        v.add_(1)
        assert t._version == v0 + k + 1
        assert all(w._version == t._version for w in views)
    t.mul_(2)
    assert all(w._version == t._version for w in views)
    assert other._version == o0
    c = t.clone()
    assert c._version == 0 or c._storage is not t._storage
    c.add_(1)
    assert t._version == v0 + len(views)  # 7 view writes + the base's own


# -- random chains of views ----------------------------------------------------------------------
def _random_step(t, a, r):
    """One random view op applied to both an ember tensor and its numpy model."""
    nd = a.ndim
    choice = r.integers(0, 10)
    if choice == 0 and nd >= 2:
        p = tuple(r.permutation(nd))
        return t.permute(*p), np.transpose(a, p)
    if choice == 1 and nd >= 1 and a.shape[-1] >= 2:
        d = int(r.integers(0, nd))
        n = a.shape[d]
        start = int(r.integers(0, n))
        step = int(r.integers(1, 3))
        idx = [slice(None)] * nd
        idx[d] = slice(start, None, step)
        return slice_op(t, d, start, None, step), a[tuple(idx)]
    if choice == 2 and nd >= 1 and nd < 5:
        d = int(r.integers(0, nd + 1))
        return t.unsqueeze(d), np.expand_dims(a, d)
    if choice == 3 and 1 in a.shape:
        d = a.shape.index(1)
        return t.squeeze(d), a.squeeze(d)
    if choice == 4 and nd >= 2:
        d0, d1 = (int(x) for x in r.choice(nd, 2, replace=False))
        return t.transpose(d0, d1), np.swapaxes(a, d0, d1)
    if choice == 5 and nd >= 2 and a.shape[0] > 0:
        d = int(r.integers(0, nd))
        i = int(r.integers(0, a.shape[d])) if a.shape[d] else None
        if i is not None and nd > 1:
            return t.select(d, i), np.take(a, i, axis=d)
    if choice == 6 and 1 in a.shape and nd < 5:
        d = a.shape.index(1)
        shape = list(a.shape)
        shape[d] = 3
        return t.expand(*shape), np.broadcast_to(a, shape)
    if choice == 7 and nd >= 2:
        return t.diagonal(0, 0, 1), np.diagonal(a, 0, 0, 1)
    if choice == 8 and nd >= 1:
        return t.reshape(-1), a.reshape(-1)
    if choice == 9 and nd >= 1 and a.shape[-1] >= 2:
        return t.unfold(nd - 1, 2, 1), np.lib.stride_tricks.sliding_window_view(a, 2, axis=nd - 1)
    return t, a


def test_random_view_chains():
    r = np.random.default_rng(2024)
    for trial in range(150):
        a = np.arange(120, dtype=np.float64).reshape(2, 3, 4, 5)
        t = T(a)
        for step in range(6):
            t, a = _random_step(t, a, r)
            np.testing.assert_array_equal(values(t), a, err_msg=f"trial {trial} step {step}")
            assert tuple(t.shape) == a.shape
