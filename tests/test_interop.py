"""Host interop: item, tolist, numpy(), __array__, DLPack, Python number conversions, len/iter."""
import operator

import numpy as np
import pytest

import ember


# -- item and tolist ------------------------------------------------------------------------------
@pytest.mark.parametrize("data, dtype, expected, kind", [
    (3, None, 3, int), (2.5, None, 2.5, float), (True, None, True, bool),
    (1 + 2j, None, 1 + 2j, complex), (1.5, "float16", 1.5, float),
    (1.1, "bfloat16", 1.1015625, float),
    ([[5]], None, 5, int), ([-7], "int8", -7, int), (200, "uint8", 200, int),
])
def test_item(data, dtype, expected, kind):
    t = ember.tensor(data, dtype=None if dtype is None else getattr(ember, dtype))
    v = t.item()
    assert type(v) is kind and v == expected


def test_item_of_several_elements_errors():
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to"):
        ember.tensor([1, 2]).item()
    with pytest.raises(RuntimeError, match="0 elements"):
        ember.zeros(0).item()


@pytest.mark.parametrize("data, dtype", [
    ([[1, 2, 3], [4, 5, 6]], None), ([[[1.5], [2.0]]], None), ([True, False], None),
    ([1 + 1j, -2j], None), (4.25, None), ([], None), ([[1, 2]], "int16"),
])
def test_tolist_round_trips(data, dtype):
    t = ember.tensor(data, dtype=None if dtype is None else getattr(ember, dtype))
    out = t.tolist()
    assert out == data
    assert type(out) is type(data)


def test_tolist_element_types():
    assert all(type(v) is int for v in ember.tensor([1, 2], dtype=ember.uint8).tolist())
    assert all(type(v) is float for v in ember.tensor([1.0, 2.0]).tolist())
    assert all(type(v) is bool for v in ember.tensor([True]).tolist())


@pytest.mark.parametrize("dtype, expected", [("float16", [0.0999755859375, 65504.0, -2.0]),
                                             ("bfloat16", [0.10009765625, 65536.0, -2.0])])
def test_tolist_of_narrow_floats_gives_python_floats(dtype, expected):
    out = ember.tensor([0.1, 65504.0, -2.0], dtype=getattr(ember, dtype)).tolist()
    assert out == expected and all(type(v) is float for v in out)
    torch = pytest.importorskip("torch")
    assert torch.tensor([0.1, 65504.0, -2.0], dtype=getattr(torch, dtype)).tolist() == expected


def test_tolist_of_views_follows_strides():
    base = ember.tensor([[1, 2, 3], [4, 5, 6]])
    assert base.t().tolist() == [[1, 4], [2, 5], [3, 6]]
    assert base[:, ::2].tolist() == [[1, 3], [4, 6]]
    assert ember.zeros(1, 0).tolist() == [[]]


# -- numpy() and __array__ ------------------------------------------------------------------------
def test_numpy_shares_memory():
    t = ember.zeros(2, 3)
    a = t.numpy()
    assert a.dtype == np.float32 and a.shape == (2, 3)
    a[0, 1] = 5
    assert t.tolist()[0][1] == 5
    t.add_(1)
    assert a[0, 1] == 6 and a[1, 2] == 1


def test_numpy_of_a_view_is_a_view_of_the_same_memory():
    base = ember.arange(12.0).reshape(3, 4)
    v = base.t()
    a = v.numpy()
    assert a.shape == (4, 3) and np.shares_memory(a, base.numpy())
    a[0, 2] = -1
    assert base.tolist()[2][0] == -1


def test_numpy_of_requires_grad_tensor_raises():
    t = ember.zeros(2)
    if not hasattr(t, "requires_grad_"):
        pytest.skip("Tensor.requires_grad_ is not implemented yet (autograd)")
    t.requires_grad_(True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        t.numpy()


def test_array_protocol():
    t = ember.tensor([1.0, 2.0, 3.0])
    a = np.asarray(t)
    assert a.dtype == np.float32 and np.shares_memory(a, t.numpy())
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    c = np.array(t)
    c[0] = 100
    assert t.tolist()[0] == 1.0  # np.array copies
    assert np.add(t, 1).tolist() == [2.0, 3.0, 4.0]
    assert np.asarray(ember.tensor(True)).dtype == np.bool_


# -- DLPack ---------------------------------------------------------------------------------------
def test_numpy_from_dlpack_shares_memory():
    t = ember.tensor([1.0, 2.0, 3.0])
    a = np.from_dlpack(t)
    a[0] = 9
    assert t.tolist() == [9.0, 2.0, 3.0]
    assert t.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(ember.tensor([[1, 2], [3, 4]]).t()),
                                  [[1, 3], [2, 4]])


def test_ember_from_dlpack_of_numpy_shares_memory():
    x = np.arange(6.0).reshape(2, 3)[:, ::2]
    t = ember.from_dlpack(x)
    assert t.dtype is ember.float64 and t.shape == (2, 2)
    x[0, 0] = 7
    assert t.tolist() == [[7.0, 2.0], [3.0, 5.0]]
    t.zero_()
    assert (x == 0).all()


def test_from_dlpack_round_trip_and_identity():
    t = ember.tensor([1, 2, 3], dtype=ember.int32)
    back = ember.from_dlpack(np.from_dlpack(t))
    assert back.dtype is ember.int32 and back.tolist() == [1, 2, 3]
    back.fill_(0)
    assert t.tolist() == [0, 0, 0]
    assert ember.from_dlpack(t) is t


def test_dlpack_with_torch_shares_memory():
    torch = pytest.importorskip("torch")
    t = ember.tensor([1.0, 2.0, 3.0])
    tt = torch.from_dlpack(t)
    tt[1] = 8
    assert t.tolist() == [1.0, 8.0, 3.0]
    src = torch.arange(4.0)
    e = ember.from_dlpack(src)
    src[0] = -1
    assert e.tolist() == [-1.0, 1.0, 2.0, 3.0]


# -- Python number conversions --------------------------------------------------------------------
@pytest.mark.parametrize("data, conv, expected", [
    ([[2.7]], int, 2), (-2.7, int, -2), ([3], float, 3.0), (True, int, 1), ([0.0], bool, False),
    ([[5]], bool, True), (1 + 2j, complex, 1 + 2j), (4, complex, 4 + 0j), (7, float, 7.0),
])
def test_python_number_conversions(data, conv, expected):
    v = conv(ember.tensor(data))
    assert type(v) is conv and v == expected


@pytest.mark.parametrize("conv", [int, float, complex])
@pytest.mark.parametrize("data", [[1, 2], []])
def test_number_conversion_needs_one_element(conv, data):
    with pytest.raises(ValueError, match="only one element tensors can be converted"):
        conv(ember.tensor(data))


@pytest.mark.parametrize("data", [[1, 2], []])
def test_bool_is_ambiguous_unless_one_element(data):
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with .* ambiguous"):
        bool(ember.tensor(data))


def test_index_protocol():
    assert operator.index(ember.tensor(3)) == 3
    assert [10, 20, 30][ember.tensor([1])] == 20
    assert list(range(10))[ember.tensor(2):ember.tensor(4)] == [2, 3]
    for bad in (ember.tensor(3.0), ember.tensor([1, 2])):
        with pytest.raises(TypeError, match="only integer tensors of a single element"):
            operator.index(bad)


def test_format():
    assert f"{ember.tensor(1.5):.2f}" == "1.50"
    assert f"{ember.tensor([1, 2])}" == "tensor([1, 2])"


def test_format_like_torch():
    # a 0-d plain tensor formats as its number even without a spec (minGPT prints
    # f"new top score of {score}"); Parameters and tensors of several elements as their repr
    torch = pytest.importorskip("torch")
    for lib in (ember, torch):
        lib.manual_seed(0)
    cases = [lambda L: L.tensor(640.0), lambda L: L.tensor(3), lambda L: L.tensor(True),
             lambda L: L.tensor(0.25, requires_grad=True) * 2, lambda L: L.tensor([1.5, 2.0]),
             lambda L: L.nn.Parameter(L.tensor(2.0))]
    for make in cases:
        e, t = make(ember), make(torch)
        assert f"{e}" == f"{t}" and "{}".format(e) == "{}".format(t)
        for spec in (".2f", ">8"):
            try:
                want = format(t, spec)
            except TypeError as err:
                with pytest.raises(TypeError, match="unsupported format string"):
                    format(e, spec)
                assert "unsupported format string" in str(err)
            else:
                assert format(e, spec) == want


# -- len and iteration ----------------------------------------------------------------------------
def test_len():
    assert len(ember.zeros(2, 3)) == 2 and len(ember.zeros(0, 4)) == 0
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ember.tensor(1.0))


def test_iter():
    rows = list(ember.tensor([[1, 2], [3, 4], [5, 6]]))
    assert len(rows) == 3 and all(isinstance(r, ember.Tensor) for r in rows)
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4], [5, 6]]
    items = list(ember.tensor([1.5, 2.5]))
    assert [x.ndim for x in items] == [0, 0] and [float(x) for x in items] == [1.5, 2.5]
    assert list(ember.zeros(0)) == []
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(ember.tensor(1.0))


def test_iteration_yields_views():
    t = ember.zeros(2, 2)
    for row in t:
        row.fill_(3)
    assert t.tolist() == [[3.0, 3.0], [3.0, 3.0]]
