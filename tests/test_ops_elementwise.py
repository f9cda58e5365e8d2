"""Elementwise ops (``ember.ops.elementwise``) against numpy/scipy references.

Every op is run on random inputs in several layouts (contiguous, transposed, stepped slices,
stride-0 expansions), shapes (0-d, empty, broadcast) and dtypes; result dtypes are checked
against PyTorch's promotion rules written out independently in ``helpers_ops``. Where PyTorch is
installed, a sample is also compared with it directly.
"""
import math
import warnings

from inspect import unwrap  # the public names are the binding layer's wrappers

import numpy as np
import pytest
from scipy import special

import ember
from ember.ops import elementwise as E
from helpers_ops import (DTYPES, FLOATS, INTS, category, check, data, edt, layouts, result_dtype,
                         to_float, values)

inf, nan = math.inf, math.nan
SHAPES = [(), (0,), (5,), (3, 4), (2, 3, 4)]
BCAST = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((), (3,)), ((2, 3, 4), (3, 1)),
         ((0, 3), (3,)), ((), ())]


def _ref(f, *args):
    """A numpy reference, computed without IEEE warnings (log(0) = -inf is expected)."""
    with np.errstate(all="ignore"):
        return f(*args)


def _hi(dt):
    """The precision a reference is computed in."""
    return np.complex128 if category(dt) == 3 else np.float64


# -- unary: float family ------------------------------------------------------------------------
def _logaddexp(x, y):
    if np.result_type(x, y).kind != "c":
        return np.logaddexp(x, y)
    # PyTorch's complex form: around the operand of larger real part, so the imaginary part is
    # that operand's plus a small correction (not wrapped into (-pi, pi] as log(e^x + e^y) is)
    x, y = np.broadcast_arrays(np.asarray(x, np.complex128), np.asarray(y, np.complex128))
    m = np.where(x.real >= y.real, x, y)
    o = np.where(x.real >= y.real, y, x)
    return m + np.log1p(np.exp(o - m))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x)) if x.dtype.kind == "c" else special.expit(x)


# name: (reference, float domain, int domain, complex supported)
def _lgamma(x):
    """C99's lgamma (PyTorch's): scipy's gammaln, but +inf at -inf (scipy gives -inf)."""
    return np.where(np.isneginf(x), np.inf, special.gammaln(x))


FLOAT_UNARY = {
    "exp": (np.exp, (-3, 3), (-3, 3), True),
    "exp2": (np.exp2, (-3, 3), (-3, 3), True),
    "expm1": (np.expm1, (-3, 3), (-3, 3), True),
    "log": (np.log, (0.05, 5), (1, 5), True),
    "log2": (np.log2, (0.05, 5), (1, 5), True),
    "log10": (np.log10, (0.05, 5), (1, 5), True),
    "log1p": (np.log1p, (-0.9, 5), (0, 5), True),
    "sqrt": (np.sqrt, (0, 5), (0, 5), True),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.05, 5), (1, 5), True),
    "sin": (np.sin, (-3, 3), (-3, 3), True),
    "cos": (np.cos, (-3, 3), (-3, 3), True),
    "tan": (np.tan, (-1.4, 1.4), (-1, 1), True),
    "asin": (np.arcsin, (-0.99, 0.99), (-1, 1), True),
    "acos": (np.arccos, (-0.99, 0.99), (-1, 1), True),
    "atan": (np.arctan, (-3, 3), (-3, 3), True),
    "sinh": (np.sinh, (-3, 3), (-3, 3), True),
    "cosh": (np.cosh, (-3, 3), (-3, 3), True),
    "tanh": (np.tanh, (-3, 3), (-3, 3), True),
    "asinh": (np.arcsinh, (-3, 3), (-3, 3), True),
    "acosh": (np.arccosh, (1, 5), (1, 5), True),
    "atanh": (np.arctanh, (-0.99, 0.99), (0, 0), True),
    "sigmoid": (_sigmoid, (-5, 5), (-5, 5), True),
    "erf": (special.erf, (-3, 3), (-3, 3), False),
    "erfc": (special.erfc, (-3, 3), (-3, 3), False),
    "erfinv": (special.erfinv, (-0.99, 0.99), (-1, 1), False),
    "reciprocal": (lambda x: 1 / x, (0.2, 3), (1, 5), True),
    "silu": (lambda x: x * _sigmoid(x), (-5, 5), (-5, 5), True),
    "mish": (lambda x: x * np.tanh(np.log1p(np.exp(x))), (-5, 5), (-5, 5), False),
    "lgamma": (_lgamma, (0.1, 5), (1, 5), False),
    "digamma": (special.psi, (0.1, 5), (1, 5), False),
    "logit": (special.logit, (0.02, 0.98), (0, 1), False),
    "deg2rad": (np.deg2rad, (-360, 360), (-360, 360), False),
    "rad2deg": (np.rad2deg, (-7, 7), (-7, 7), False),
}

# name: (reference, dtypes it supports among DTYPES)
def _torch_sign(x):
    """PyTorch's sign: (x > 0) - (x < 0), so NaN and -0.0 give +0 (numpy keeps them)."""
    if x.dtype.kind == "f":
        return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)
    return np.sign(x)


SAME_UNARY = {
    "neg": (np.negative, {"float32", "float64", "int64", "int32", "complex64"}),
    "abs": (np.abs, set(DTYPES)),
    "sign": (lambda x: _torch_sign(x), {"float32", "float64", "int64", "int32", "bool"}),
    "floor": (np.floor, {"float32", "float64", "int64", "int32", "bool"}),
    "ceil": (np.ceil, {"float32", "float64", "int64", "int32", "bool"}),
    "trunc": (np.trunc, {"float32", "float64", "int64", "int32", "bool"}),
    "frac": (lambda x: x - np.trunc(x), {"float32", "float64"}),
    "square": (np.square, set(DTYPES)),
    "relu": (lambda x: np.maximum(x, np.zeros((), x.dtype)),
             {"float32", "float64", "int64", "int32"}),
    "positive": (np.positive, {"float32", "float64", "int64", "int32", "complex64"}),
    "conj_physical": (np.conj, set(DTYPES)),
    "bitwise_not": (np.invert, {"int64", "int32", "bool"}),
}

PRED_UNARY = {
    "isnan": (np.isnan, set(DTYPES)),
    "isinf": (np.isinf, set(DTYPES)),
    "isfinite": (np.isfinite, set(DTYPES)),
    "isposinf": (lambda x: np.isposinf(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool),
                 set(DTYPES) - {"complex64"}),
    "isneginf": (lambda x: np.isneginf(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool),
                 set(DTYPES) - {"complex64"}),
    "signbit": (lambda x: np.signbit(x) if x.dtype.kind != "b" else np.zeros(x.shape, bool),
                set(DTYPES) - {"complex64"}),
    "logical_not": (np.logical_not, set(DTYPES)),
}


def test_every_unary_op_is_covered():
    names = {n for n in E.unary_api if not n.endswith("_")} - set(E.ALIASES_UNARY) - {"conj"}
    assert names == set(FLOAT_UNARY) | set(SAME_UNARY) | set(PRED_UNARY)
    names_b = {n for n in E.binary_api if not n.endswith("_")} - set(E.ALIASES_BINARY)
    assert names_b == set(BINARY)


def _unary_input(name, shape, dtype):
    if name in FLOAT_UNARY:
        _, fdom, idom, _ = FLOAT_UNARY[name]
        return data(shape, dtype, *(fdom if category(dtype) >= 2 else idom))
    if dtype in INTS:
        return data(shape, dtype, -9, 9)
    return data(shape, dtype, -3, 3)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(FLOAT_UNARY))
def test_float_unary(name, dtype):
    ref, _, _, cplx = FLOAT_UNARY[name]
    fn = E.unary_api[name]
    assert unwrap(getattr(ember, name)) is unwrap(fn)
    if dtype == "complex64" and not cplx:
        with pytest.raises(RuntimeError, match="complex"):
            fn(ember.ones(2, dtype=ember.complex64))
        return
    want = to_float(dtype)
    for shape in SHAPES:
        a = _unary_input(name, shape, dtype)
        for label, t, v in layouts(a):
            msg = f"{name} {dtype} {shape} {label}"
            r = fn(t)
            check(r, _ref(ref, v.astype(_hi(dtype))).astype(want), want, msg=msg)
            check(getattr(t, name)(), values(r), want, msg=msg + " (method)")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(SAME_UNARY))
def test_same_dtype_unary(name, dtype):
    ref, ok = SAME_UNARY[name]
    fn = E.unary_api[name]
    if dtype not in ok:
        with pytest.raises(RuntimeError):
            fn(ember.from_numpy(data((3,), dtype)))
        return
    for shape in SHAPES:
        a = _unary_input(name, shape, dtype)
        for label, t, v in layouts(a):
            msg = f"{name} {dtype} {shape} {label}"
            if dtype == "bool" and name == "square":
                check(fn(t), v.astype(np.int64), "int64", msg=msg)  # square is pow(x, 2)
            elif dtype == "bool":
                want = np.logical_not(v) if name == "bitwise_not" else v
                check(fn(t), want, "bool", msg=msg)
            elif name == "abs" and dtype == "complex64":
                check(fn(t), np.abs(v.astype(np.complex128)).astype(np.float32), "float32",
                      msg=msg)
            elif dtype in FLOATS or dtype == "complex64":
                check(fn(t), _ref(ref, v.astype(_hi(dtype))).astype(dtype), dtype, msg=msg)
            else:
                check(fn(t), ref(v), dtype, msg=msg)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(PRED_UNARY))
def test_predicates(name, dtype):
    ref, ok = PRED_UNARY[name]
    fn = E.unary_api[name]
    if dtype not in ok:
        with pytest.raises(RuntimeError, match="complex"):
            fn(ember.ones(2, dtype=edt(dtype)))
        return
    specials = {"float32": [nan, inf, -inf, 0.0, -0.0, 1.5, -2.0],
                "float64": [nan, inf, -inf, 0.0, -0.0, 1e300, -1e-300],
                "complex64": [complex(nan, 0), complex(0, inf), complex(-inf, 1), 0j, 1 + 2j]}
    arrays = [data(s, dtype) for s in SHAPES]
    if dtype in specials:
        arrays.append(np.array(specials[dtype], dtype))
    for a in arrays:
        for label, t, v in layouts(a):
            check(fn(t), ref(v), "bool", msg=f"{name} {dtype} {a.shape} {label}")


def test_unary_aliases():
    for alias, target in E.ALIASES_UNARY.items():
        assert unwrap(getattr(ember, alias)) is unwrap(E.unary_api[target])
        assert unwrap(getattr(ember.Tensor, alias)) is unwrap(E.unary_api[target])
        if target + "_" in E.unary_api:
            assert unwrap(getattr(ember.Tensor, alias + "_")) is \
                unwrap(E.unary_api[target + "_"])
    x = ember.tensor([0.25, -0.5])
    check(x.arcsin(), np.arcsin(np.float32([0.25, -0.5])), "float32")
    check(ember.negative(x), np.float32([-0.25, 0.5]), "float32")
    check(ember.special_expit(x), special.expit(np.float32([0.25, -0.5])), "float32")


def test_unary_special_values_are_quiet():
    """IEEE results (log(0) = -inf, sqrt(-1) = nan, 1/0 = inf) come without numpy warnings."""
    v = np.array([nan, inf, -inf, 0.0, -0.0, -1.0, 1.0, 50.0, -50.0], np.float32)
    t = ember.from_numpy(v)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, (ref, _, _, _) in FLOAT_UNARY.items():
            check(E.unary_api[name](t), _ref(ref, v.astype(np.float64)).astype(np.float32),
                  "float32", rtol=1e-5, atol=1e-6, msg=name)
        for name, (ref, _) in SAME_UNARY.items():
            if name != "bitwise_not":
                check(E.unary_api[name](t), _ref(ref, v.astype(np.float64)).astype(np.float32),
                      "float32", msg=name)
        for name in ("exp_", "log_", "sqrt_", "reciprocal_", "rsqrt_", "erfinv_", "logit_"):
            y = t.clone()
            getattr(y, name)()
            check(y, _ref(FLOAT_UNARY[name[:-1]][0], v.astype(np.float64)).astype(np.float32),
                  "float32", msg=name)


def test_unary_float16_bfloat16():
    v = np.float32([0.5, -0.25, 2.0, 0.0, 1.5])
    for d, tol in ((ember.float16, 2e-3), (ember.bfloat16, 1e-2)):
        t = ember.from_numpy(v).to(d)
        for name in ("exp", "log1p", "sin", "tanh", "sigmoid", "erf", "sqrt", "silu"):
            r = E.unary_api[name](t)
            assert r.dtype is d, (name, d)
            want = _ref(FLOAT_UNARY[name][0], values(t.float()).astype(np.float64))
            np.testing.assert_allclose(values(r.float()), want, rtol=tol, atol=tol,
                                       equal_nan=True, err_msg=f"{name} {d}")
        check(ember.abs(t).float(), np.abs(values(t.float())), "float32")


# -- unary in-place ------------------------------------------------------------------------------
INPLACE_UNARY = sorted(n for n in E.unary_api if n.endswith("_"))


@pytest.mark.parametrize("name", INPLACE_UNARY)
def test_unary_inplace_float(name):
    op = name[:-1]
    fn_ = E.unary_api[name]
    assert unwrap(getattr(ember.Tensor, name)) is unwrap(fn_)
    if op == "bitwise_not":
        with pytest.raises(RuntimeError, match="integral"):
            ember.ones(2).bitwise_not_()
        return
    for dtype in FLOATS:
        a = _unary_input(op, (3, 4), dtype)
        want = values(E.unary_api[op](ember.from_numpy(a)))
        for label, t, v in layouts(a, ("contiguous", "transposed", "stepped")):
            base = t._storage
            before = t._version
            r = fn_(t)
            assert r is t
            assert t._storage is base
            assert t._version == before + 1, f"{name}: version not bumped"
            check(t, want, dtype, msg=f"{name} {dtype} {label}")
    # the stepped view's neighbours in its storage are untouched
    wide = ember.zeros(3, 9)
    from ember.ops.views import slice_op
    view = slice_op(wide, 1, 1, None, 2)
    view.copy_(ember.from_numpy(_unary_input(op, (3, 4), "float32")))
    fn_(view)
    check(slice_op(wide, 1, 0, None, 2), np.zeros((3, 5), np.float32), "float32")


@pytest.mark.parametrize("name", INPLACE_UNARY)
def test_unary_inplace_int(name):
    op = name[:-1]
    t = ember.from_numpy(_unary_input(op, (4,), "int64"))
    if op in FLOAT_UNARY:
        with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                               "output type Long"):
            getattr(t, name)()
        return
    if op == "frac":
        with pytest.raises(RuntimeError):
            t.frac_()
        return
    want = values(E.unary_api[op](t))
    v = t._version
    assert getattr(t, name)() is t
    check(t, want, "int64", msg=name)
    assert t._version == v + 1


def test_unary_inplace_errors():
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex"):
        ember.tensor([1 + 1j]).abs_()
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Bool"):
        ember.tensor([True, False]).square_()
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        ember.ones(1, 3).expand(2, 3).exp_()
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        -ember.tensor([True])


def test_unary_out():
    x = ember.tensor([0.5, 1.0, 2.0])
    o = ember.empty(3)
    assert ember.exp(x, out=o) is o
    check(o, np.exp(np.float32([0.5, 1.0, 2.0])), "float32")
    o = ember.empty(0)
    assert ember.sqrt(x, out=o) is o
    check(o, np.sqrt(np.float32([0.5, 1.0, 2.0])), "float32")
    o64 = ember.empty(3, dtype=ember.float64)
    ember.exp(x, out=o64)
    check(o64, np.exp(np.float32([0.5, 1.0, 2.0])).astype(np.float64), "float64", rtol=1e-6,
          atol=1e-7)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ember.exp(x, out=ember.empty(3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="shape"):
        ember.exp(x, out=ember.empty(4))
    b = ember.empty(3, dtype=ember.bool)
    assert ember.isnan(ember.tensor([nan, 0.0, 1.0]), out=b) is b
    check(b, [True, False, False], "bool")


def test_unary_type_errors():
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.exp(1.0)
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.neg([1, 2])


def test_conj():
    c = ember.tensor([1 + 2j, -3j])
    check(c.conj(), np.complex64([1 - 2j, 3j]), "complex64")
    check(ember.conj(c), np.complex64([1 - 2j, 3j]), "complex64")
    r = ember.tensor([1.0, 2.0])
    assert r.conj() is r and not r.is_conj() and r.resolve_conj() is r
    m = ember.tensor([[1 + 1j, 2], [3, 4 - 1j]])
    check(m.mH, np.conj(np.complex64([[1 + 1j, 2], [3, 4 - 1j]])).T, "complex64")
    check(m.H, np.conj(np.complex64([[1 + 1j, 2], [3, 4 - 1j]])).T, "complex64")


# -- unary ops with parameters -------------------------------------------------------------------
@pytest.mark.parametrize("decimals", [0, 1, 2, 3, -1, -2])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_round(dtype, decimals):
    a = data((3, 5), dtype, -500, 500)
    for label, t, v in layouts(a):
        r = ember.round(t, decimals=decimals)
        if dtype in INTS and decimals >= 0:
            check(r, v, dtype)
        else:
            check(r, np.round(v, decimals), dtype, msg=f"{label}")
        assert t.round(decimals=decimals).dtype is edt(dtype)
    y = ember.from_numpy(a.copy())
    v0 = y._version
    assert y.round_(decimals=decimals) is y
    assert y._version == v0 + 1
    check(y, np.round(a, decimals) if dtype in FLOATS or decimals < 0 else a, dtype)


def test_round_half_to_even_and_specials():
    v = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, nan, inf, -inf, -0.0], np.float32)
    check(ember.round(ember.from_numpy(v)), np.round(v), "float32")
    check(ember.from_numpy(np.float64([1.25, 1.35, -2.675])).round(decimals=1),
          np.round(np.float64([1.25, 1.35, -2.675]), 1), "float64")
    check(ember.round(ember.tensor(2.5)), np.float32(2.0), "float32")
    with pytest.raises(RuntimeError, match="complex"):
        ember.round(ember.tensor([1j]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "int64", "bool"])
def test_nan_to_num(dtype):
    if dtype in FLOATS:
        v = np.array([nan, inf, -inf, 0.0, 1.5, -2.0], dtype)
    elif dtype == "complex64":
        v = np.array([complex(nan, inf), complex(-inf, 1), 1 + 1j], dtype)
    else:
        v = data((6,), dtype)
    for kw in [{}, {"nan": 1.5}, {"posinf": 7.0}, {"neginf": -7.0, "nan": 2},
               {"posinf": 1e3, "neginf": 3}]:
        for label, t, vv in layouts(v, ("contiguous", "stepped")):
            want = np.nan_to_num(vv, nan=kw.get("nan", 0.0), posinf=kw.get("posinf"),
                                 neginf=kw.get("neginf"))
            check(ember.nan_to_num(t, **kw), want, dtype, msg=f"{kw} {label}")
            check(t.nan_to_num(**kw), want, dtype)
            y = t.clone()
            assert y.nan_to_num_(**kw) is y
            check(y, want, dtype)
    # the defaults are the dtype's extremes
    f = ember.nan_to_num(ember.tensor([inf, -inf, nan]))
    check(f, np.float32([np.finfo(np.float32).max, np.finfo(np.float32).min, 0]), "float32")


GELU_TANH_C = math.sqrt(2 / math.pi)


def _act_refs():
    return {
        "gelu": (ember.gelu, lambda x: 0.5 * x * (1 + special.erf(x / math.sqrt(2)))),
        "gelu_tanh": (lambda t: ember.gelu(t, approximate="tanh"),
                      lambda x: 0.5 * x * (1 + np.tanh(GELU_TANH_C * (x + 0.044715 * x ** 3)))),
        "softplus": (ember.softplus, lambda x: np.where(x > 20, x, np.log1p(np.exp(x)))),
        "softplus_b2_t1": (lambda t: ember.softplus(t, beta=2, threshold=1),
                           lambda x: np.where(2 * x > 1, x, np.log1p(np.exp(2 * x)) / 2)),
        "leaky_relu": (ember.leaky_relu, lambda x: np.where(x > 0, x, 0.01 * x)),
        "leaky_relu_0.2": (lambda t: ember.leaky_relu(t, 0.2),
                           lambda x: np.where(x > 0, x, 0.2 * x)),
        "elu": (ember.elu, lambda x: np.where(x > 0, x, np.expm1(x))),
        "elu_2": (lambda t: ember.elu(t, alpha=2.0), lambda x: np.where(x > 0, x, 2 * np.expm1(x))),
        "hardtanh": (ember.hardtanh, lambda x: np.clip(x, -1, 1)),
        "hardtanh_-0.5_0.25": (lambda t: ember.hardtanh(t, -0.5, 0.25),
                               lambda x: np.clip(x, -0.5, 0.25)),
    }


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(_act_refs()))
def test_activations(name, dtype):
    fn, ref = _act_refs()[name]
    for shape in SHAPES:
        a = data(shape, dtype, -4, 25 if name.startswith("softplus") else 4)
        for label, t, v in layouts(a):
            check(fn(t), _ref(ref, v.astype(np.float64)).astype(dtype), dtype,
                  msg=f"{name} {shape} {label}")


def test_activation_dtypes_and_errors():
    i = ember.tensor([-2, 0, 3])
    check(ember.gelu(i), (0.5 * np.float64([-2, 0, 3]) * (1 + special.erf(
        np.float64([-2, 0, 3]) / math.sqrt(2)))).astype(np.float32), "float32")
    assert ember.softplus(i).dtype is ember.float32
    check(ember.hardtanh(i), [-1, 0, 1], "int64")
    with pytest.raises(RuntimeError, match="floating-point"):
        ember.leaky_relu(i)
    with pytest.raises(RuntimeError, match="floating-point"):
        ember.elu(i)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        ember.hardtanh(ember.ones(2), 1.0, -1.0)
    with pytest.raises(RuntimeError, match="approximate"):
        ember.gelu(ember.ones(2), approximate="fast")
    with pytest.raises(RuntimeError, match="Bool"):
        ember.hardtanh(ember.tensor([True]))
    with pytest.raises(RuntimeError, match="complex"):
        ember.gelu(ember.tensor([1j]))
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        ember.relu(ember.tensor([True]))


# -- binary --------------------------------------------------------------------------------------
BINARY = {
    "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax,
    "fmin": np.fmin, "remainder": np.remainder, "fmod": np.fmod, "floor_divide": np.floor_divide,
    "pow": np.power, "atan2": np.arctan2, "hypot": np.hypot, "logaddexp": _logaddexp,
    "logaddexp2": np.logaddexp2,
    "copysign": np.copysign, "xlogy": special.xlogy, "eq": np.equal, "ne": np.not_equal,
    "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
    "bitwise_left_shift": np.left_shift, "bitwise_right_shift": np.right_shift,
}
FLOAT_BINARY = {"atan2", "hypot", "logaddexp", "logaddexp2", "copysign", "xlogy"}
TO_BOOL = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
INT_ONLY = {"bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
            "bitwise_right_shift"}
NO_COMPLEX = {"maximum", "minimum", "fmax", "fmin", "remainder", "fmod", "floor_divide", "lt",
              "le", "gt", "ge", "atan2", "hypot", "logaddexp2", "copysign", "xlogy"} | INT_ONLY
DIVISORS = {"remainder", "fmod", "floor_divide"}
# ops computed in the compute dtype for the reference (floor(a / b) in float32 differs from its
# float64 value when a / b lies within rounding of an integer)
EXACT_IN_COMPUTE = DIVISORS | TO_BOOL | INT_ONLY | {"maximum", "minimum", "fmax", "fmin",
                                                    "copysign"}
PAIRS = [("float32", "float32"), ("float64", "float64"), ("int64", "int64"), ("int32", "int32"),
         ("bool", "bool"), ("complex64", "complex64"), ("int64", "float32"), ("int32", "int64"),
         ("bool", "int32"), ("float32", "float64"), ("int32", "float64"), ("float32", "complex64"),
         ("int64", "complex64"), ("bool", "float32")]


def _spec(x):
    return ("tensor", x.dtype.name, x.ndim) if isinstance(x, ember.Tensor) else x


def binary_expect(name, a, b):
    """(compute dtype, result dtype) by PyTorch's rules, or None where the op refuses them; or
    'skip' for combinations PyTorch leaves undefined (bool remainder, bool shifts, bool pow)."""
    ct = result_dtype(_spec(a), _spec(b))
    cat = category(ct)
    if name in INT_ONLY and cat > 1 or name in NO_COMPLEX and cat == 3:
        return None
    if ct == "bool" and name in DIVISORS | {"pow", "bitwise_left_shift", "bitwise_right_shift"}:
        return "skip"
    if name in FLOAT_BINARY:
        ct = to_float(ct)
    return ct, ("bool" if name in TO_BOOL else ct)


def binary_inputs(name, sa, sb, da, db):
    if name == "pow":
        if category(da) <= 1 and category(db) <= 1:
            return data(sa, da, -3, 3), data(sb, db, 0, 3)
        if category(da) == 3 or category(db) == 3:
            return data(sa, da, -1, 1), data(sb, db, -1, 1)
        return data(sa, da, 0.1, 3), data(sb, db, -2, 2)
    if name in ("bitwise_left_shift", "bitwise_right_shift"):
        return data(sa, da, -20, 20), data(sb, db, 0, 5)
    if name == "xlogy":
        return data(sa, da, -3, 3), data(sb, db, 0.1, 4)
    return data(sa, da, -5, 5), data(sb, db, -5, 5, nonzero=name in DIVISORS)


def binary_reference(name, x, y, ct, rt):
    """numpy's result for operands ``x``, ``y`` (arrays or scalars) computed as PyTorch does:
    both cast to the compute dtype ``ct``, then returned as ``rt``."""
    ref = BINARY[name]
    if name in EXACT_IN_COMPUTE or category(ct) <= 1:
        xs, ys = np.asarray(x).astype(ct), np.asarray(y).astype(ct)
    else:
        hi = _hi(ct)
        xs, ys = np.asarray(x).astype(ct).astype(hi), np.asarray(y).astype(ct).astype(hi)
    with np.errstate(all="ignore"):
        return np.asarray(ref(xs, ys)).astype(rt)


def _tol(rt, name):
    if name in ("pow", "xlogy", "logaddexp") and rt in ("float32", "complex64"):
        return 2e-5, 1e-5
    return None, None


@pytest.mark.parametrize("da,db", PAIRS)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_tensor_tensor(name, da, db):
    fn = E.binary_api[name]
    assert unwrap(getattr(ember, name)) is unwrap(fn) and \
        unwrap(getattr(ember.Tensor, name)) is unwrap(fn)
    for sa, sb in BCAST:
        a, b = binary_inputs(name, sa, sb, da, db)
        ta, tb = ember.from_numpy(a), ember.from_numpy(b)
        exp = binary_expect(name, ta, tb)
        if exp == "skip":
            continue
        if exp is None:
            with pytest.raises(RuntimeError):
                fn(ta, tb)
            continue
        ct, rt = exp
        rtol, atol = _tol(rt, name)
        for la, xa, va in layouts(a):
            for lb, xb, vb in (layouts(b) if la == "contiguous" else [("contiguous", tb, b)]):
                msg = f"{name} {da}{list(sa)}[{la}] {db}{list(sb)}[{lb}]"
                if name in DIVISORS and category(ct) <= 1 and (vb == 0).any():
                    continue  # an expanded divisor built from a zero row: covered elsewhere
                want = binary_reference(name, va, vb, ct, rt)
                check(fn(xa, xb), want, rt, rtol, atol, msg=msg)
                check(getattr(xa, name)(xb), want, rt, rtol, atol, msg=msg + " (method)")


SCALARS = [2, -3, 2.5, True, 1.5 - 2j, 0.0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_tensor_scalar(name, dtype):
    fn = E.binary_api[name]
    for s in SCALARS:
        for shape in [(3, 4), (), (0,)]:
            a = binary_inputs(name, shape, (), dtype, "float32")[0]
            t = ember.from_numpy(a)
            for x, y, order in ((t, s, "ts"), (s, t, "st")):
                msg = f"{name} {dtype}{list(shape)} {s!r} {order}"
                exp = binary_expect(name, x, y)
                if exp == "skip":
                    continue
                if exp is None:
                    with pytest.raises(RuntimeError):
                        fn(x, y)
                    continue
                ct, rt = exp
                xv, yv = (a, s) if order == "ts" else (s, a)
                if name == "pow" and category(ct) <= 1 and order == "ts" and s < 0:
                    with pytest.raises(RuntimeError, match="Integers to negative integer powers "
                                                           "are not allowed."):
                        fn(x, y)
                    continue
                if name in DIVISORS and category(ct) <= 1 and (
                        (order == "ts" and s == 0) or (order == "st" and (a == 0).any())):
                    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
                        fn(x, y)
                    continue
                if name in ("bitwise_left_shift", "bitwise_right_shift") and (
                        order == "ts" and s < 0 or order == "st" and (a < 0).any()):
                    continue  # negative shift counts are undefined
                if name == "pow" and category(ct) <= 1 and order == "st" and (a < 0).any():
                    yv = np.abs(a)
                    y = ember.from_numpy(yv)
                rtol, atol = _tol(rt, name)
                check(fn(x, y), binary_reference(name, xv, yv, ct, rt), rt, rtol, atol, msg=msg)


def test_binary_aliases():
    for alias, target in E.ALIASES_BINARY.items():
        assert unwrap(getattr(ember, alias)) is unwrap(E.binary_api[target])
        assert unwrap(getattr(ember.Tensor, alias)) is unwrap(E.binary_api[target])
        assert unwrap(getattr(ember.Tensor, alias + "_")) is unwrap(E.binary_api[target + "_"])


def test_numpy_scalars_are_python_scalars():
    """numpy scalars behave as the Python numbers they hold (weakly typed), both sides."""
    h = ember.tensor([1.0, 2.0], dtype=ember.float16)
    assert (h + np.float64(2.0)).dtype is ember.float16
    i = ember.tensor([1, 2], dtype=ember.int32)
    r = i * np.int64(3)
    check(r, np.int32([3, 6]), "int32")
    check(i + np.float32(0.5), np.float32([1.5, 2.5]), "float32")
    check(ember.tensor([True, False]) & np.bool_(True), [True, False], "bool")
    r = np.float32(2.0) * ember.tensor([1.0, 3.0])
    assert isinstance(r, ember.Tensor)
    check(r, np.float32([2.0, 6.0]), "float32")
    check(np.int64(10) - i, np.int32([9, 8]), "int32")
    check(i == np.int64(2), [False, True], "bool")
    check(ember.where(ember.tensor([True, False]), np.float64(1.0), i), np.float32([1, 2]),
          "float32")
    check(ember.clamp(i, np.int64(2)), np.int32([2, 2]), "int32")


# -- the result type of mixed operands -----------------------------------------------------------
MIXED = [
    # (a, b, expected dtype of a + b)
    (("int64", (3,)), 2.5, "float32"),
    (("int32", (3,)), 2, "int32"),
    (("int32", (3,)), True, "int32"),
    (("bool", (3,)), 2, "int64"),
    (("bool", (3,)), 2.5, "float32"),
    (("bool", (3,)), True, "bool"),
    (("float64", (3,)), 2.5, "float64"),
    (("float32", (3,)), 1j, "complex64"),
    (("float64", (3,)), 1j, "complex128"),
    (("int64", (3,)), 1j, "complex64"),
    (("int32", (3,)), ("int64", ()), "int32"),
    (("int32", (3,)), ("float64", ()), "float64"),
    (("float32", (3,)), ("float64", ()), "float32"),
    (("float32", (3,)), ("complex128", ()), "complex64"),
    (("bool", (3,)), ("int32", ()), "int32"),
    (("int32", ()), ("int64", ()), "int64"),
    (("int32", ()), 2.5, "float32"),
    (("uint8", (3,)), ("int8", (3,)), "int16"),
    (("int64", (3,)), ("float32", (3,)), "float32"),
    (("float16", (3,)), ("bfloat16", (3,)), "float32"),
]


def _operand(x):
    if isinstance(x, tuple):
        d, shape = x
        return ember.ones(*shape, dtype=edt(d))
    return x


@pytest.mark.parametrize("a,b,want", MIXED)
def test_result_type_of_mixed_operands(a, b, want):
    x, y = _operand(a), _operand(b)
    assert (x + y).dtype is edt(want)
    assert (y + x).dtype is edt(want)
    assert (x * y).dtype is edt(want)
    assert (x == y).dtype is ember.bool
    if category(want) < 3:
        assert ember.maximum(x, y).dtype is edt(want)
        assert ember.atan2(x, y).dtype is edt(to_float(want))


def test_division_dtypes():
    i = ember.tensor([1, 2, 3])
    assert (i / i).dtype is ember.float32
    assert (i / 2).dtype is ember.float32
    assert (2 / i).dtype is ember.float32
    assert ember.div(i, i, rounding_mode="floor").dtype is ember.int64
    assert ember.div(ember.tensor([True]), ember.tensor([True]), rounding_mode="trunc").dtype \
        is ember.int64
    assert (ember.tensor([1, 2], dtype=ember.int32) / ember.tensor(2.0, dtype=ember.float64)) \
        .dtype is ember.float64
    assert (ember.tensor([1.0]) / 2).dtype is ember.float32
    assert (i < 2).dtype is ember.bool and (i < i).dtype is ember.bool


# -- add / sub with alpha ------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("da,db", PAIRS)
def test_add_sub(op, da, db):
    fn = getattr(ember, op)
    ref = np.add if op == "add" else np.subtract
    for sa, sb in BCAST:
        a, b = data(sa, da), data(sb, db)
        ta, tb = ember.from_numpy(a), ember.from_numpy(b)
        ct = result_dtype(_spec(ta), _spec(tb))
        if op == "sub" and "bool" in (da, db):
            with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with "):
                fn(ta, tb)
            continue
        alphas = [1, 2, -1] if category(ct) <= 1 else [1, 2, 0.5, -1.5]
        if category(ct) == 3:
            alphas.append(1 - 2j)
        if ct == "bool":
            alphas = [1, True, False]
        for alpha in alphas:
            for la, xa, va in layouts(a):
                msg = f"{op} {da}{list(sa)}[{la}] {db}{list(sb)} alpha={alpha}"
                hi = _hi(ct) if category(ct) >= 2 else ct
                with np.errstate(all="ignore"):
                    if ct == "bool":
                        want = np.logical_or(va, np.logical_and(b, alpha))
                    else:
                        want = ref(va.astype(ct).astype(hi),
                                   np.asarray(b).astype(ct).astype(hi) * alpha).astype(ct)
                check(fn(xa, tb, alpha=alpha), want, ct, msg=msg)
                check(getattr(xa, op)(tb, alpha=alpha), want, ct, msg=msg)


def test_add_sub_scalars_and_alpha_rules():
    i = ember.tensor([1, 2, 3], dtype=ember.uint8)
    check(ember.add(i, 3, alpha=-1), np.uint8([254, 255, 0]), "uint8")  # wraps like the tensor
    check(ember.sub(i, 3), np.uint8([254, 255, 0]), "uint8")
    check(ember.add(ember.tensor([1, 2], dtype=ember.int8), 1000), np.int8([1, 2]) + np.int8(-24),
          "int8")
    check(ember.add(ember.tensor([1.0, 2.0]), 2, alpha=3), np.float32([7, 8]), "float32")
    check(ember.sub(5, ember.tensor([1.0, 2.0]), alpha=2), np.float32([3, 1]), "float32")
    check(ember.add(2.5, ember.tensor([1, 2])), np.float32([3.5, 4.5]), "float32")
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not "
                                           "be a floating point number"):
        ember.add(ember.tensor([1]), ember.tensor([1]), alpha=0.5)
    with pytest.raises(RuntimeError, match="boolean alpha only supported"):
        ember.add(ember.tensor([1.0]), ember.tensor([1.0]), alpha=True)
    with pytest.raises(RuntimeError, match="complex"):
        ember.add(ember.tensor([1.0]), ember.tensor([1.0]), alpha=1j)
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported"):
        ember.tensor([True]) - ember.tensor([False])
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        ember.tensor([1.0]) - ember.tensor([True])
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        ember.tensor([1.0]) - True
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported"):
        ember.tensor([True]).sub_(1)
    with pytest.raises(TypeError, match="at least one Tensor"):
        ember.add(1, 2)
    with pytest.raises(TypeError, match="expected a Tensor or a Python number, got str"):
        ember.add(ember.ones(2), "1")
    with pytest.raises(TypeError):
        ember.ones(2) + None


# -- division ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
@pytest.mark.parametrize("da,db", PAIRS)
def test_div(mode, da, db):
    for sa, sb in BCAST:
        a, b = data(sa, da, -9, 9), data(sb, db, -4, 4, nonzero=True)
        ta, tb = ember.from_numpy(a), ember.from_numpy(b)
        ct = result_dtype(_spec(ta), _spec(tb))
        if mode is not None and category(ct) == 3:
            with pytest.raises(RuntimeError, match="complex"):
                ember.div(ta, tb, rounding_mode=mode)
            continue
        if mode is None:
            ct = to_float(ct)
        elif ct == "bool":
            ct = "int64"
        for la, xa, va in layouts(a):
            msg = f"div[{mode}] {da}{list(sa)}[{la}] {db}{list(sb)}"
            if mode is None:
                hi = _hi(ct)
                want = (va.astype(ct).astype(hi) / b.astype(ct).astype(hi)).astype(ct)
            elif category(ct) <= 1:
                q = np.floor_divide(va.astype(ct), b.astype(ct))
                if mode == "trunc":
                    q = q + ((np.remainder(va.astype(ct), b.astype(ct)) != 0) &
                             ((va < 0) != (b < 0)))
                want = q.astype(ct)
            else:
                with np.errstate(all="ignore"):
                    qq = va.astype(ct) / b.astype(ct)
                want = (np.trunc(qq) if mode == "trunc" else np.floor_divide(
                    va.astype(ct), b.astype(ct))).astype(ct)
            check(ember.div(xa, tb, rounding_mode=mode), want, ct, msg=msg)
            check(xa.div(tb, rounding_mode=mode), want, ct, msg=msg)
            if mode is None:
                check(xa / tb, want, ct, msg=msg)
                check(ember.true_divide(xa, tb), want, ct, msg=msg)
                check(ember.divide(xa, tb), want, ct, msg=msg)
            elif mode == "floor" and category(ct) <= 1:
                check(xa // tb, want, ct, msg=msg)


def test_div_scalars_and_errors():
    t = ember.tensor([7, -7, 5, -5])
    check(ember.div(t, 2, rounding_mode="trunc"), np.int64([3, -3, 2, -2]), "int64")
    check(ember.div(t, 2, rounding_mode="floor"), np.int64([3, -4, 2, -3]), "int64")
    check(ember.div(t, 2.0, rounding_mode="floor"), np.float32([3, -4, 2, -3]), "float32")
    check(ember.div(7, ember.tensor([2, -2]), rounding_mode="trunc"), np.int64([3, -3]), "int64")
    check(ember.div(ember.tensor([7.5, -7.5]), 2, rounding_mode="trunc"), np.float32([3, -3]),
          "float32")
    check(10 / ember.tensor([4, 5]), np.float32([2.5, 2.0]), "float32")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.div(t, 0, rounding_mode="floor")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.div(t, ember.tensor([1, 0, 1, 1]), rounding_mode="trunc")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        t // 0
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        t % ember.tensor([1, 2, 0, 1])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        ember.fmod(t, 0)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        7 // ember.tensor([0, 1])
    with pytest.raises(RuntimeError, match="rounding_mode"):
        ember.div(t, 2, rounding_mode="round")
    # float division by zero is IEEE, quietly
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(ember.tensor([1.0, -1.0, 0.0]) / 0, np.float32([inf, -inf, nan]), "float32")
        check(t / 0, np.float32([inf, -inf, inf, -inf]), "float32")
        check(ember.div(ember.tensor([1.0, -1.0]), 0.0, rounding_mode="floor"),
              np.float32([inf, -inf]), "float32")
        check(ember.tensor([1.0, 0.0]) // 0.0, np.float32([inf, nan]), "float32")
        check(ember.remainder(ember.tensor([1.0]), 0.0), np.float32([nan]), "float32")


def test_binary_special_values_are_quiet():
    v = np.array([nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, 3e38], np.float32)
    a, b = np.meshgrid(v, v)
    ta, tb = ember.from_numpy(np.ascontiguousarray(a)), ember.from_numpy(np.ascontiguousarray(b))
    with np.errstate(all="ignore"):
        quotient, product = (a.astype(np.float64) / b).astype(np.float32), a * b
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in sorted(BINARY):
            if name in INT_ONLY:
                continue
            ct, rt = binary_expect(name, ta, tb)
            check(E.binary_api[name](ta, tb), binary_reference(name, a, b, ct, rt), rt,
                  msg=name)
        check(ember.div(ta, tb), quotient, "float32")
        y = ta.clone()
        y.mul_(tb)
        check(y, product, "float32")


# -- pow -----------------------------------------------------------------------------------------
def test_pow_integer_rules():
    t = ember.tensor([2, -2, 1, -1, 0, 3])
    with pytest.raises(RuntimeError, match="^Integers to negative integer powers are not "
                                           "allowed.$"):
        t ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        ember.pow(t, -2)
    with pytest.raises(RuntimeError, match="Integers to negative integer powers"):
        t.pow_(-1)
    # a tensor of negative exponents is allowed: a ** -n is 1, +-1 or 0 (integer division)
    e = ember.tensor([-1, -1, -2, -3, -1, 2])
    check(t ** e, np.int64([0, 0, 1, -1, 0, 9]), "int64")
    check(2 ** ember.tensor([-1, 0, 3]), np.int64([0, 1, 8]), "int64")
    check(ember.tensor([-1, -1]) ** ember.tensor(-3), np.int64([-1, -1]), "int64")
    check(t ** 2, np.int64([4, 4, 1, 1, 0, 9]), "int64")
    with np.errstate(all="ignore"):
        roots, inverses = np.sqrt(np.float32([2, -2, 1, -1, 0, 3])), 1 / np.float32([2, -2, 1,
                                                                                    -1, 0, 3])
    check(t ** 0.5, roots, "float32")
    check(t ** -1.0, inverses, "float32")
    check(2.0 ** ember.tensor([-1, 2]), np.float32([0.5, 4.0]), "float32")
    check(ember.tensor([1.5, 2.0]) ** 2, np.float32([2.25, 4.0]), "float32")
    check(ember.tensor([4.0]) ** ember.tensor([0.5]), np.float32([2.0]), "float32")
    check(ember.tensor([2 + 1j]) ** 2, np.complex64([(2 + 1j) ** 2]), "complex64")


def test_integer_overflow_wraps():
    i8 = ember.tensor([100, -100], dtype=ember.int8)
    check(i8 + i8, np.int8([-56, 56]), "int8")
    check(i8 * 3, np.int8([100, -100]) * np.int8(3), "int8")
    check(ember.tensor([2 ** 62]) * 4, np.int64([0]), "int64")


# -- where / clamp -------------------------------------------------------------------------------
@pytest.mark.parametrize("da,db", PAIRS)
def test_where(da, db):
    for sc, sa, sb in [((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), (3, 4)), ((), (2, 3), (3,)),
                       ((2, 3), (), ()), ((0, 3), (3,), (1,))]:
        c, a, b = data(sc, "bool"), data(sa, da), data(sb, db)
        ta, tb = ember.from_numpy(a), ember.from_numpy(b)
        want_dt = result_dtype(_spec(ta), _spec(tb))
        want = np.where(c, a.astype(want_dt), b.astype(want_dt))
        for lc, tc, vc in layouts(c):
            for la, xa, va in layouts(a, ("contiguous", "transposed", "stepped")):
                w = np.where(vc, va.astype(want_dt), b.astype(want_dt))
                check(ember.where(tc, xa, tb), w, want_dt, msg=f"where {lc} {la}")
        check(ta.where(ember.from_numpy(c), tb), want, want_dt)


def test_where_scalars_and_errors():
    c = ember.tensor([True, False, True])
    check(ember.where(c, 1.5, 2), np.float32([1.5, 2, 1.5]), "float32")
    check(ember.where(c, 1, 2), np.int64([1, 2, 1]), "int64")
    check(ember.where(c, True, False), [True, False, True], "bool")
    check(ember.where(c, ember.tensor([1, 2, 3], dtype=ember.int32), 0.5),
          np.float32([1, 0.5, 3]), "float32")
    check(ember.where(c, ember.tensor([1, 2, 3], dtype=ember.int32), 7), np.int32([1, 7, 3]),
          "int32")
    check(ember.where(c, ember.tensor(5.0, dtype=ember.float64), ember.tensor([1, 2, 3])),
          np.float64([5, 2, 5]), "float64")
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, but "
                                           "got a tensor with dtype Float"):
        ember.where(ember.tensor([1.0]), 1, 2)
    with pytest.raises(RuntimeError, match="where"):
        ember.where(ember.ones(3, dtype=ember.bool), ember.ones(2), ember.ones(2))
    with pytest.raises(RuntimeError, match="where"):
        ember.where(ember.ones(2, 1, dtype=ember.bool), ember.ones(3), ember.ones(4))
    o = ember.empty(3)
    assert ember.where(c, 1.0, 0.0, out=o) is o
    check(o, np.float32([1, 0, 1]), "float32")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_clamp_scalar_bounds(dtype):
    a = data((3, 5), dtype, -6, 6)
    for lo, hi in [(-2, 3), (-2, None), (None, 3), (-1.5, 2.5), (None, 0.5), (4, -4), (2.5, 2.5)]:
        for la, t, v in layouts(a):
            ops = [t] + [x for x in (lo, hi) if x is not None]
            want_dt = result_dtype(_spec(t), ops[1]) if len(ops) == 2 else \
                result_dtype(("tensor", result_dtype(_spec(t), ops[1]), 2), ops[2])
            w = v.astype(want_dt)
            if lo is not None:
                w = np.maximum(w, np.asarray(lo).astype(want_dt))
            if hi is not None:
                w = np.minimum(w, np.asarray(hi).astype(want_dt))
            msg = f"clamp({lo}, {hi}) {dtype} {la}"
            check(ember.clamp(t, lo, hi), w, want_dt, msg=msg)
            check(ember.clip(t, min=lo, max=hi), w, want_dt, msg=msg)
            check(t.clamp(lo, hi), w, want_dt, msg=msg)
            if lo is not None and hi is None:
                check(ember.clamp_min(t, lo), w, want_dt, msg=msg)
            if hi is not None and lo is None:
                check(t.clamp_max(hi), w, want_dt, msg=msg)
            if la == "expanded":
                continue
            y = t.clone() if la == "contiguous" else t
            if want_dt != dtype:
                with pytest.raises(RuntimeError, match="result type Float can't be cast to the "
                                                       "desired output type"):
                    y.clamp_(lo, hi)
                continue
            v0 = y._version
            assert y.clamp_(lo, hi) is y
            assert y._version == v0 + 1
            check(y, w, dtype, msg=msg + " in-place")


def test_clamp_tensor_bounds():
    a = data((3, 4), "float32", -3, 3)
    lo, hi = data((4,), "float32", -2, 0), data((3, 1), "float64", 0, 2)
    ta, tl, th = ember.from_numpy(a), ember.from_numpy(lo), ember.from_numpy(hi)
    # bounds with dimensions take part in the promotion like any operand
    check(ember.clamp(ta, tl, th), np.minimum(np.maximum(a.astype(np.float64), lo), hi),
          "float64")
    assert ember.clamp(ta, th).dtype is ember.float64
    assert ember.clamp(ta, ember.tensor(0.0, dtype=ember.float64)).dtype is ember.float32
    check(ember.clamp(ta, min=tl), np.maximum(a, lo), "float32")
    check(ember.clamp(ta, max=ember.tensor(0.5)), np.minimum(a, np.float32(0.5)), "float32")
    # bounds broadcast the result
    check(ember.clamp(ember.tensor([0.0, 5.0]), ember.zeros(3, 1), ember.ones(3, 1)),
          np.tile(np.float32([0, 1]), (3, 1)), "float32")
    # min > max: the result is max (PyTorch's order)
    check(ember.clamp(ta, ember.ones(4), ember.zeros(4)), np.zeros((3, 4), np.float32), "float32")
    # NaN propagates from the input and from a bound
    check(ember.clamp(ember.tensor([nan, 1.0]), 0, 0.5), np.float32([nan, 0.5]), "float32")
    check(ember.clamp(ember.tensor([2.0]), ember.tensor([nan])), np.float32([nan]), "float32")
    y = ember.from_numpy(a.copy())
    y.clamp_(tl, ember.from_numpy(hi.astype(np.float32)))
    check(y, np.minimum(np.maximum(a, lo), hi.astype(np.float32)), "float32")
    i = ember.tensor([-5, 0, 5])
    check(ember.clamp(i, ember.tensor([-1, -1, -1], dtype=ember.int32), 2),
          np.int64([-1, 0, 2]), "int64")
    check(ember.clamp(i, ember.tensor([True, False, True])), np.int64([1, 0, 5]), "int64")


def test_clamp_errors():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        ember.clamp(ember.ones(2))
    with pytest.raises(RuntimeError, match="complex"):
        ember.clamp(ember.tensor([1j]), 0)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ember.tensor([1, 2]).clamp_(0.5)
    with pytest.raises(RuntimeError, match="output with shape"):
        ember.ones(3).clamp_(ember.zeros(2, 3))
    with pytest.raises(RuntimeError, match="clamp"):
        ember.clamp(ember.ones(3), ember.zeros(4))
    with pytest.raises(TypeError):
        ember.clamp(ember.ones(3), "0")


# -- in-place binary rules -----------------------------------------------------------------------
INPLACE_BINARY = sorted(n for n in E.binary_api if n.endswith("_")) + ["add_", "sub_", "div_"]


@pytest.mark.parametrize("name", INPLACE_BINARY)
def test_binary_inplace(name):
    op = name[:-1]
    op = E.ALIASES_BINARY.get(op, op)
    if op in INT_ONLY:
        dtype, lo, hi = "int64", 0, 5
    else:
        dtype, lo, hi = "float64", 0.5, 3
    a, b = data((3, 4), dtype, lo, hi), data((4,), dtype, lo, hi, nonzero=True)
    method = getattr(ember.Tensor, name)
    out_of_place = getattr(ember, op)
    for la, t, v in layouts(a, ("contiguous", "transposed", "stepped")):
        want = out_of_place(ember.from_numpy(v.copy()), ember.from_numpy(b))
        if op in TO_BOOL:
            want = want.to(edt(dtype))  # the bool result is stored in self's dtype
        v0 = t._version
        r = method(t, ember.from_numpy(b))
        assert r is t
        assert t._version == v0 + 1
        check(t, values(want), dtype, msg=f"{name} {la}")
        # a Python scalar operand
        y = ember.from_numpy(v.copy())
        getattr(y, name)(2)
        check(y, values(out_of_place(ember.from_numpy(v.copy()), 2).to(edt(dtype))), dtype,
              msg=f"{name} scalar")
    # broadcasting must not change self's shape
    with pytest.raises(RuntimeError, match=r"output with shape \[4\] doesn't match the broadcast "
                                           r"shape \[3, 4\]"):
        method(ember.from_numpy(b), ember.from_numpy(a))
    # an expanded self would write one element several times
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        method(ember.from_numpy(b[:1]).expand(3, 4), ember.from_numpy(a))


@pytest.mark.parametrize("name", ["add_", "sub_", "mul_", "div_", "pow_", "remainder_",
                                  "maximum_", "atan2_", "floor_divide_", "hypot_"])
def test_inplace_result_type_must_cast(name):
    i = ember.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output "
                                           "type Long"):
        getattr(i, name)(ember.tensor([1.5, 2.5, 1.0]))
    if name not in ("atan2_", "hypot_", "div_"):
        with pytest.raises(RuntimeError, match="result type Float can't be cast"):
            getattr(i, name)(1.5)
    f = ember.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="result type ComplexFloat can't be cast to the "
                                           "desired output type Float"):
        f.add_(1j) if name != "add_" else f.mul_(ember.tensor([1j, 1j]))
    # an int operand into a float tensor is fine
    getattr(ember.tensor([4.0, 2.0]), name)(ember.tensor([1, 2]))
    b = ember.tensor([True, False])
    with pytest.raises(RuntimeError, match="with a bool tensor is not supported" if name == "sub_"
                       else "can't be cast to the desired output type Bool"):
        getattr(b, name)(ember.tensor([2, 3]))


def test_inplace_mixed_dtypes_and_self_overlap():
    f = ember.tensor([1.0, 2.0, 3.0])
    f.add_(ember.tensor([1, 2, 3]))
    check(f, np.float32([2, 4, 6]), "float32")
    f.mul_(ember.tensor(2.0, dtype=ember.float64))
    check(f, np.float32([4, 8, 12]), "float32")
    c = ember.tensor([1 + 1j])
    c.mul_(2.5)
    check(c, np.complex64([2.5 + 2.5j]), "complex64")
    b = ember.tensor([True, False, True])
    b.logical_and_(ember.tensor([1.0, 1.0, 0.0]))
    check(b, [True, False, False], "bool")
    b = ember.tensor([True, False])
    b.mul_(ember.tensor([True, True]))
    check(b, [True, False], "bool")
    i = ember.tensor([5, 6, 7], dtype=ember.int32)
    i.add_(ember.tensor([1, 1, 1]))  # int64 operand, int32 self: same category, allowed
    check(i, np.int32([6, 7, 8]), "int32")
    i.lt_(7)
    check(i, np.int32([1, 0, 0]), "int32")
    # self and operand share memory through another layout
    m = ember.from_numpy(np.arange(9, dtype=np.float64).reshape(3, 3))
    m.add_(m.t())
    check(m, np.arange(9.0).reshape(3, 3) + np.arange(9.0).reshape(3, 3).T, "float64")
    m = ember.from_numpy(np.arange(9, dtype=np.float64).reshape(3, 3))
    m.copy_(m.t())
    check(m, np.arange(9.0).reshape(3, 3).T, "float64")


def test_inplace_through_views_changes_base():
    from ember.ops.views import slice_op
    base = ember.zeros(4, 6)
    col = slice_op(base, 1, 1, None, 2)  # columns 1, 3, 5
    v = base._version
    col.add_(1)
    col.select(0, 0).mul_(5)
    want = np.zeros((4, 6), np.float32)
    want[:, 1::2] = 1
    want[0, 1::2] = 5
    check(base, want, "float32")
    assert base._version == v + 2 and col._version == base._version
    base.T.sub_(ember.ones(6, 4))
    check(base, want - 1, "float32")


def test_out_argument():
    a, b = ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0])
    o = ember.empty(2)
    assert ember.mul(a, b, out=o) is o
    check(o, np.float32([3, 8]), "float32")
    o = ember.empty(0)
    assert ember.add(a, b, out=o) is o
    check(o, np.float32([4, 6]), "float32")
    o = ember.empty(2)
    ember.sub(a, b, alpha=2, out=o)
    check(o, np.float32([-5, -6]), "float32")
    ember.div(a, b, out=o)
    check(o, np.float32([1, 2]) / np.float32([3, 4]), "float32")
    ember.clamp(a, 1.5, out=o)
    check(o, np.float32([1.5, 2]), "float32")
    ember.round(ember.tensor([1.4, 2.6]), out=o)
    check(o, np.float32([1, 3]), "float32")
    ember.nan_to_num(ember.tensor([nan, 1.0]), out=o)
    check(o, np.float32([0, 1]), "float32")
    ob = ember.empty(2, dtype=ember.bool)
    assert ember.lt(a, b, out=ob) is ob
    check(ob, [True, True], "bool")
    of = ember.empty(2)
    ember.lt(a, 1.5, out=of)  # bool into float is a same-kind-or-up cast
    check(of, np.float32([1, 0]), "float32")
    # out may alias an input
    ember.add(a, b, out=a)
    check(a, np.float32([4, 6]), "float32")
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ember.add(a, b, out=ember.empty(2, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="shape"):
        ember.add(a, b, out=ember.empty(3))


# -- Python operators ----------------------------------------------------------------------------
def test_python_operators_float():
    a = data((3, 4), "float32", 0.5, 3)
    b = data((4,), "float32", 0.5, 3)
    ta, tb = ember.from_numpy(a), ember.from_numpy(b)
    f = np.float32
    with np.errstate(all="ignore"):
        cases = [
            (ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b), (ta / tb, a / b),
            (ta // tb, np.floor_divide(a, b)), (ta % tb, np.remainder(a, b)),
            (ta ** tb, (a.astype(np.float64) ** b).astype(f)), (-ta, -a), (+ta, a),
            (abs(-ta), a), (2 + ta, 2 + a), (2 - ta, 2 - a), (2 * ta, 2 * a),
            (2 / ta, (2 / a.astype(np.float64)).astype(f)), (2 // ta, np.floor_divide(f(2), a)),
            (2 % ta, np.remainder(f(2), a)), (2 ** ta, (2 ** a.astype(np.float64)).astype(f)),
            (2.5 - ta, f(2.5) - a), (ta - 2.5, a - f(2.5)), (ta ** 2, a ** 2),
            (ta ** 0.5, np.sqrt(a)),
        ]
    for i, (got, want) in enumerate(cases):
        check(got, want, "float32", msg=f"case {i}")
    for got, want in [(ta < tb, a < b), (ta <= 1.5, a <= 1.5), (ta > tb, a > b),
                      (ta >= tb, a >= b), (ta == tb, a == b), (ta != 2.0, a != 2),
                      (1.5 < ta, a > 1.5), (1.5 == ta, a == 1.5)]:
        check(got, want, "bool")
    assert (ta == None) is False  # noqa: E711 - the comparison PyTorch makes
    assert (ta != "x") is True


def test_python_operators_int_and_bool():
    a = data((3, 4), "int64", -20, 20)
    b = data((4,), "int64", 1, 5)
    ta, tb = ember.from_numpy(a), ember.from_numpy(b)
    for got, want in [(ta & tb, a & b), (ta | tb, a | b), (ta ^ tb, a ^ b), (~ta, ~a),
                      (ta << tb, a << b), (ta >> tb, a >> b), (3 & ta, 3 & a), (3 | ta, 3 | a),
                      (3 ^ ta, 3 ^ a), (1 << tb, 1 << b), (64 >> tb, 64 >> b), (ta << 2, a << 2),
                      (ta // tb, a // b), (ta % tb, a % b), (-7 // tb, -7 // b), (-7 % tb, -7 % b),
                      (2 - ta, 2 - a), (ta ** 2, a ** 2), (2 ** tb, 2 ** b), (ta * 3, a * 3)]:
        check(got, want, "int64")
    check(ta / tb, (a / b).astype(np.float32), "float32")
    check(7 / tb, (7 / b).astype(np.float32), "float32")
    m, n = data((5,), "bool"), data((5,), "bool")
    tm, tn = ember.from_numpy(m), ember.from_numpy(n)
    for got, want in [(tm & tn, m & n), (tm | tn, m | n), (tm ^ tn, m ^ n), (~tm, ~m),
                      (tm & True, m & True), (False | tm, m | False)]:
        check(got, want, "bool")
    check(tm + tn, m | n, "bool")  # bool + bool is logical or, as in PyTorch
    check(tm * tn, m & n, "bool")
    check(tm + 1, m.astype(np.int64) + 1, "int64")
    with pytest.raises(RuntimeError, match="only integral and bool"):
        ember.ones(2) & ember.ones(2)
    with pytest.raises(RuntimeError, match="only integral and bool"):
        ~ember.ones(2)


def test_inplace_python_operators_keep_identity():
    t = ember.tensor([1.0, 2.0, 4.0])
    ident = id(t)
    v = t._version
    t += 1
    t -= ember.tensor([1.0, 1.0, 1.0])
    t *= 3
    t /= 2
    t **= 2
    t //= 1
    t %= 5
    assert id(t) == ident
    assert t._version == v + 7
    check(t, np.float32([2, 4, 1]), "float32")
    i = ember.tensor([6, 5, 3])
    i &= 3
    i |= 8
    i ^= 1
    i <<= 1
    i >>= 2
    check(i, ((((np.int64([6, 5, 3]) & 3) | 8) ^ 1) << 1) >> 2, "int64")
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output "
                                           "type Long"):
        i += 0.5
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        i /= 2


def test_binary_type_errors():
    with pytest.raises(TypeError, match="at least one Tensor"):
        ember.mul(2, 3)
    with pytest.raises(TypeError, match="expected a Tensor or a Python number"):
        ember.mul(ember.ones(2), [1, 2])
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                                           r"tensor b \(4\)"):
        ember.ones(3) * ember.ones(4)
    with pytest.raises(RuntimeError, match="mul"):
        ember.mul(ember.ones(2, 3), ember.ones(3, 2))


# -- results are fresh tensors -------------------------------------------------------------------
def test_results_do_not_alias_inputs():
    a = ember.tensor([1.0, 2.0])
    for r in (a + 0.0, a * 1.0, ember.positive(a), ember.floor(ember.tensor([1, 2])),
              ember.clamp(a, -10, 10), ember.round(ember.tensor([1, 2])),
              ember.nan_to_num(ember.tensor([1, 2])), ember.sign(ember.tensor([True])),
              ember.abs(ember.tensor([True])), ember.relu(a)):
        assert r._storage is not a._storage
        before = values(a)
        r.add_(1) if r.dtype is not ember.bool else r.logical_not_()
        check(a, before, "float32")


# -- optional: compare with PyTorch --------------------------------------------------------------
def test_against_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    def tfn(name):
        for mod in (torch, F, torch.special):
            if hasattr(mod, name):
                return getattr(mod, name)
        return torch.special.expit

    def both(fn_e, fn_t, *args):
        ea = [ember.from_numpy(x.copy()) if isinstance(x, np.ndarray) else x for x in args]
        ta = [torch.from_numpy(x.copy()) if isinstance(x, np.ndarray) else x for x in args]
        try:
            rt = fn_t(*ta)
        except (RuntimeError, NotImplementedError, TypeError):
            return  # PyTorch refuses it: ember may be more permissive
        re = fn_e(*ea)
        rt = rt.resolve_conj()
        assert re.dtype.name == str(rt.dtype).replace("torch.", ""), (fn_e, args)
        check(re, rt.numpy(), rtol=1e-4, atol=1e-5, msg=f"{fn_e.__name__}")

    dts = ["float32", "float64", "int64", "int32", "bool", "complex64", "uint8", "int8"]
    for name in sorted(FLOAT_UNARY) + sorted(SAME_UNARY) + sorted(PRED_UNARY):
        for d in dts:
            both(E.unary_api[name], tfn(name), _unary_input(name, (3, 4), d))
    for name in sorted(BINARY):
        for d1 in dts:
            for d2 in dts[:5] + [2, 2.5, True]:
                sb = (4,) if isinstance(d2, str) else ()
                a, b = binary_inputs(name, (3, 4), sb, d1, d2 if isinstance(d2, str) else
                                     "float32")
                both(E.binary_api[name], tfn(name), a, b if isinstance(d2, str) else d2)
                both(E.binary_api[name], tfn(name), data((), d1, 1, 3), b if isinstance(
                    d2, str) else d2)
    for d1 in dts:
        for d2 in dts:
            a, b = data((3, 4), d1), data((4,), d2, nonzero=True)
            for mode in (None, "trunc", "floor"):
                both(lambda x, y: ember.div(x, y, rounding_mode=mode),
                     lambda x, y: torch.div(x, y, rounding_mode=mode), a, b)
            both(ember.add, torch.add, a, b)
            both(ember.sub, torch.sub, a, b)
            both(lambda x, y: ember.add(x, y, alpha=2), lambda x, y: torch.add(x, y, alpha=2),
                 a, b)
            both(lambda c, x, y: ember.where(c, x, y), torch.where, data((3, 1), "bool"), a, b)
            both(lambda x, y: ember.clamp(x, y, None), lambda x, y: torch.clamp(x, y, None),
                 a, b)


def test_logaddexp2_matches_numpy_and_finite_differences():
    a = ember.tensor([-3.0, 0.0, 1.5, 40.0, float("-inf")], dtype=ember.float64)
    b = ember.tensor([2.0, 0.0, -1.0, -40.0, float("-inf")], dtype=ember.float64)
    np.testing.assert_allclose(ember.logaddexp2(a, b).numpy(),
                               np.logaddexp2(a.numpy(), b.numpy()))
    x = ember.randn(4, dtype=ember.float64, requires_grad=True)
    y = ember.randn(4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(ember.logaddexp2, (x, y))
    assert ember.autograd.gradgradcheck(ember.logaddexp2, (x, y))
    assert type(ember.logaddexp2(x, y).grad_fn).__name__ == "Logaddexp2Backward0"
    with pytest.raises(RuntimeError, match="logaddexp2: complex inputs are not supported"):
        ember.logaddexp2(ember.tensor([1j]), ember.tensor([1j]))


def test_pow_scalar_special_cases_equal_torch_bit_for_bit():
    """x ** 2, 3, 0.5, -0.5, -1, -2 on a float tensor are products and roots, as ATen computes
    them (x ** 3 rounds differently from powf; (-0.0) ** -0.5 is -inf)."""
    torch = pytest.importorskip("torch")
    x = np.array([1.0000001, 3.3, -2.7, 1e20, np.inf, np.nan, -0.0, 0.0, 1e-30, -1e-20],
                 np.float32)
    for e in (2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 3, 2, 1.5, 4.0):
        want = torch.pow(torch.tensor(x), e).numpy()
        got = ember.pow(ember.tensor(x), e).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"exponent {e}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "complex64"])
def test_scalar_over_tensor_is_torchs_reciprocal_times_scalar(dtype):
    # torch's __rdiv__: self.reciprocal() * other, so its bits (not other / self's) and its node
    torch = pytest.importorskip("torch")
    vals = {"bool": [True, False], "int64": [3, 7, 0],
            "complex64": [1 + 2j, 3 - 1j]}.get(dtype, [3.0, 7.1, 0.0, -0.0, 1e-30, -2.3])
    for other in (2, 2.5, -1, 1 + 1j, np.float64(0.3)):
        want = other / torch.tensor(vals, dtype=getattr(torch, dtype))
        got = other / ember.tensor(vals, dtype=getattr(ember, dtype))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = ember.tensor([0.5, 2.0], requires_grad=True)
    assert (2 / x).grad_fn.name() == "MulBackward0"
