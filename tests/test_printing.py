"""Tensor repr against PyTorch's: literal expected strings, checked against torch's own output
when torch is installed ("torch." replaced by "ember.")."""
import pytest

import ember

# name: (builder over the module X = ember or torch, expected repr)
CASES = {
    "float": (lambda X: X.tensor([1.5, 2.25, -3.0]),
        'tensor([ 1.5000,  2.2500, -3.0000])'),
    "integer_valued_float": (lambda X: X.tensor([1., 2., 3.]),
        'tensor([1., 2., 3.])'),
    "int": (lambda X: X.tensor([1, -22, 333]),
        'tensor([  1, -22, 333])'),
    "bool": (lambda X: X.tensor([True, False]),
        'tensor([ True, False])'),
    "complex": (lambda X: X.tensor([1 + 2j, -3.5 - 0.25j]),
        'tensor([ 1.0000+2.0000j, -3.5000-0.2500j])'),
    "complex_integer_valued": (lambda X: X.tensor([1 + 2j, 3 - 4j]),
        'tensor([1.+2.j, 3.-4.j])'),
    "zero_d_float": (lambda X: X.tensor(3.5),
        'tensor(3.5000)'),
    "zero_d_int": (lambda X: X.tensor(7),
        'tensor(7)'),
    "zero_d_bool": (lambda X: X.tensor(True),
        'tensor(True)'),
    "zero_d_complex": (lambda X: X.tensor(1 + 2j),
        'tensor(1.+2.j)'),
    "empty": (lambda X: X.tensor([]),
        'tensor([])'),
    "empty_2d": (lambda X: X.zeros(2, 0),
        'tensor([], size=(2, 0))'),
    "empty_int": (lambda X: X.zeros(0, dtype=X.int64),
        'tensor([], dtype=ember.int64)'),
    "empty_int32_2d": (lambda X: X.zeros(0, 3, dtype=X.int32),
        'tensor([], size=(0, 3), dtype=ember.int32)'),
    "float64": (lambda X: X.tensor([1.5, 2.0], dtype=X.float64),
        'tensor([1.5000, 2.0000], dtype=ember.float64)'),
    "int32": (lambda X: X.tensor([1, 2], dtype=X.int32),
        'tensor([1, 2], dtype=ember.int32)'),
    "uint8_2d": (lambda X: X.tensor([[1, 2], [3, 4]], dtype=X.uint8),
        'tensor([[1, 2],\n'
        '        [3, 4]], dtype=ember.uint8)'),
    "float16": (lambda X: X.tensor([1.5, 2.0], dtype=X.float16),
        'tensor([1.5000, 2.0000], dtype=ember.float16)'),
    "bfloat16": (lambda X: X.tensor([0.1, 2.0], dtype=X.bfloat16),
        'tensor([0.1001, 2.0000], dtype=ember.bfloat16)'),
    "complex128": (lambda X: X.tensor([1.5 + 1j], dtype=X.complex128),
        'tensor([1.5000+1.j], dtype=ember.complex128)'),
    "large": (lambda X: X.tensor([1e10, 1.0]),
        'tensor([1.0000e+10, 1.0000e+00])'),
    "large_fraction": (lambda X: X.tensor([123456789.5, 1.5]),
        'tensor([1.2346e+08, 1.5000e+00])'),
    "small": (lambda X: X.tensor([1e-5, 1.0]),
        'tensor([1.0000e-05, 1.0000e+00])'),
    "wide_ratio": (lambda X: X.tensor([0.001, 2.0]),
        'tensor([1.0000e-03, 2.0000e+00])'),
    "large_integer_valued": (lambda X: X.tensor([1e9, 1.0]),
        'tensor([1.0000e+09, 1.0000e+00])'),
    "nan_inf": (lambda X: X.tensor([float('nan'), 1.5, float('inf'), -float('inf')]),
        'tensor([   nan, 1.5000,    inf,   -inf])'),
    "nan_integer_valued": (lambda X: X.tensor([float('nan'), 1.0, 2.0]),
        'tensor([nan, 1., 2.])'),
    "only_nonfinite": (lambda X: X.tensor([float('nan'), 0.0, float('inf')]),
        'tensor([nan, 0., inf])'),
    "negative_zero": (lambda X: X.tensor([-0.0, 0.0]),
        'tensor([-0., 0.])'),
    "precision": (lambda X: X.tensor([1 / 3, 2 / 3]),
        'tensor([0.3333, 0.6667])'),
    "summarized_1d": (lambda X: X.arange(2000, dtype=X.float32),
        'tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n'
        '        1.9990e+03])'),
    "summarized_int": (lambda X: X.arange(1001),
        'tensor([   0,    1,    2,  ...,  998,  999, 1000])'),
    "summarized_2d": (lambda X: X.arange(40 * 40, dtype=X.float32).reshape(40, 40),
        'tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 3.7000e+01, 3.8000e+01,\n'
        '         3.9000e+01],\n'
        '        [4.0000e+01, 4.1000e+01, 4.2000e+01,  ..., 7.7000e+01, 7.8000e+01,\n'
        '         7.9000e+01],\n'
        '        [8.0000e+01, 8.1000e+01, 8.2000e+01,  ..., 1.1700e+02, 1.1800e+02,\n'
        '         1.1900e+02],\n'
        '        ...,\n'
        '        [1.4800e+03, 1.4810e+03, 1.4820e+03,  ..., 1.5170e+03, 1.5180e+03,\n'
        '         1.5190e+03],\n'
        '        [1.5200e+03, 1.5210e+03, 1.5220e+03,  ..., 1.5570e+03, 1.5580e+03,\n'
        '         1.5590e+03],\n'
        '        [1.5600e+03, 1.5610e+03, 1.5620e+03,  ..., 1.5970e+03, 1.5980e+03,\n'
        '         1.5990e+03]])'),
    "summarized_3d": (lambda X: X.arange(1100).reshape(10, 2, 55),
        'tensor([[[   0,    1,    2,  ...,   52,   53,   54],\n'
        '         [  55,   56,   57,  ...,  107,  108,  109]],\n'
        '\n'
        '        [[ 110,  111,  112,  ...,  162,  163,  164],\n'
        '         [ 165,  166,  167,  ...,  217,  218,  219]],\n'
        '\n'
        '        [[ 220,  221,  222,  ...,  272,  273,  274],\n'
        '         [ 275,  276,  277,  ...,  327,  328,  329]],\n'
        '\n'
        '        ...,\n'
        '\n'
        '        [[ 770,  771,  772,  ...,  822,  823,  824],\n'
        '         [ 825,  826,  827,  ...,  877,  878,  879]],\n'
        '\n'
        '        [[ 880,  881,  882,  ...,  932,  933,  934],\n'
        '         [ 935,  936,  937,  ...,  987,  988,  989]],\n'
        '\n'
        '        [[ 990,  991,  992,  ..., 1042, 1043, 1044],\n'
        '         [1045, 1046, 1047,  ..., 1097, 1098, 1099]]])'),
    "rows": (lambda X: X.arange(12, dtype=X.float32).reshape(3, 4) / 7,
        'tensor([[0.0000, 0.1429, 0.2857, 0.4286],\n'
        '        [0.5714, 0.7143, 0.8571, 1.0000],\n'
        '        [1.1429, 1.2857, 1.4286, 1.5714]])'),
    "rows_3d": (lambda X: X.arange(24).reshape(2, 3, 4),
        'tensor([[[ 0,  1,  2,  3],\n'
        '         [ 4,  5,  6,  7],\n'
        '         [ 8,  9, 10, 11]],\n'
        '\n'
        '        [[12, 13, 14, 15],\n'
        '         [16, 17, 18, 19],\n'
        '         [20, 21, 22, 23]]])'),
    "wraps_lines": (lambda X: X.arange(30, dtype=X.float32) * 1.1,
        'tensor([ 0.0000,  1.1000,  2.2000,  3.3000,  4.4000,  5.5000,  6.6000,  7.7000,\n'
        '         8.8000,  9.9000, 11.0000, 12.1000, 13.2000, 14.3000, 15.4000, 16.5000,\n'
        '        17.6000, 18.7000, 19.8000, 20.9000, 22.0000, 23.1000, 24.2000, 25.3000,\n'
        '        26.4000, 27.5000, 28.6000, 29.7000, 30.8000, 31.9000])'),
    "wraps_ints": (lambda X: X.arange(25) * 1000,
        'tensor([    0,  1000,  2000,  3000,  4000,  5000,  6000,  7000,  8000,  9000,\n'
        '        10000, 11000, 12000, 13000, 14000, 15000, 16000, 17000, 18000, 19000,\n'
        '        20000, 21000, 22000, 23000, 24000])'),
    "complex_wraps": (lambda X: X.arange(12, dtype=X.float32) + 0.5j,
        'tensor([ 0.+0.5000j,  1.+0.5000j,  2.+0.5000j,  3.+0.5000j,  4.+0.5000j,  5.+0.5000j,\n'
        '         6.+0.5000j,  7.+0.5000j,  8.+0.5000j,  9.+0.5000j, 10.+0.5000j, 11.+0.5000j])'),
    "complex_sci": (lambda X: X.tensor([1e10 + 1j, 1 - 1e-6j]),
        'tensor([1.0000e+10+1.0000e+00j, 1.0000e+00-1.0000e-06j])'),
    "four_d": (lambda X: X.arange(16).reshape(2, 2, 2, 2),
        'tensor([[[[ 0,  1],\n'
        '          [ 2,  3]],\n'
        '\n'
        '         [[ 4,  5],\n'
        '          [ 6,  7]]],\n'
        '\n'
        '\n'
        '        [[[ 8,  9],\n'
        '          [10, 11]],\n'
        '\n'
        '         [[12, 13],\n'
        '          [14, 15]]]])'),
    "int8_extremes": (lambda X: X.tensor([-128, 127], dtype=X.int8),
        'tensor([-128,  127], dtype=ember.int8)'),
    "float64_sci": (lambda X: X.tensor([1e200, 1.0], dtype=X.float64),
        'tensor([1.0000e+200,  1.0000e+00], dtype=ember.float64)'),
}


@pytest.fixture(autouse=True)
def _default_print_options():
    yield
    ember.set_printoptions(profile="default")
    ember.set_default_dtype(ember.float32)


def torch_repr(build, **options):
    torch = pytest.importorskip("torch")
    torch.set_printoptions(**options)
    try:
        return repr(build(torch)).replace("torch.", "ember.")
    finally:
        torch.set_printoptions(profile="default")


@pytest.mark.parametrize("name", CASES)
def test_repr(name):
    build, expected = CASES[name]
    assert repr(build(ember)) == expected
    assert str(build(ember)) == expected


@pytest.mark.parametrize("name", CASES)
def test_expected_strings_are_torchs(name):
    build, expected = CASES[name]
    assert torch_repr(build) == expected


# (options, builder, expected)
OPTION_CASES = [
    (dict(precision=2), lambda X: X.tensor([1 / 3, 2 / 3]), "tensor([0.33, 0.67])"),
    (dict(precision=6), lambda X: X.tensor([1 / 3, 1e-5]),
     "tensor([3.333333e-01, 1.000000e-05])"),
    (dict(precision=1), lambda X: X.tensor([1.0, 2.0]), "tensor([1., 2.])"),
    (dict(sci_mode=True), lambda X: X.tensor([1.5, 2.0]), "tensor([1.5000e+00, 2.0000e+00])"),
    (dict(sci_mode=False), lambda X: X.tensor([1e-5, 1.0]), "tensor([0.0000, 1.0000])"),
    (dict(threshold=5), lambda X: X.arange(10), "tensor([0, 1, 2,  ..., 7, 8, 9])"),
    (dict(threshold=5, edgeitems=1), lambda X: X.arange(12).reshape(3, 4),
     "tensor([[ 0,  ...,  3],\n        ...,\n        [ 8,  ..., 11]])"),
    (dict(edgeitems=0, threshold=5), lambda X: X.arange(10.0), "tensor([...], size=(10,))"),
    (dict(linewidth=30), lambda X: X.arange(8) * 100,
     "tensor([  0, 100, 200, 300,\n        400, 500, 600, 700])"),
    (dict(profile="short"), lambda X: X.tensor([1 / 3, 2 / 3]), "tensor([0.33, 0.67])"),
]


@pytest.mark.parametrize("case", range(len(OPTION_CASES)))
def test_print_options(case):
    options, build, expected = OPTION_CASES[case]
    ember.set_printoptions(**options)
    assert repr(build(ember)) == expected
    ember.set_printoptions(profile="default")
    assert torch_repr(build, **options) == expected


def test_full_profile_prints_everything():
    ember.set_printoptions(profile="full")
    assert "..." not in repr(ember.arange(2000))
    ember.set_printoptions(profile="default")
    assert "..." in repr(ember.arange(2000))


def test_default_dtype_changes_the_suffixes():
    ember.set_default_dtype(ember.float64)
    assert repr(ember.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert repr(ember.tensor([1.5], dtype=ember.float32)) == "tensor([1.5000], dtype=ember.float32)"
    assert repr(ember.tensor([1j])) == "tensor([0.+1.j])"
    assert repr(ember.tensor([1j], dtype=ember.complex64)) == \
        "tensor([0.+1.j], dtype=ember.complex64)"
    assert repr(ember.zeros(0, dtype=ember.float32)) == "tensor([], dtype=ember.float32)"


def test_views_print_their_own_values():
    base = ember.arange(12).reshape(3, 4)
    assert repr(base.t()[1:3]) == "tensor([[ 1,  5,  9],\n        [ 2,  6, 10]])"
    assert repr(base[:, ::3]) == "tensor([[ 0,  3],\n        [ 4,  7],\n        [ 8, 11]])"


def test_subclass_prefix():
    class Special(ember.Tensor):
        pass

    t = ember.tensor([1.0, 2.0]).as_subclass(Special)
    assert repr(t) == "Special([1., 2.])"


def test_tensor_contents_override():
    assert ember.tensor([1, 2]).__repr__(tensor_contents="<hidden>") == "tensor(<hidden>)"
