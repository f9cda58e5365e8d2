"""OpenCL kernels against the CPU reference: elementwise ops, copies, factories.

Each compiled kernel costs a PoCL build (0.2-1 s cold), so the tests share kernels: most ops are
checked on 1-D float32 inputs, and the layout tests (0-d, empty, broadcast, non-contiguous,
offsets) go through a few ops whose kernels exist anyway.
"""
import math

import numpy as np
import pytest

import ember
from ember.testing import assert_close

pytestmark = pytest.mark.skipif(not ember.opencl.is_available(),
                                reason=f"opencl unavailable: {ember.opencl.unavailable_reason()}")
HAS_FP64 = ember.opencl.is_available() and \
    ember.float64 in ember.opencl._backend.dtypes
RNG = np.random.default_rng(1234)


def both(*arrays):
    """Each host array as a (cpu, opencl) tensor pair."""
    return [(ember.tensor(a), ember.tensor(a, device="opencl")) for a in arrays]


def check(fn, *arrays, **kw):
    pairs = both(*arrays)
    expected = fn(*[c for c, _ in pairs])
    actual = fn(*[o for _, o in pairs])
    assert actual.device.type == "opencl"
    assert actual.dtype is expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape
    # the CPU's NaNs are part of the expected result (special values are checked on purpose)
    kw.setdefault("equal_nan", True)
    assert_close(actual, expected, check_device=False, **kw)
    return actual


def randn(*shape, dtype=np.float32, scale=2.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def randint(*shape, low=-5, high=6, dtype=np.int64):
    return RNG.integers(low, high, size=shape).astype(dtype)


# -- layouts ---------------------------------------------------------------------------------------
def test_layouts_zero_d_empty_broadcast_and_strided():
    check(lambda a, b: a + b, randn(), randn())                          # 0-d
    check(lambda a, b: a + b, randn(0, 3), randn(3))                     # empty
    check(lambda a, b: a + b, randn(2, 1, 3), randn(4, 1))               # broadcast both ways
    check(lambda a, b: a + b.t(), randn(3, 4), randn(4, 3))              # transposed
    check(lambda a, b: a.t() + b, randn(4, 3), randn(3, 4))
    check(lambda a, b: a[::2, 1:] + b if hasattr(a, "__getitem__") else
          a.narrow(1, 1, 3) + b, randn(3, 4), randn(3))
    check(lambda a, b: a.narrow(0, 1, 2).narrow(1, 1, 2) + b.expand(2, 2), randn(4, 5),
          randn(1, 2))                                                   # offsets + stride 0
    check(lambda a, b: a.permute(2, 0, 1) + b, randn(2, 3, 4), randn(4, 1, 3))
    check(lambda a, b: a.as_strided((3, 3), (1, 2), 1) + b, randn(12), randn(3, 3))


def test_dims_collapse_to_the_smallest_rank():
    from ember_opencl.codegen import collapse
    assert collapse((2, 3, 4), [((2, 3, 4), (12, 4, 1))]) == ([24], [[1]])
    assert collapse((2, 3, 4), [((2, 3, 4), (12, 4, 1)), ((4,), (1,))]) == \
        ([6, 4], [[4, 1], [0, 1]])
    assert collapse((1, 5, 1), [((1, 5, 1), (5, 1, 1))]) == ([5], [[1]])
    assert collapse((), [((), ())]) == ([], [[]])
    assert collapse((3, 4), [((3, 4), (1, 3))]) == ([3, 4], [[1, 3]])


def test_new_shapes_reuse_the_compiled_kernel():
    st = ember.opencl._backend._devices.state(0)
    a = ember.ones(5, device="opencl")
    a + a
    n = len(st.kernels)
    for k in (7, 100, 1000):
        x = ember.ones(k, device="opencl")
        x + x
        y = ember.ones(k, 3, device="opencl")
        y + y          # 2-D contiguous collapses to rank 1 too
    assert len(st.kernels) == n


# -- unary -----------------------------------------------------------------------------------------
UNARY_FLOAT = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
               "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
               "atanh", "sigmoid", "erf", "erfc", "erfinv", "reciprocal", "silu", "mish",
               "lgamma", "digamma", "logit", "deg2rad", "rad2deg", "neg", "abs", "sign",
               "floor", "ceil", "trunc", "frac", "square", "relu"]
DOMAIN = {"log": (0.1, 5), "log2": (0.1, 5), "log10": (0.1, 5), "log1p": (-0.5, 5),
          "sqrt": (0.1, 5), "rsqrt": (0.1, 5), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9),
          "atanh": (-0.9, 0.9), "acosh": (1.1, 5), "erfinv": (-0.99, 0.99),
          "logit": (0.05, 0.95), "reciprocal": (0.5, 3), "digamma": (-3.7, 4),
          "lgamma": (0.1, 6)}


@pytest.mark.parametrize("name", UNARY_FLOAT)
def test_unary_float32(name):
    lo, hi = DOMAIN.get(name, (-4, 4))
    x = RNG.uniform(lo, hi, 64).astype(np.float32)
    check(getattr(ember, name), x)


@pytest.mark.skipif(not HAS_FP64, reason="no cl_khr_fp64")
@pytest.mark.parametrize("name", ["exp", "tanh", "erfinv", "digamma", "lgamma", "logit"])
def test_unary_float64(name):
    lo, hi = DOMAIN.get(name, (-4, 4))
    check(getattr(ember, name), RNG.uniform(lo, hi, 64))


def test_unary_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-30], np.float32)
    for name in ("exp", "log", "sqrt", "sign", "relu", "abs", "erfinv", "sigmoid", "tanh"):
        check(getattr(ember, name), x)
    for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit",
                 "logical_not"):
        check(getattr(ember, name), x)


SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -2.5, 1e-30, 88.5,
                    -88.5, 3e38], np.float32)


def _check_special(fn, *arrays, zero_signs=True):
    """``check`` plus the place of every NaN and the sign of every zero (assert_close lets
    -0.0 pass for 0.0)."""
    actual = check(fn, *arrays).cpu().numpy()
    expected = fn(*[ember.tensor(a) for a in arrays]).numpy()
    if actual.dtype.kind == "f":
        assert (np.isnan(actual) == np.isnan(expected)).all()
        zero = expected == 0
        assert not zero_signs or (np.signbit(actual[zero]) == np.signbit(expected[zero])).all()


def test_bodies_made_from_pointwise_rules_keep_the_cpu_results_on_special_values():
    # these ops' eager kernels are their ops' pointwise rules (codegen.rule_body), for the dtype
    # kinds listed: NaN, infinities and signed zeros must come out as on the CPU
    from ember_opencl import math_unary
    floats = [SPECIAL] + ([SPECIAL.astype(np.float64)] if HAS_FP64 else [])
    ints = np.array([0, 1, -1, 7, -7, 2 ** 31 - 1, -2 ** 31], np.int64)
    for name, covers in math_unary.FROM_RULE.items():
        fn = getattr(ember, name)
        for x in floats:
            # relu(-0.0) is -0.0 here, in fused loops and in PyTorch; the CPU kernel gives +0.0
            _check_special(fn, x, zero_signs=name != "relu")
        if "i" in covers:
            _check_special(fn, ints.astype(np.int32))
    from ember.ops.elementwise.backward import tanh_backward_op
    a, b = (v.ravel() for v in np.meshgrid(SPECIAL, SPECIAL))
    F = ember.nn.functional
    for fn in (ember.mul, ember.pow, ember.eq, ember.ne, ember.lt, ember.le, ember.gt, ember.ge,
               ember.add, ember.sub, ember.div, lambda x, y: ember.add(x, y, alpha=2.5),
               lambda x, y: ember.sub(x, y, alpha=-0.5), lambda x, y: ember.where(x > y, x, y),
               lambda x, y: ember.addcmul(x, x, y, value=0.5),
               lambda x, y: ember.addcdiv(x, x, y, value=-3.0), tanh_backward_op):
        _check_special(fn, a, b)
    for fn in (lambda x: x * 0.5, lambda x: x - 2.0, lambda x: x < 0.5, lambda x: x / 3.0,
               lambda x: F.softplus(x, beta=2.0, threshold=1.5), lambda x: F.leaky_relu(x, -2.0)):
        _check_special(fn, SPECIAL)
    i, j = np.meshgrid(ints, ints)
    for fn in (ember.mul, ember.add, ember.sub, ember.lt, ember.eq,
               lambda x, y: ember.add(x, y, alpha=3), lambda x, y: ember.where(x > y, x, y)):
        _check_special(fn, i.ravel(), j.ravel())


def test_unary_integer_and_bool():
    i = randint(40)
    for name in ("neg", "abs", "sign", "floor", "square", "relu", "bitwise_not", "signbit",
                 "isnan", "isfinite", "logical_not"):
        check(getattr(ember, name), i)
    check(ember.exp, i)                                   # computes in the default float
    check(ember.sqrt, randint(40, low=0, high=9, dtype=np.int32))
    b = RNG.random(40) > 0.5
    for name in ("bitwise_not", "logical_not", "abs", "sign", "square"):
        check(getattr(ember, name), b)
    check(ember.abs, np.array([-128, -5, 0, 127], np.int8))    # abs(-128) wraps, like numpy


def test_unary_in_place_writes_through_views():
    host = randn(4, 6)
    for name in ("exp_", "neg_", "floor_"):
        c, o = ember.tensor(host), ember.tensor(host, device="opencl")
        getattr(c.t().narrow(0, 1, 3), name)()
        getattr(o.t().narrow(0, 1, 3), name)()
        assert_close(o, c, check_device=False)
        assert o._version == 1


# -- binary ----------------------------------------------------------------------------------------
BINARY = ["mul", "maximum", "minimum", "fmax", "fmin", "remainder", "fmod", "floor_divide",
          "pow", "atan2", "hypot", "logaddexp", "copysign", "xlogy", "eq", "ne", "lt", "le",
          "gt", "ge", "logical_and", "logical_or", "logical_xor"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_float32(name):
    a, b = randn(48), randn(48)
    if name in ("pow", "xlogy"):
        a, b = np.abs(a) + 0.1, b.clip(-3, 3)
        if name == "xlogy":
            a, b = b, a
    a[:4], b[:4] = [np.nan, 0.0, 1.0, np.inf], [1.0, np.nan, 0.0, 2.0]
    check(getattr(ember, name), a, b)


@pytest.mark.parametrize("name", ["mul", "maximum", "minimum", "remainder", "fmod",
                                  "floor_divide", "pow", "eq", "lt", "logical_xor",
                                  "bitwise_and", "bitwise_or", "bitwise_xor",
                                  "bitwise_left_shift", "bitwise_right_shift"])
def test_binary_int64(name):
    a, b = randint(48, low=-20, high=21), randint(48, low=1, high=7)
    b[::3] *= -1
    if name == "pow" or "shift" in name:
        b = np.abs(b)
    if "shift" in name:
        b[:2] = [63, 70]   # shifting by the width or more
    check(getattr(ember, name), a, b)


def test_binary_small_ints_wrap_and_bools():
    check(ember.mul, np.array([100, -100, 7], np.int8), np.array([3, 3, 3], np.int8))
    check(lambda a, b: a + b, np.array([250, 3], np.uint8), np.array([10, 4], np.uint8))
    check(lambda a, b: a << b, np.array([1, -1, 64], np.int8), np.array([7, 9, 1], np.int8))
    t, f = RNG.random(20) > 0.5, RNG.random(20) > 0.5
    for name in ("mul", "maximum", "eq", "logical_or", "bitwise_xor"):
        check(getattr(ember, name), t, f)
    check(lambda a, b: a + b, t, f)                      # bool + bool is logical or


def test_binary_mixed_dtypes_and_scalars():
    f, i = randn(3, 4), randint(3, 4)
    check(lambda a, b: a * b, f, i)                      # int64 x float32 -> float32
    check(lambda a, b: a / b, i, np.abs(i) + 1)          # true division of ints
    check(lambda a, b: a + b, i, f.astype(np.float64)) if HAS_FP64 else None
    check(lambda a: a + 1000, np.array([1, 2], np.int8))            # weak scalar wraps
    check(lambda a: 2.5 - a, f)
    check(lambda a: 7 // a, np.abs(i) + 1)
    check(lambda a: a ** 2, i)
    check(lambda a: 2 ** a, np.abs(i))
    check(lambda a: a < 0.5, i)


def test_add_sub_alpha_div_modes():
    a, b = randn(5, 6), randn(6)
    check(lambda x, y: ember.add(x, y, alpha=2.5), a, b)
    check(lambda x, y: ember.sub(x, y, alpha=-3), a, b)
    check(lambda x: ember.add(x, 3, alpha=2), randint(6))
    for mode in (None, "trunc", "floor"):
        check(lambda x, y: ember.div(x, y, rounding_mode=mode), a, b)
        check(lambda x, y: ember.div(x, y, rounding_mode=mode), randint(30),
              randint(30, low=1, high=5) * np.where(RNG.random(30) > 0.5, 1, -1))
    m = np.array([np.iinfo(np.int64).min, 7, -7], np.int64)
    check(lambda x: ember.div(x, -1, rounding_mode="floor"), m)      # no INT_MIN / -1 trap
    check(lambda x, y: x % y, m, np.array([-1, -1, 2], np.int64))


def test_integer_division_by_zero_raises_before_writing():
    a = ember.tensor([4, 5, 6], device="opencl")
    z = ember.tensor([1, 0, 2], device="opencl")
    for fn in (lambda: a // z, lambda: a % z, lambda: ember.fmod(a, z),
               lambda: ember.div(a, z, rounding_mode="trunc"), lambda: a // 0):
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn()
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a.floor_divide_(z)
    assert a.tolist() == [4, 5, 6]
    # a negative exponent *tensor* gives 1, -1 or 0 like the CPU and PyTorch (no error)
    assert (a ** ember.tensor([1, -1, 2], device="opencl")).tolist() == [4, 0, 36]
    assert ((-1) ** ember.tensor([-1, -2, 3], device="opencl")).tolist() == [-1, 1, -1]
    assert (ember.tensor([4.0], device="opencl") // 0).tolist() == [math.inf]


def test_binary_in_place_with_overlapping_operand():
    host = randn(4, 4)
    c, o = ember.tensor(host), ember.tensor(host, device="opencl")
    c.add_(c.t())
    o.add_(o.t())
    assert_close(o, c, check_device=False)
    c, o = ember.tensor(host), ember.tensor(host, device="opencl")
    c.mul_(2).sub_(ember.tensor(host[0]), alpha=2)
    o.mul_(2).sub_(ember.tensor(host[0], device="opencl"), alpha=2)
    assert_close(o, c, check_device=False)
    ci, oi = ember.tensor(randint(4)), None
    oi = ember.tensor(ci.numpy(), device="opencl")
    ci.eq_(2)
    oi.eq_(2)
    assert oi.tolist() == ci.tolist()


# -- where, clamp, round, nan_to_num, activations --------------------------------------------------
def test_where_clamp_round_nan_to_num():
    cond = RNG.random((3, 1)) > 0.5
    check(lambda c, a, b: ember.where(c, a, b), cond, randn(4), randn(3, 4))
    check(lambda c, a: ember.where(c, a, 0.5), cond, randn(3, 4))
    x = randn(30) * 3
    x[:3] = [np.nan, np.inf, -np.inf]
    check(lambda a: a.clamp(-1, 2), x)
    check(lambda a: a.clamp(min=0.5), x)
    check(lambda a, lo, hi: a.clamp(lo, hi), x, randn(30) - 2, randn(30) + 2)
    check(lambda a: a.clamp(max=3), randint(30))
    c, o = ember.tensor(x), ember.tensor(x, device="opencl")
    assert_close(o.clamp_(min=0), c.clamp_(min=0), check_device=False, equal_nan=True)
    for d in (0, 1, 2, -1):
        check(lambda a, d=d: ember.round(a, decimals=d), randn(40) * 50)
    check(lambda a: ember.round(a), np.array([0.5, 1.5, 2.5, -0.5], np.float32))
    check(lambda a: ember.round(a, decimals=-1), np.array([15, 25, -15, 3], np.int64))
    check(lambda a: ember.nan_to_num(a), x)
    check(lambda a: ember.nan_to_num(a, nan=1.0, posinf=9.0, neginf=-9.0), x)
    check(lambda a: ember.nan_to_num(a), randint(5))


def test_activations():
    x = randn(64) * 3
    check(ember.gelu, x)
    check(lambda a: ember.gelu(a, approximate="tanh"), x)
    check(lambda a: ember.softplus(a, beta=2.0, threshold=3.0), x)
    check(lambda a: ember.leaky_relu(a, 0.2), x)
    check(ember.elu, x)
    check(lambda a: ember.hardtanh(a, -1.0, 0.5), x)


# -- copies and conversions ------------------------------------------------------------------------
def test_to_numpy_gathers_non_contiguous_tensors():
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = ember.tensor(host, device="opencl")
    assert np.array_equal(t.t().cpu().numpy(), host.T)
    assert np.array_equal(t.narrow(1, 2, 3).cpu().numpy(), host[:, 2:5])
    assert np.array_equal(t[1].cpu().numpy() if hasattr(t, "__getitem__") else
                          t.select(0, 1).cpu().numpy(), host[1])
    assert np.array_equal(t.narrow(0, 1, 1).expand(3, 6).cpu().numpy(),
                          np.broadcast_to(host[1:2], (3, 6)))
    assert t.narrow(0, 0, 0).cpu().numpy().shape == (0, 6)
    assert ember.tensor(host[::-1, ::2], device="opencl").tolist() == host[::-1, ::2].tolist()


@pytest.mark.parametrize("target", ["float32", "int64", "int32", "bool", "uint8", "int8"])
def test_to_copy_converts_like_the_cpu(target):
    x = randn(3, 5) * 3
    x[0, :3] = [np.nan, -0.0, 2.7]
    d = getattr(ember, target)
    if target not in ("float32", "bool"):
        x[0, 0] = 1.0  # NaN -> int is undefined (numpy warns)
    check(lambda a: a.t().to(d), x)
    check(lambda a: a.to(d), randint(4, 3))
    check(lambda a: a.to(d), RNG.random((2, 3)) > 0.5)


def test_copy_into_strided_destination_with_conversion():
    src = randint(4, 3)
    for make in (lambda dev: ember.zeros(3, 4, dtype=ember.float32, device=dev).t(),
                 lambda dev: ember.zeros(4, 6, dtype=ember.float32, device=dev).narrow(1, 1, 3)):
        c, o = make("cpu"), make("opencl")
        c.copy_(ember.tensor(src))
        o.copy_(ember.tensor(src, device="opencl"))
        assert o.tolist() == c.tolist()
        o.copy_(ember.tensor(src * 2))            # from the CPU
        assert o.tolist() == (src * 2).astype(np.float32).tolist()
    o = ember.zeros(3, 4, device="opencl")
    o.copy_(ember.tensor([1.0, 2.0, 3.0, 4.0], device="opencl"))   # broadcast source
    assert o.tolist() == [[1.0, 2.0, 3.0, 4.0]] * 3
    o.copy_(o.t().contiguous().t())
    assert o.tolist() == [[1.0, 2.0, 3.0, 4.0]] * 3


def test_clone_contiguous_and_device_round_trip():
    host = randn(5, 4)
    t = ember.tensor(host, device="opencl")
    c = t.t().contiguous()
    assert c.is_contiguous() and np.array_equal(c.cpu().numpy(), host.T)
    assert np.array_equal(t.clone().cpu().numpy(), host)
    assert t.cpu().to("opencl").device is t.device


# -- factories -------------------------------------------------------------------------------------
def test_factories_match_the_cpu():
    for dt in ("float32", "int64", "int32", "bool", "uint8"):
        d = getattr(ember, dt)
        for fn in (lambda dev: ember.zeros(2, 3, dtype=d, device=dev),
                   lambda dev: ember.full((4,), 7, dtype=d, device=dev),
                   lambda dev: ember.full((2,), -3, dtype=d, device=dev),
                   lambda dev: ember.arange(1, 20, 3, dtype=d, device=dev),
                   lambda dev: ember.eye(3, 5, dtype=d, device=dev),
                   lambda dev: ember.linspace(-1, 3, 9, dtype=d, device=dev)):
            assert_close(fn("opencl"), fn("cpu"), check_device=False)
    for fn in (lambda dev: ember.arange(0.0, 2.0, 0.25, device=dev),
               lambda dev: ember.arange(10, 0, -3, device=dev),
               lambda dev: ember.linspace(0, 1, 1, device=dev),
               lambda dev: ember.linspace(2, 5, 0, device=dev),
               lambda dev: ember.full((3,), 2.7, dtype=ember.int64, device=dev),
               lambda dev: ember.full((3,), 300, dtype=ember.uint8, device=dev),
               lambda dev: ember.empty(2, 0, 3, device=dev),
               lambda dev: ember.eye(0, device=dev)):
        r, e = fn("opencl"), fn("cpu")
        assert r.shape == e.shape and r.dtype is e.dtype
        assert_close(r, e, check_device=False)


# -- reductions and matmul -------------------------------------------------------------------------
def test_reductions_over_any_dims_and_layouts():
    x = randn(3, 4, 5)
    for dims in (None, 0, 2, (0, 2), (1, 2)):
        for keepdim in (False, True):
            kw = {} if dims is None else {"dim": dims, "keepdim": keepdim}
            for name in ("sum", "mean", "amax", "amin"):
                check(lambda t, n=name, kw=kw: getattr(t, n)(**kw), x)
    check(lambda t: t.permute(2, 0, 1).sum((0, 2)), x)                # non-contiguous input
    check(lambda t: t.sum(), randn(1 << 18))                           # split into chunks
    check(lambda t: t.mean(0), randn(20000, 3))                        # many short columns
    check(lambda t: t.sum(0), np.zeros((0, 3), np.float32))            # empty: 0
    check(lambda t: t.mean(0), np.zeros((0, 3), np.float32))           # empty: nan
    check(lambda t: t.sum(), np.float32(2.5))                          # 0-d
    y = randn(50)
    y[7] = np.nan
    check(lambda t: t.amax(), y)
    check(lambda t: t.nansum(), y)
    check(lambda t: t.prod(1), RNG.uniform(0.5, 1.5, (10, 30)).astype(np.float32))
    check(lambda t: t.sum(), randint(100, dtype=np.int32))             # accumulates in int64
    check(lambda t: t.all(1), RNG.random((10, 30)) > 0.02)
    check(lambda t: t.any(), randint(10, 3))


def test_matmul_shapes_batches_and_strides():
    for sa, sb in (((5, 7), (7, 3)), ((7,), (7, 3)), ((5, 7), (7,)), ((7,), (7,)),
                   ((2, 1, 5, 7), (3, 7, 20)), ((33, 40), (40, 17)), ((4, 0), (0, 3))):
        check(lambda a, b: a @ b, randn(*sa), randn(*sb), rtol=1e-5, atol=1e-5)
    check(lambda a, b: a.t() @ b.t(), randn(7, 5), randn(3, 7), rtol=1e-5, atol=1e-5)
    check(lambda a, b: a @ b.expand(2, 6, 2), randint(2, 4, 6), randint(1, 6, 2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("exponent", [2, 3, 0.5, 2.0, 3.0, -0.5, -1, -2.0])
def test_power_by_a_constant_has_the_cpus_bits(exponent, dtype):
    """x ** 2, x ** 3, x ** 0.5, x ** -0.5, ... skip PoCL's slow pow() (as the pointwise rule
    renders them): the CPU's bits, special values included, forward and backward."""
    a = (np.random.default_rng(3).standard_normal(4099) * 3).astype(dtype)
    a[:5] = [np.nan, -0.0, 0.0, np.inf, -np.inf]
    g = np.random.default_rng(4).standard_normal(4099).astype(dtype)
    results = []
    for device in ("cpu", "opencl"):
        x = ember.tensor(a, device=device, requires_grad=True)
        y = x ** exponent
        y.backward(ember.tensor(g, device=device))
        results.append((y.detach().cpu().numpy(), x.grad.cpu().numpy()))
    (y_cpu, g_cpu), (y_cl, g_cl) = results
    np.testing.assert_array_equal(y_cl, y_cpu)
    in_place = ember.tensor(a, device="opencl").pow_(exponent)
    np.testing.assert_array_equal(in_place.cpu().numpy(), y_cpu)
    assert_close(ember.tensor(g_cl), ember.tensor(g_cpu), equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shapes", [((3000,), (3000,)), ((40, 1000), (1000,)),
                                    ((40, 1000), (1000, 1)), ((1000,), (1000, 1)),
                                    ((1, 7, 600), (600, 1)), ((3, 64, 100), (3, 100, 1)),
                                    ((64, 100), (5, 100, 1)), ((5, 1, 1), (5, 1, 300)),
                                    ((300,), (300, 20)), ((2, 1, 30), (4, 1, 30, 7))], ids=str)
def test_thin_products_are_parallel_reductions_equal_to_the_cpu(shapes, dtype):
    """A product with one output column or row (LBFGS's dots, matrix-vector products, a
    transposed convolution from 1x1) runs as mul + the parallel sum: the CPU's values and
    gradients within summation order, batch dims broadcast."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal(shapes[0]).astype(dtype)
    b = rng.standard_normal(shapes[1]).astype(dtype)
    tol = dict(rtol=1e-4, atol=1e-3) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-9)
    got, want = [], []
    for device, bucket in (("opencl", got), ("cpu", want)):
        x = ember.tensor(a, device=device, requires_grad=True)
        y = ember.tensor(b, device=device, requires_grad=True)
        if x.ndim == 2 and device == "opencl":
            x = x.t().contiguous().t()       # a column-major operand: read through its strides
        r = x @ y
        r.sum().backward()
        leaf_x = x if x.is_leaf else None
        bucket += [r.detach().cpu().numpy(), y.grad.cpu().numpy()]
        if leaf_x is not None:
            bucket.append(leaf_x.grad.cpu().numpy())
    assert got[0].shape == want[0].shape
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **tol)


def test_packed_gemm_operands_are_reused_until_their_storage_changes():
    # a transposed weight is packed for the tiled GEMM; the pack is kept for the next product
    # that reads the unchanged storage, and every in-place change (version counter) drops it
    from ember.runtime.registry import registry
    x = ember.randn(64, 72, device="opencl")
    w = ember.randn(60, 72, device="opencl", requires_grad=True)
    packs = registry.get("opencl").state_queue(x.device)[0].packed
    packs.clear()

    def check():
        got = (x @ w.t()).detach().cpu().numpy()
        want = x.cpu().numpy() @ w.detach().cpu().numpy().T
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    check()
    cached = len(packs)
    assert cached >= 1
    check()
    assert len(packs) == cached                      # the second product reused the pack
    changes = [lambda: w.add_(1), lambda: w.mul_(-0.5), lambda: w.copy_(ember.randn(60, 72)),
               lambda: w.uniform_(), lambda: w.detach().clamp_(-0.1, 0.1),
               lambda: w.__setitem__((slice(2, 4),), 3.0)]
    for change in changes:
        with ember.no_grad():
            change()
        check()
    opt = ember.optim.Adam([w], lr=0.1)
    (x @ w.t()).sum().backward()
    opt.step()
    check()
