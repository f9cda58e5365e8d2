"""Legacy constructors (Tensor(...), FloatTensor & co, Tensor.new), Tensor.type strings,
finfo/iinfo, isclose/allclose/equal — against PyTorch's documented behaviour and torch itself
when installed."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember


def test_tensor_constructor_legacy_semantics():
    t = ember.Tensor([1, 2])
    assert t.dtype is ember.float32 and t.tolist() == [1.0, 2.0]
    assert ember.Tensor(3).shape == (3,) and ember.Tensor(3).dtype is ember.float32
    assert ember.Tensor(2, 3).shape == (2, 3)
    assert ember.Tensor(ember.Size([2, 2])).shape == (2, 2)
    assert ember.Tensor((1, 2)).tolist() == [1.0, 2.0]  # a tuple is data, a Size is a size
    assert ember.Tensor().shape == (0,)
    assert ember.Tensor([True]).tolist() == [1.0]
    assert ember.Tensor(np.arange(3)).dtype is ember.float32
    src = ember.tensor([1, 2])
    alias = ember.Tensor(src)
    assert alias.dtype is ember.int64
    alias[0] = 7
    assert src[0].item() == 7  # shares memory


def test_default_dtype_is_followed():
    prev = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.Tensor([1]).dtype is ember.float64
        assert ember.Tensor(2).dtype is ember.float64
    finally:
        ember.set_default_dtype(prev)


@pytest.mark.parametrize("call, error, words", [
    (lambda: ember.Tensor(2.5), TypeError, r"new\(\): data must be a sequence \(got float\)"),
    (lambda: ember.Tensor("a"), TypeError, "invalid data type 'str'"),
    (lambda: ember.Tensor(-1), RuntimeError, "negative dimension -1: \\[-1\\]"),
    (lambda: ember.Tensor(2, 3.0), TypeError, "failed to unpack the object at pos 2"),
    (lambda: ember.Tensor([1], dtype=ember.float64), TypeError,
     "invalid combination of arguments - got \\(list, dtype=dtype\\)"),
    (lambda: ember.FloatTensor(ember.tensor([1, 2])), TypeError,
     "expected FloatTensor \\(dtype float32\\) but got a tensor of dtype int64"),
])
def test_constructor_errors(call, error, words):
    with pytest.raises(error, match=words):
        call()


@pytest.mark.parametrize("name, dtype", [
    ("FloatTensor", "float32"), ("DoubleTensor", "float64"), ("HalfTensor", "float16"),
    ("BFloat16Tensor", "bfloat16"), ("ByteTensor", "uint8"), ("CharTensor", "int8"),
    ("ShortTensor", "int16"), ("IntTensor", "int32"), ("LongTensor", "int64"),
    ("BoolTensor", "bool")])
def test_typed_constructors(name, dtype):
    cls = getattr(ember, name)
    assert cls.dtype is getattr(ember, dtype if dtype != "bool" else "bool")
    x = cls([1, 0])
    assert type(x) is ember.Tensor and x.dtype is cls.dtype
    assert cls(2, 3).shape == (2, 3) and cls(2, 3).dtype is cls.dtype
    assert isinstance(x, cls) and isinstance(x, ember.Tensor)
    others = [getattr(ember, n) for n in ember.ops.factories.LEGACY_TENSOR_NAMES
              if n.endswith("Tensor") and n != name]
    assert not any(isinstance(x, c) for c in others)
    assert not issubclass(cls, ember.Tensor)
    assert x.type() == f"ember.{name}"


def test_long_tensor_truncates_floats():
    assert ember.LongTensor([1.7, -2.7]).tolist() == [1, -2]


def test_type_conversions():
    x = ember.ones(2)
    assert x.type(ember.DoubleTensor).dtype is ember.float64
    assert x.type("torch.IntTensor").dtype is ember.int32
    assert x.type("ember.LongTensor").dtype is ember.int64
    assert x.type(ember.int16).dtype is ember.int16
    with pytest.raises(ValueError, match="invalid type: 'torch.FooTensor'"):
        x.type("torch.FooTensor")
    if ember.opencl.is_available():
        assert x.to("opencl").type() == "ember.opencl.FloatTensor"
        assert not isinstance(x.to("opencl"), ember.FloatTensor)


def test_tensor_new_and_new_factories():
    x = ember.ones(2, dtype=ember.int32)
    assert x.new([1.5, 2.5]).dtype is ember.int32
    assert x.new(3).shape == (3,) and x.new().shape == (0,)
    y = ember.ones(2)
    assert y.new_tensor([1, 2]).dtype is ember.float32
    assert y.new_zeros(2, 3).shape == (2, 3) and y.new_zeros((2, 3)).shape == (2, 3)
    assert y.new_full((2,), 3).tolist() == [3.0, 3.0]
    assert y.new_ones(3, dtype=ember.int64).tolist() == [1, 1, 1]
    assert y.new_empty(4).shape == (4,)


def test_set_default_tensor_type():
    prev = ember.get_default_dtype()
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            ember.set_default_tensor_type(ember.DoubleTensor)
        assert ember.get_default_dtype() is ember.float64
        with pytest.warns(UserWarning):
            ember.set_default_tensor_type("torch.FloatTensor")
        assert ember.get_default_dtype() is ember.float32
    finally:
        ember.set_default_dtype(prev)


def test_legacy_constructors_match_torch():
    torch = pytest.importorskip("torch")
    cases = [lambda m: m.Tensor([1, 2]), lambda m: m.Tensor([[1, 2], [3, 4]]),
             lambda m: m.Tensor(()), lambda m: m.LongTensor([1.7, -2.2]),
             lambda m: m.BoolTensor([1, 0, 2]), lambda m: m.ByteTensor([1, 2]),
             lambda m: m.DoubleTensor([0.5]), lambda m: m.ones(2, dtype=m.int32).new([1.5])]
    for case in cases:
        a, b = case(torch), case(ember)
        assert str(a.dtype).split(".")[1] == b.dtype.name
        assert a.tolist() == b.tolist()
    for size in ((3,), (2, 3), ()):
        assert tuple(torch.Tensor(*size).shape) == tuple(ember.Tensor(*size).shape)
    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "BoolTensor"):
        for dt in ("float32", "float64", "int64", "bool"):
            assert isinstance(torch.zeros(1, dtype=getattr(torch, dt)), getattr(torch, name)) \
                == isinstance(ember.zeros(1, dtype=getattr(ember, dt)), getattr(ember, name))
        assert torch.zeros(1, dtype=getattr(torch, "float32")).type(
            getattr(torch, name)).dtype.__str__().split(".")[1] == \
            ember.zeros(1).type(getattr(ember, name)).dtype.name


# -- finfo / iinfo ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64",
                                  "complex128"])
def test_finfo_matches_torch_and_numpy(name):
    f = ember.finfo(getattr(ember, name))
    real = {"complex64": "float32", "complex128": "float64"}.get(name, name)
    assert f.dtype == real
    if real != "bfloat16":
        n = np.finfo(real)
        assert (f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal) == (
            n.bits, float(n.eps), float(n.max), float(n.min), float(n.tiny),
            float(n.smallest_normal))
    else:
        assert (f.bits, f.eps, f.max, f.tiny) == (16, 2 ** -7, 3.3895313892515355e38, 2 ** -126)
    assert f.resolution == 10.0 ** -math.floor(-math.log10(f.eps))
    torch = pytest.importorskip("torch")
    t = torch.finfo(getattr(torch, name))
    assert (f.bits, f.eps, f.max, f.min, f.tiny, f.smallest_normal, f.resolution, f.dtype) == \
        (t.bits, t.eps, t.max, t.min, t.tiny, t.smallest_normal, t.resolution, t.dtype)
    assert repr(f) == repr(t)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo(name):
    i = ember.iinfo(getattr(ember, name))
    n = np.iinfo(name)
    assert (i.bits, i.max, i.min, i.dtype) == (n.bits, int(n.max), int(n.min), name)
    torch = pytest.importorskip("torch")
    assert repr(i) == repr(torch.iinfo(getattr(torch, name)))


def test_finfo_iinfo_errors_and_default():
    assert ember.finfo().dtype == ember.get_default_dtype().name
    assert ember.finfo(ember.float32) == ember.finfo(ember.float32)
    with pytest.raises(TypeError, match="requires a floating point input type"):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError, match="requires an integer input type"):
        ember.iinfo(ember.float32)
    with pytest.raises(TypeError, match="ember.bool is not supported by ember.iinfo"):
        ember.iinfo(ember.bool)
    with pytest.raises(TypeError, match="must be ember.dtype, not str"):
        ember.finfo("float32")


# -- isclose / allclose / equal -----------------------------------------------------------------
def test_isclose_rules():
    nan, inf = float("nan"), float("inf")
    a = ember.tensor([1.0, 1.0 + 1e-6, 1.1, nan, inf, -inf, inf])
    b = ember.tensor([1.0, 1.0, 1.0, nan, inf, -inf, -inf])
    assert ember.isclose(a, b).tolist() == [True, True, False, False, True, True, False]
    assert ember.isclose(a, b, equal_nan=True).tolist()[3] is True
    assert ember.isclose(a, b, rtol=0.2).tolist()[2] is True
    assert ember.isclose(ember.tensor([1, 2]), ember.tensor([1, 3])).tolist() == [True, False]
    assert ember.isclose(ember.tensor([1, 2], dtype=ember.uint8),
                         ember.tensor([2, 1], dtype=ember.uint8), atol=1).tolist() == [True] * 2
    assert ember.isclose(ember.ones(2, 3), ember.ones(3)).shape == (2, 3)
    assert a.isclose(b).shape == (7,)


def test_isclose_errors_like_torch():
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        ember.isclose(ember.ones(2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(TypeError, match=r"argument 'other' \(position 2\) must be Tensor, not "
                                        r"float"):
        ember.isclose(ember.ones(2), 1.0)
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got "
                                           "-1"):
        ember.isclose(ember.ones(1), ember.ones(1), rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        ember.allclose(ember.ones(1), ember.ones(1), atol=-1)
    with pytest.raises(RuntimeError, match="size"):
        ember.isclose(ember.ones(2, 3), ember.ones(4))


def test_allclose_and_equal():
    assert ember.allclose(ember.ones(2, 3), ember.ones(3)) is True
    assert ember.allclose(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.001])) is False
    assert ember.allclose(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 2.001]), atol=0.01)
    assert ember.equal(ember.ones(2), ember.ones(2, dtype=ember.float64)) is True
    assert ember.equal(ember.ones(2), ember.ones(3)) is False
    assert ember.equal(ember.ones(2), ember.ones(1, 2)) is False
    assert ember.equal(ember.tensor([float("nan")]), ember.tensor([float("nan")])) is False
    assert ember.ones(2).equal(ember.ones(2)) and ember.ones(2).allclose(ember.ones(2))
    with pytest.raises(TypeError, match="equal\\(\\): argument 'other' .* not list"):
        ember.equal(ember.ones(2), [1, 1])


def test_closeness_matches_torch_on_random_data():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(200).astype(np.float32)
    b = (a + rng.standard_normal(200) * 1e-5 * rng.integers(0, 3, 200)).astype(np.float32)
    b[::17] = np.nan
    a[::34] = np.nan
    for kw in ({}, {"rtol": 1e-3}, {"atol": 1e-4, "equal_nan": True}, {"rtol": 0, "atol": 0}):
        assert ember.isclose(ember.tensor(a), ember.tensor(b), **kw).tolist() == \
            torch.isclose(torch.tensor(a), torch.tensor(b), **kw).tolist()


def test_closeness_on_opencl():
    if not ember.opencl.is_available():
        pytest.skip(ember.opencl.unavailable_reason())
    a = ember.tensor([1.0, 2.0, float("nan")])
    b = ember.tensor([1.0, 2.5, float("nan")])
    assert ember.isclose(a.to("opencl"), b.to("opencl"), equal_nan=True).cpu().tolist() == \
        ember.isclose(a, b, equal_nan=True).tolist()
    assert ember.equal(a.to("opencl")[:2], a.to("opencl")[:2])
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.equal(a, a.to("opencl"))


# -- stragglers scripts touch -------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3,), (3, 4), (4, 2)])
@pytest.mark.parametrize("k", [-2, 0, 1])
def test_diag(shape, k):
    a = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape) + 1
    np.testing.assert_array_equal(ember.diag(ember.tensor(a), k).numpy(), np.diag(a, k))
    x = ember.tensor(a, requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ember.diag(t, k), (x,))


def test_diag_errors_and_version():
    with pytest.raises(RuntimeError, match="diag\\(\\): Supports 1D or 2D tensors. Got 3D"):
        ember.diag(ember.zeros(2, 2, 2))
    assert ember.version.cuda is None and ember.version.__version__ == ember.__version__
