"""Factories: tensor() inference, memory sharing with numpy, constants, ranges, eye."""
import numpy as np
import pytest

import ember


def host(t):
    return t.numpy()


@pytest.fixture
def float64_default():
    ember.set_default_dtype(ember.float64)
    yield
    ember.set_default_dtype(ember.float32)


def torch_or_skip():
    return pytest.importorskip("torch")


def dtype_name(d):
    return str(d).split(".")[-1]


# -- tensor(): dtype inference --------------------------------------------------------------------
INFERENCE = {
    "bool": ([True, False], "bool"),
    "int": ([1, 2, 3], "int64"),
    "float": ([1.0, 2.0], "float32"),
    "int_and_float": ([1, 2.5], "float32"),
    "bool_and_int": ([True, 1], "int64"),
    "bool_and_float": ([True, 1.5], "float32"),
    "complex": ([1, 2j], "complex64"),
    "scalar_int": (7, "int64"),
    "scalar_float": (7.5, "float32"),
    "scalar_bool": (False, "bool"),
    "scalar_complex": (1 + 1j, "complex64"),
    "empty": ([], "float32"),
    "nested": ([[1, 2], [3, 4], [5, 6]], "int64"),
    "nested_mixed": ([[1, 2], [3.5, 4]], "float32"),
    "deep": ([[[1.0]], [[2.0]]], "float32"),
    "np_float64": (np.array([1.5, 2.5]), "float64"),
    "np_float16": (np.array([1.5], np.float16), "float16"),
    "np_int32": (np.array([1, 2], np.int32), "int32"),
    "np_uint8": (np.array([1, 2], np.uint8), "uint8"),
    "np_bool": (np.array([True]), "bool"),
    "np_complex128": (np.array([1j]), "complex128"),
    "np_scalar_float64": (np.float64(1.5), "float64"),
    "np_scalar_int32": (np.int32(3), "int32"),
}


@pytest.mark.parametrize("name", INFERENCE)
def test_tensor_dtype_inference(name):
    data, expected = INFERENCE[name]
    t = ember.tensor(data)
    assert t.dtype.name == expected
    np.testing.assert_array_equal(host(t), np.asarray(data))
    assert tuple(t.shape) == np.shape(data)
    torch = pytest.importorskip("torch")
    assert dtype_name(torch.tensor(data).dtype) == expected


@pytest.mark.usefixtures("float64_default")
def test_tensor_respects_default_dtype():
    assert ember.tensor([1.5]).dtype is ember.float64
    assert ember.tensor([1, 2.5]).dtype is ember.float64
    assert ember.tensor([1j]).dtype is ember.complex128
    assert ember.tensor([1, 2]).dtype is ember.int64
    assert ember.tensor(np.array([1.5], np.float32)).dtype is ember.float32  # arrays keep theirs
    assert ember.zeros(2).dtype is ember.float64 and ember.arange(0.5).dtype is ember.float64


def test_tensor_explicit_dtype_and_tensor_input():
    assert host(ember.tensor([1.7, -1.7], dtype=ember.int32)).tolist() == [1, -1]
    assert ember.tensor([1, 0], dtype=ember.bool).tolist() == [True, False]
    src = ember.tensor([1.0, 2.0])
    copy = ember.tensor(src)
    copy.add_(1)
    assert src.tolist() == [1.0, 2.0]
    assert ember.tensor([ember.tensor(1.5), ember.tensor(2.0)]).tolist() == [1.5, 2.0]
    assert ember.tensor([[]]).shape == (1, 0)


def test_tensor_copies_numpy_data():
    a = np.zeros(3)
    t = ember.tensor(a)
    a[0] = 5
    assert host(t)[0] == 0


@pytest.mark.parametrize("data, exc", [
    ([[1, 2], [3]], ValueError),
    ([[1, 2], [3, 4, 5]], ValueError),
    ([[[1], [2]], [3, 4]], ValueError),
    (["a"], TypeError),
    ([1, "a"], TypeError),
    ([None], TypeError),
])
def test_tensor_rejects_bad_data(data, exc):
    with pytest.raises(exc):
        ember.tensor(data)


def test_tensor_rejects_unsupported_numpy_dtype():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        ember.tensor(np.array(["a"]))


# -- memory sharing with numpy --------------------------------------------------------------------
def _layouts():
    a = np.arange(24.0).reshape(4, 6)
    return {"contiguous": a, "column_step": a[:, ::2], "transposed": a.T,
            "block": a[1:3, 2:5], "fortran": np.asfortranarray(a), "zero_d": np.array(3.0)}


@pytest.mark.parametrize("make", [ember.from_numpy, ember.as_tensor, ember.asarray])
@pytest.mark.parametrize("layout", list(_layouts()))
def test_shares_memory_both_ways(make, layout):
    arr = _layouts()[layout]
    t = make(arr)
    assert t.dtype is ember.float64 and tuple(t.shape) == arr.shape
    np.testing.assert_array_equal(host(t), arr)
    arr[...] = -1  # numpy -> tensor
    assert (host(t) == -1).all()
    t.fill_(7)  # tensor -> numpy
    assert (arr == 7).all()
    if arr.ndim:
        assert t.stride() == tuple(s // arr.itemsize for s in arr.strides)


def test_from_numpy_keeps_dtype_and_version():
    for dt in (np.float32, np.float16, np.int64, np.int16, np.uint8, np.bool_, np.complex64):
        t = ember.from_numpy(np.zeros(2, dt))
        assert t.dtype.np == np.dtype(dt)
    assert ember.from_numpy(np.zeros(2))._version == 0


@pytest.mark.parametrize("make", [ember.from_numpy, ember.as_tensor])
def test_negative_strides_error(make):
    with pytest.raises(ValueError, match="negative"):
        make(np.arange(5.0)[::-1])


def test_from_numpy_rejects_non_arrays():
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ember.from_numpy([1, 2])


def test_as_tensor_and_asarray_copy_when_asked_or_needed():
    a = np.zeros(3)
    converted = ember.as_tensor(a, dtype=ember.float32)  # a new dtype needs a copy
    copied = ember.asarray(a, copy=True)
    a[0] = 1
    assert host(converted)[0] == 0 and host(copied)[0] == 0
    t = ember.tensor([1.0, 2.0])
    assert ember.as_tensor(t) is t
    assert ember.asarray([1, 2], dtype=ember.float64).dtype is ember.float64
    assert ember.as_tensor([1, 2]).dtype is ember.int64


# -- constants ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn, value", [(ember.zeros, 0), (ember.ones, 1)])
def test_zeros_ones(fn, value):
    for args in [(2, 3), ((2, 3),), ([2, 3],), (ember.Size([2, 3]),)]:
        t = fn(*args)
        assert t.shape == (2, 3) and t.dtype is ember.float32 and (host(t) == value).all()
    assert fn(()).shape == () and fn(0).shape == (0,)
    assert fn(2, dtype=ember.int16).dtype is ember.int16
    assert host(fn(2, dtype=ember.bool)).tolist() == [bool(value)] * 2


def test_empty_shapes_and_dtypes():
    t = ember.empty(3, 0, 2, dtype=ember.int8)
    assert t.shape == (3, 0, 2) and t.dtype is ember.int8 and t.is_contiguous()
    assert ember.empty(2, 3).stride() == (3, 1)


@pytest.mark.parametrize("fn", [ember.zeros, ember.ones, ember.empty])
def test_negative_size_errors(fn):
    with pytest.raises(RuntimeError, match="negative dimension"):
        fn(2, -1)
    with pytest.raises(TypeError):
        fn(2.5)


@pytest.mark.parametrize("value, expected", [(1, "int64"), (1.5, "float32"), (True, "bool"),
                                             (1j, "complex64"), (np.float64(2.0), "float32")])
def test_full_dtype_inference(value, expected):
    t = ember.full((2, 2), value)
    assert t.dtype.name == expected and (host(t) == value).all()
    torch = pytest.importorskip("torch")
    assert dtype_name(torch.full((2, 2), value).dtype) == expected


def test_full_explicit_dtype_and_tensor_value():
    assert host(ember.full((2,), 1, dtype=ember.float64)).dtype == np.float64
    assert host(ember.full((3,), 2.7, dtype=ember.int32)).tolist() == [2, 2, 2]
    assert ember.full([2], ember.tensor(3)).tolist() == [3, 3]


def test_like_variants():
    src = ember.zeros(2, 3, dtype=ember.int32)
    for fn, value in [(ember.zeros_like, 0), (ember.ones_like, 1)]:
        t = fn(src)
        assert t.shape == src.shape and t.dtype is ember.int32 and (host(t) == value).all()
    e = ember.empty_like(src)
    assert e.shape == (2, 3) and e.dtype is ember.int32
    f = ember.full_like(src, 2.7)
    assert f.dtype is ember.int32 and host(f).tolist() == [[2] * 3] * 2
    assert ember.zeros_like(src, dtype=ember.float64).dtype is ember.float64
    assert ember.ones_like(ember.zeros(2), dtype=ember.bool).tolist() == [True, True]
    # a strided source gives a fresh tensor of its shape
    assert ember.zeros_like(ember.zeros(4, 6).t()).shape == (6, 4)


def test_new_factories():
    src = ember.zeros(2, dtype=ember.float64)
    assert src.new_zeros(3).dtype is ember.float64 and src.new_ones(2, 2).shape == (2, 2)
    assert src.new_full((2,), 4).tolist() == [4.0, 4.0]
    assert src.new_tensor([1, 2]).dtype is ember.float64
    assert src.new_empty((1, 2)).shape == (1, 2)


# -- ranges ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}), ((2, 9), {}), ((2, 9, 3), {}), ((10, 0, -3), {}), ((0.5,), {}),
    ((1, 2.5, 0.5), {}), ((0, 1, 0.1), {}), ((-1, 1, 0.25), {}), ((5, 5), {}),
    ((5,), {"dtype": "float64"}), ((0, 3.5), {"dtype": "int32"}), ((3.0, -2.0, -0.5), {}),
])
def test_arange(args, kwargs):
    kw = {k: getattr(ember, v) for k, v in kwargs.items()}
    t = ember.arange(*args, **kw)
    floaty = any(isinstance(a, float) for a in args)
    assert t.dtype.name == kwargs.get("dtype", "float32" if floaty else "int64")
    expected = np.arange(*args, dtype=np.float64)
    assert t.shape == expected.shape
    np.testing.assert_allclose(host(t).astype(np.float64),
                               expected.astype(t.dtype.np), rtol=1e-6, atol=1e-6)
    torch = pytest.importorskip("torch")
    ref = torch.arange(*args, **{k: getattr(torch, v) for k, v in kwargs.items()})
    np.testing.assert_array_equal(host(t), ref.numpy())


@pytest.mark.parametrize("args, match", [
    ((0, 10, 0), "step must be nonzero"),
    ((0, 10, -1), "upper bound and lower bound inconsistent with step sign"),
    ((10, 0), "upper bound and lower bound inconsistent with step sign"),
    ((0, float("inf")), "unsupported range"),
])
def test_arange_errors(args, match):
    with pytest.raises(RuntimeError, match=match):
        ember.arange(*args)


@pytest.mark.parametrize("start, end, steps", [(0, 1, 5), (-3, 7, 11), (1, 0, 4), (3, 1, 1),
                                               (0, 1, 0), (0.1, 0.9, 100), (2, 2, 3)])
def test_linspace_matches_numpy(start, end, steps):
    t = ember.linspace(start, end, steps)
    assert t.dtype is ember.float32 and t.shape == (steps,)
    np.testing.assert_allclose(host(t), np.linspace(start, end, steps), rtol=1e-6, atol=1e-6)
    if steps:
        assert host(t)[0] == np.float32(start) and host(t)[-1] == np.float32(
            end if steps > 1 else start)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(host(t), torch.linspace(start, end, steps).numpy(), rtol=1e-6)


def test_linspace_dtypes_and_errors():
    assert host(ember.linspace(0, 10, 5, dtype=ember.int64)).tolist() == [0, 2, 5, 7, 10]
    assert ember.linspace(0, 1, 3, dtype=ember.float64).dtype is ember.float64
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ember.linspace(0, 1, -1)


@pytest.mark.parametrize("start, end, steps, base", [(0, 2, 3, 10.0), (0, 3, 4, 2),
                                                     (-1, 1, 5, 10.0), (1, 0, 3, 2.5)])
def test_logspace_matches_numpy(start, end, steps, base):
    t = ember.logspace(start, end, steps, base=base)
    assert t.dtype is ember.float32
    np.testing.assert_allclose(host(t), np.logspace(start, end, steps, base=base), rtol=1e-6)


@pytest.mark.parametrize("n, m", [(0, None), (1, None), (3, None), (2, 4), (4, 2), (3, 0)])
def test_eye(n, m):
    t = ember.eye(n, m)
    assert t.dtype is ember.float32
    np.testing.assert_array_equal(host(t), np.eye(n, m))
    assert host(ember.eye(n, m, dtype=ember.bool)).dtype == np.bool_


def test_eye_errors():
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.eye(-1)
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.eye(2, -3)
