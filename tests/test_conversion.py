"""Conversions (``ember.ops.conversion``): ``to`` (dtype / device / other / copy), the dtype
shortcuts (``float()``, ``long()``…), ``clone``, ``copy_`` with broadcasting and casting, and
complex -> real casting, against numpy's ``astype``."""
import warnings

import ml_dtypes
import numpy as np
import pytest

import ember
from ember.ops.views import slice_op
from helpers_ops import check, values

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
       "float64", "complex64", "complex128"]
NP = {n: (np.dtype(ml_dtypes.bfloat16) if n == "bfloat16" else np.dtype(n)) for n in ALL}
COMPLEX_TO_REAL = "Casting complex values to real discards the imaginary part"


def sample(name):
    """Values every dtype converts to exactly and without undefined behaviour: small integers
    (non-negative where an unsigned target could meet them), halves for floats."""
    ints = np.array([0, 1, 2, 5, 7, 3, 0, 4])
    if name == "bool":
        return np.array([0, 1, 1, 0, 1, 0, 0, 1], bool)
    if name in ("float16", "bfloat16", "float32", "float64"):
        return (ints + np.array([0, .5, .25, .75, 0, .5, 0, .5])).astype(NP[name])
    if name in ("complex64", "complex128"):
        return (ints + 1j * np.array([0, 1, -2, 0, 3, 0, -1, 2])).astype(NP[name])
    return ints.astype(NP[name])


def expected_cast(a, to):
    """What casting ``a`` to dtype name ``to`` gives in PyTorch: complex -> real keeps the real
    part; anything -> bool is ``!= 0``; floats -> ints truncate toward zero."""
    if to == "bool":
        return a != 0
    if a.dtype.kind == "c" and to not in ("complex64", "complex128"):
        a = a.real
    if a.dtype == NP["bfloat16"]:
        a = a.astype(np.float32)
    return a.astype(NP[to])


def vals(t):
    v = values(t)
    return v.astype(np.float32) if v.dtype == NP["bfloat16"] else v


def same(t, want, dtype):
    assert t.dtype is getattr(ember, dtype), (t.dtype, dtype)
    w = np.asarray(want)
    w = w.astype(np.float32) if w.dtype == NP["bfloat16"] else w
    np.testing.assert_array_equal(vals(t), w)


# -- to(dtype) -----------------------------------------------------------------------------------
@pytest.mark.parametrize("src", ALL)
def test_to_dtype(src):
    a = sample(src)
    for layout, t in [("contiguous", ember.from_numpy(a.copy())),
                      ("stepped", slice_op(ember.from_numpy(np.repeat(a, 2)), 0, 0, None, 2)),
                      ("2-d transposed", ember.from_numpy(a.reshape(2, 4).T.copy()).t())]:
        av = a.reshape(2, 4) if layout.startswith("2-d") else a
        for to in ALL:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                r = t.to(getattr(ember, to))
            if to == src:
                assert r is t
                continue
            assert r._storage is not t._storage
            # preserve_format (PyTorch's default): a dense layout (the transposed one) keeps
            # its strides, a layout with gaps (the stepped one) becomes contiguous
            if layout == "2-d transposed":
                assert r.stride() == t.stride()
            else:
                assert r.is_contiguous()
            same(r, expected_cast(av, to), to)
            assert tuple(r.shape) == av.shape, layout


@pytest.mark.parametrize("name,dtype", [("float", "float32"), ("double", "float64"),
                                        ("half", "float16"), ("bfloat16", "bfloat16"),
                                        ("int", "int32"), ("long", "int64"), ("short", "int16"),
                                        ("char", "int8"), ("byte", "uint8"), ("bool", "bool"),
                                        ("cfloat", "complex64"), ("cdouble", "complex128")])
def test_dtype_shortcuts(name, dtype):
    for src in ["float32", "int64", "bool", "float64", "uint8"]:
        t = ember.from_numpy(sample(src))
        r = getattr(t, name)()
        if src == dtype:
            assert r is t
        else:
            same(r, expected_cast(sample(src), dtype), dtype)
    # a bound method call with memory_format is accepted (and ignored) like PyTorch's
    assert getattr(ember.from_numpy(sample(dtype)), name)(memory_format=None).dtype is \
        getattr(ember, dtype)


def test_float_to_int_truncates_and_specials_are_quiet():
    f = ember.tensor([1.7, -1.7, 2.5, -2.5, 0.2, -0.9])
    same(f.long(), np.int64([1, -1, 2, -2, 0, 0]), "int64")
    same(f.int(), np.int32([1, -1, 2, -2, 0, 0]), "int32")
    same(f.to(ember.int8), np.int8([1, -1, 2, -2, 0, 0]), "int8")
    same(f.bool(), [True] * 6, "bool")
    same(ember.tensor([0.0, -0.0, float("nan"), float("inf")]).bool(), [False, False, True, True],
         "bool")
    same(ember.tensor([70000.0, -70000.0, 1e-8]).half(),
         np.float16([np.inf, -np.inf, 1e-8]), "float16")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # nan / inf / out-of-range -> int: platform values, but no numpy warning
        r = ember.tensor([float("nan"), float("inf"), 1e20]).long()
        assert r.dtype is ember.int64 and tuple(r.shape) == (3,)
        ember.tensor([1e300], dtype=ember.float64).to(ember.float32)
        x = ember.zeros(2, dtype=ember.int32)
        x.copy_(ember.tensor([float("nan"), 1e12]))


def test_to_returns_self_when_nothing_changes():
    t = ember.tensor([1.0, 2.0])
    assert t.to(ember.float32) is t
    assert t.to("cpu") is t
    assert t.to(ember.device("cpu")) is t
    assert t.to(t) is t
    assert t.to(ember.empty(3)) is t
    assert t.to("cpu", ember.float32) is t
    assert t.to(dtype=ember.float32, device="cpu") is t
    assert t.to(device="cpu") is t
    assert t.to() is t
    assert t.cpu() is t
    assert t.type(ember.float32) is t
    assert t.type_as(ember.empty(1)) is t
    assert t.contiguous() is t


def test_to_copy():
    t = ember.tensor([1.0, 2.0, 3.0])
    for c in (t.to(copy=True), t.to(ember.float32, copy=True), t.to("cpu", copy=True),
              t.to(t, copy=True), t.to(ember.float32, False, True),
              t.to("cpu", ember.float32, False, True)):
        assert c is not t and c._storage is not t._storage
        same(c, [1.0, 2.0, 3.0], "float32")
        c.add_(1)
        same(t, [1.0, 2.0, 3.0], "float32")
    # copy=True with a dtype change is one copy, in the new dtype
    d = t.to(ember.float64, copy=True)
    same(d, [1.0, 2.0, 3.0], "float64")


def test_to_other_and_arguments():
    t = ember.tensor([1.5, -2.5])
    r = t.to(ember.tensor([1], dtype=ember.int32))
    same(r, np.int32([1, -2]), "int32")
    same(t.to("cpu", ember.float64), [1.5, -2.5], "float64")
    same(t.to(ember.device("cpu"), dtype=ember.int64), [1, -2], "int64")
    same(t.to(dtype=ember.bool), [True, True], "bool")
    same(t.to(ember.float16, non_blocking=True), [1.5, -2.5], "float16")
    same(t.type(ember.int16), [1, -2], "int16")
    assert t.type() == "ember.FloatTensor"  # PyTorch's legacy type string
    same(ember.tensor([1.5, 2.5]).type_as(ember.ones(1, dtype=ember.uint8)), np.uint8([1, 2]),
         "uint8")
    with pytest.raises(TypeError, match=r"to\(\) received an invalid combination of arguments "
                       r"- got \(colour=str, \), but expected one of"):
        t.to(colour="red")
    with pytest.raises(TypeError, match="invalid combination"):
        t.to([1])
    with pytest.raises((TypeError, RuntimeError, ValueError)):
        t.to("nonexistent_device")


def test_complex_to_real_casting():
    c = ember.tensor([1 + 2j, -3.5 - 4j, 0 + 1j])
    with pytest.warns(UserWarning, match=COMPLEX_TO_REAL):
        r = c.to(ember.float32)
    same(r, np.float32([1, -3.5, 0]), "float32")
    with pytest.warns(UserWarning, match=COMPLEX_TO_REAL):
        same(c.float(), np.float32([1, -3.5, 0]), "float32")
    with pytest.warns(UserWarning, match=COMPLEX_TO_REAL):
        same(c.long(), np.int64([1, -3, 0]), "int64")
    with pytest.warns(UserWarning, match=COMPLEX_TO_REAL):
        same(c.double(), np.float64([1, -3.5, 0]), "float64")
    # bool tests != 0 over both parts, without a warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same(c.bool(), [True, True, True], "bool")
        same(ember.tensor([0j, 1j, 1 + 0j, 0j]).bool(), [False, True, True, False], "bool")
        b = ember.zeros(3, dtype=ember.bool)
        b.copy_(ember.tensor([0j, 2j, 0j]))
        same(b, [False, True, False], "bool")
        same(c.to(ember.complex128), np.complex128([1 + 2j, -3.5 - 4j, 1j]), "complex128")
        same(ember.tensor([1.5, 2.0]).cfloat(), np.complex64([1.5, 2]), "complex64")
    dst = ember.zeros(3)
    with pytest.warns(UserWarning, match=COMPLEX_TO_REAL):
        dst.copy_(c)
    same(dst, np.float32([1, -3.5, 0]), "float32")
    # the views of the parts are the warning-free way
    same(c.real.clone(), np.float32([1, -3.5, 0]), "float32")
    same(c.imag.clone(), np.float32([2, -4, 1]), "float32")


# -- clone ---------------------------------------------------------------------------------------
def test_clone_independence():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    base = ember.from_numpy(a.copy())
    for label, t, v in [("contiguous", base, a), ("transposed", base.t(), a.T),
                        ("stepped", slice_op(base, 1, 1, None, 2), a[:, 1::2]),
                        ("expanded", base.select(0, 1).expand(2, 4), np.broadcast_to(a[1], (2, 4))),
                        ("0-d", base.select(0, 0).select(0, 2), a[0, 2]),
                        ("empty", slice_op(base, 0, 0, 0, 1), a[:0])]:
        c = t.clone()
        assert c._storage is not base._storage, label
        assert c.dtype is t.dtype and tuple(c.shape) == tuple(t.shape)
        # preserve_format, as PyTorch: a transposed (dense) source keeps its layout
        assert c.stride() == t.stride() if label == "transposed" else c.is_contiguous(), label
        check(c, v, "float64", msg=label)
        before = values(base)
        c.add_(100)  # the clone's writes stay in the clone ...
        check(base, before, "float64", msg=label)
        if label != "expanded":
            t.add_(1)  # ... and the source's writes stay in the source
            check(c, np.asarray(v) + 100, "float64", msg=label)
            t.sub_(1)
    for dtype in (ember.int32, ember.bool, ember.complex64, ember.float16, ember.bfloat16):
        s = ember.ones(2, 3, dtype=dtype)
        c = s.clone()
        assert c.dtype is dtype and c._storage is not s._storage
    # the clone has its own version counter
    v = base._version
    base.clone().mul_(2)
    assert base._version == v


# -- copy_ ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dst_dtype", ["float32", "float64", "int64", "int32", "bool", "uint8",
                                       "float16", "complex64"])
@pytest.mark.parametrize("src_dtype", ["float32", "int64", "bool", "float64", "int8", "complex64"])
def test_copy_dtypes(src_dtype, dst_dtype):
    src = sample(src_dtype)
    dst = ember.zeros(8, dtype=getattr(ember, dst_dtype))
    v = dst._version
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        r = dst.copy_(ember.from_numpy(src.copy()))
    assert r is dst and dst._version == v + 1
    same(dst, expected_cast(src, dst_dtype), dst_dtype)


def test_copy_broadcasting_and_layouts():
    dst = ember.zeros(3, 4)
    dst.copy_(ember.tensor([1.0, 2.0, 3.0, 4.0]))
    check(dst, np.tile(np.float32([1, 2, 3, 4]), (3, 1)), "float32")
    dst.copy_(ember.tensor([[10], [20], [30]], dtype=ember.int64))
    check(dst, np.repeat(np.float32([[10], [20], [30]]), 4, 1), "float32")
    dst.copy_(ember.tensor(7.5))
    check(dst, np.full((3, 4), 7.5, np.float32), "float32")
    dst.copy_(ember.tensor([[1.0, 2.0]]).t().expand(2, 4).narrow(0, 0, 1).expand(3, 4))
    check(dst, np.ones((3, 4), np.float32), "float32")
    # into a non-contiguous destination: only its elements change
    base = ember.zeros(4, 6, dtype=ember.float64)
    view = slice_op(base, 1, 1, None, 2).t()  # (3, 4) over columns 1, 3, 5
    src = np.arange(12, dtype=np.float64).reshape(3, 4)
    view.copy_(ember.from_numpy(src))
    want = np.zeros((4, 6))
    want[:, 1::2] = src.T
    check(base, want, "float64")
    # from a non-contiguous source
    d = ember.zeros(4, 3, dtype=ember.float64)
    d.copy_(slice_op(base, 1, 1, None, 2))
    check(d, src.T, "float64")
    # a destination that overlaps its source
    m = ember.from_numpy(np.arange(9.0).reshape(3, 3))
    m.copy_(m.t())
    check(m, np.arange(9.0).reshape(3, 3).T, "float64")
    m = ember.from_numpy(np.arange(6.0))
    slice_op(m, 0, 1, None, 1).copy_(slice_op(m, 0, 0, 5, 1))
    check(m, np.float64([0, 0, 1, 2, 3, 4]), "float64")
    # Python numbers and nested lists are converted to the destination's dtype
    i = ember.zeros(2, 2, dtype=ember.int32)
    i.copy_([[1, 2], [3, 4]])
    check(i, np.int32([[1, 2], [3, 4]]), "int32")
    i.copy_(9)
    check(i, np.full((2, 2), 9, np.int32), "int32")


def test_copy_errors():
    with pytest.raises(RuntimeError, match=r"copy_: the source of shape \[4\] can't be broadcast "
                                           r"to the destination's shape \[2, 3\]"):
        ember.zeros(2, 3).copy_(ember.ones(4))
    with pytest.raises(RuntimeError, match="can't be broadcast"):
        ember.zeros(3).copy_(ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.zeros(1, 3).expand(2, 3).copy_(ember.ones(2, 3))
    # copying into an expanded dim of size 1 is fine
    e = ember.zeros(3).unsqueeze(0).expand(1, 3)
    e.copy_(ember.ones(1, 3))
    check(e, np.ones((1, 3), np.float32), "float32")


def test_copy_version_and_views():
    base = ember.zeros(3, 4)
    row = base.select(0, 1)
    v = base._version
    row.copy_(ember.ones(4))
    assert base._version == row._version == v + 1
    check(base, np.float32([[0] * 4, [1] * 4, [0] * 4]), "float32")


# -- optional: compare with PyTorch --------------------------------------------------------------
def test_casts_against_torch():
    torch = pytest.importorskip("torch")
    tnames = {n: getattr(torch, n) for n in ALL}
    for src in ALL:
        a = sample(src)
        ta = torch.from_numpy(a.astype(np.float32) if src == "bfloat16" else a.copy())
        if src == "bfloat16":
            ta = ta.to(torch.bfloat16)
        e = ember.from_numpy(a.copy())
        for to in ALL:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                rt = ta.to(tnames[to])
                re = e.to(getattr(ember, to))
            want = rt.to(torch.float32).numpy() if to == "bfloat16" else rt.numpy()
            same(re, want, to)
            d = ember.zeros(8, dtype=getattr(ember, to))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                d.copy_(e)
            same(d, want, to)
