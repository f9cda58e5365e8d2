"""Elementwise entries, generated from the op tables of ``ember.ops.elementwise``."""
from __future__ import annotations

import itertools

import ember
from ember.ops import elementwise as E

from . import ALL_REAL, FLOATS, INTS, LAYOUTS, OpInfo, SampleInput, make_tensor

# input domains where the op is defined (and well conditioned for comparisons)
DOMAIN = {
    "log": (0.1, 5), "log2": (0.1, 5), "log10": (0.1, 5), "log1p": (-0.5, 5), "sqrt": (0.1, 5),
    "rsqrt": (0.1, 5), "asin": (-0.9, 0.9), "acos": (-0.9, 0.9), "atanh": (-0.9, 0.9),
    "acosh": (1.1, 5), "erfinv": (-0.9, 0.9), "logit": (0.1, 0.9), "reciprocal": (0.5, 3),
    "digamma": (0.5, 4), "lgamma": (0.5, 4), "tan": (-1.2, 1.2),
}
NOT_DIFFERENTIABLE = {"floor", "ceil", "trunc", "sign", "isnan", "isinf", "isfinite",
                      "isposinf", "isneginf", "signbit", "logical_not", "bitwise_not",
                      "round", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                      "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
                      "bitwise_left_shift", "bitwise_right_shift", "floor_divide", "remainder",
                      "fmod"}
INT_ONLY = {"bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
            "bitwise_right_shift"}
SHAPES = [(), (0,), (7,), (3, 4)]


def _unary_samples(name, low, high):
    def samples(dtype):
        seeds = itertools.count(1)
        for shape in SHAPES:
            layouts = LAYOUTS if len(shape) == 2 else ("contiguous",)
            for layout in layouts:
                seed = next(seeds)
                yield SampleInput(
                    f"{dtype}{list(shape)} {layout}",
                    lambda dev, s=seed, sh=shape, lay=layout, dt=dtype: (
                        (make_tensor(s, sh, dt, dev, low=low, high=high, layout=lay),), {}))
    return samples


def _glu_samples(dtype):
    """Halved along dim 0, the last dim (every layout), and an empty tensor."""
    cases = [((4, 3), 0, lay) for lay in LAYOUTS] + [((3, 4), -1, "transposed"),
                                                      ((2, 0, 6), 2, "contiguous")]
    for seed, (shape, dim, lay) in enumerate(cases, 500):
        yield SampleInput(f"{dtype}{list(shape)} dim={dim} {lay}",
                          lambda dev, s=seed, sh=shape, d=dim, la=lay, dt=dtype: (
                              (make_tensor(s, sh, dt, dev, low=-3.0, high=3.0, layout=la), d),
                              {}))


def _binary_samples(name, low, high, int_shift=False):
    pairs = [((3, 4), (3, 4)), ((3, 4), (4,)), ((), (5,)), ((2, 1, 3), (4, 1)), ((0, 3), (3,))]

    def samples(dtype):
        seeds = itertools.count(100)
        lo, hi = (0, 5) if int_shift else (low, high)
        for sa, sb in pairs:
            for layout in (("contiguous", "transposed") if len(sa) == 2 and sa == sb else
                           ("contiguous",)):
                a, b = next(seeds), next(seeds)
                yield SampleInput(
                    f"{dtype}{list(sa)} op {list(sb)} {layout}",
                    lambda dev, a=a, b=b, sa=sa, sb=sb, lay=layout, dt=dtype: (
                        (make_tensor(a, sa, dt, dev, low=lo, high=hi, layout=lay),
                         make_tensor(b, sb, dt, dev, low=lo, high=hi, layout=lay)), {}))
        s = next(seeds)
        scalar = 2 if dtype not in FLOATS else 1.5
        yield SampleInput(f"{dtype}[3, 4] op scalar",
                          lambda dev, s=s, dt=dtype: (
                              (make_tensor(s, (3, 4), dt, dev, low=lo, high=hi), scalar), {}))
    return samples


def _unary_dtypes(name, family):
    if name in INT_ONLY:
        return ("int64", "int32", "bool")
    if family == "float":
        return FLOATS + ("int64",)
    if name in ("frac",):
        return FLOATS
    if name in ("neg",):
        return FLOATS + INTS
    return ALL_REAL


def _binary_dtypes(name, family):
    if family == "int":
        return ("int64", "int32") + (("bool",) if "shift" not in name else ())
    if name in ("floor_divide", "remainder", "fmod"):
        return FLOATS + INTS
    if family in ("cmp", "logical"):
        return ALL_REAL
    if family == "float":
        return FLOATS
    return FLOATS + INTS


def _domain(name, dtype):
    lo, hi = DOMAIN.get(name, (-3.0, 3.0))
    if dtype in ("int64", "int32"):
        lo, hi = max(lo, -3), max(hi, 3)
        if name in ("log", "log2", "log10", "sqrt", "rsqrt", "reciprocal", "acosh", "logit",
                    "digamma", "lgamma", "erfinv", "atanh", "asin", "acos", "log1p"):
            lo, hi = 1, 3
    return lo, hi


def _build():
    ops = []
    for name, (family, _op, _op_) in E.unary_ops.items():
        dtypes = _unary_dtypes(name, family)
        low, high = _domain(name, "float32")
        diff = family != "pred" and name not in NOT_DIFFERENTIABLE
        ops.append(OpInfo(name, E.unary_api[name], _unary_samples(name, low, high),
                          dtypes=dtypes, covers=(name,), differentiable=diff))
        if _op_ is not None:
            ops.append(OpInfo(name + "_", _inplace(E.unary_api[name + "_"]),
                              _unary_samples(name, low, high),
                              dtypes=tuple(d for d in dtypes if d in FLOATS or family != "float"),
                              covers=(name + "_",), differentiable=False))
    for name, (family, _op, _op_) in E.binary_ops.items():
        low, high = (0.5, 3.0) if name in ("pow", "xlogy", "floor_divide", "remainder", "fmod") \
            else (-3.0, 3.0)
        dtypes = _binary_dtypes(name, family)
        samples = _binary_samples(name, low, high, int_shift="shift" in name)
        ops.append(OpInfo(name, E.binary_api[name], samples, dtypes=dtypes, covers=(name,),
                          differentiable=name not in NOT_DIFFERENTIABLE))
        ops.append(OpInfo(name + "_", _inplace_binary(E.binary_api[name + "_"]), samples,
                          dtypes=tuple(d for d in dtypes if family not in ("cmp", "logical")
                                       or d == "bool"),
                          covers=(name + "_",), differentiable=False))
    for name, fn, fn_ in (("add", E.add, E.add_), ("sub", E.sub, E.sub_)):
        samples = _binary_samples(name, -3.0, 3.0)
        ops.append(OpInfo(name, fn, samples, dtypes=FLOATS + INTS, covers=(name,)))
        ops.append(OpInfo(f"{name} alpha", lambda a, b, f=fn: f(a, b, alpha=2), samples,
                          dtypes=FLOATS + INTS, covers=(name,)))
        ops.append(OpInfo(name + "_", _inplace_binary(fn_), samples, dtypes=FLOATS + INTS,
                          covers=(name + "_",), differentiable=False))
    rsub_samples = _binary_samples("rsub", -3.0, 3.0)
    ops.append(OpInfo("rsub", lambda a, b: ember.rsub(a, b, alpha=2), rsub_samples,
                      dtypes=FLOATS + INTS, covers=("rsub",)))
    div_samples = _binary_samples("div", 0.5, 3.0)
    for mode in (None, "trunc", "floor"):
        ops.append(OpInfo(f"div rounding_mode={mode}",
                          lambda a, b, m=mode: E.div(a, b, rounding_mode=m), div_samples,
                          dtypes=FLOATS + INTS, covers=("div",), differentiable=mode is None))
    ops.append(OpInfo("div_", _inplace_binary(E.div_), div_samples, dtypes=FLOATS,
                      covers=("div_",), differentiable=False))
    ops.append(OpInfo("where", lambda c, a, b: E.where(c, a, b), _where_samples,
                      dtypes=FLOATS + INTS, covers=("where",)))
    clamp_samples = _unary_samples("clamp", -3.0, 3.0)
    ops.append(OpInfo("clamp", lambda x: E.clamp(x, -1, 2), clamp_samples,
                      dtypes=FLOATS + INTS, covers=("clamp",)))
    ops.append(OpInfo("clamp_min", lambda x: E.clamp_min(x, -1), clamp_samples,
                      dtypes=FLOATS + INTS, covers=("clamp_min",)))
    ops.append(OpInfo("clamp_max", lambda x: x.clamp_max(0.5), clamp_samples,
                      dtypes=FLOATS, covers=("clamp_max",)))
    ops.append(OpInfo("clamp_", _inplace(lambda x: E.clamp_(x, min=-1)), clamp_samples,
                      dtypes=FLOATS + INTS, covers=("clamp_",), differentiable=False))
    ops.append(OpInfo("round", lambda x: E.round(x, decimals=1), clamp_samples,
                      dtypes=FLOATS, covers=("round",), differentiable=False))
    ops.append(OpInfo("round_", _inplace(ember.Tensor.round_), clamp_samples, dtypes=FLOATS,
                      covers=("round_",), differentiable=False))
    ops.append(OpInfo("nan_to_num", lambda x: E.nan_to_num(ember.log(x), posinf=9.0),
                      _unary_samples("nan", -2.0, 2.0), dtypes=FLOATS,
                      covers=("nan_to_num",), differentiable=False))
    ops.append(OpInfo("nan_to_num_", _inplace(lambda x: ember.Tensor.nan_to_num_(x.log_())),
                      _unary_samples("nan", -2.0, 2.0), dtypes=FLOATS, covers=("nan_to_num_",),
                      differentiable=False))
    act = _unary_samples("act", -3.0, 3.0)
    for name, fn in (("gelu", E.gelu), ("gelu tanh", lambda x: E.gelu(x, approximate="tanh")),
                     ("softplus", lambda x: E.softplus(x, beta=2.0, threshold=3.0)),
                     ("leaky_relu", lambda x: E.leaky_relu(x, 0.2)), ("elu", E.elu),
                     ("hardtanh", lambda x: E.hardtanh(x, -1.0, 0.5))):
        ops.append(OpInfo(name, fn, act, dtypes=FLOATS, covers=(name.split()[0],)))
    from ember.ops.elementwise import activation as A
    for name, fn in (("threshold", lambda x: A.threshold(x, 0.5, -2.0)),
                     ("hardsigmoid", A.hardsigmoid), ("hardswish", A.hardswish),
                     ("selu", A.selu)):
        ops.append(OpInfo(name, fn, act, dtypes=FLOATS,
                          covers=("elu",) if name == "selu" else (name,)))
    # the activations torch records as their own node (ops/elementwise/activation_nodes.py)
    from ember.ops.elementwise import activation_nodes as N
    for name, fn in (("celu", lambda x: N.celu(x, 1.5)), ("log_sigmoid", N.log_sigmoid),
                     ("hardshrink", lambda x: N.hardshrink(x, 0.4)),
                     ("softshrink", lambda x: N.softshrink(x, 0.4))):
        ops.append(OpInfo(name, fn, act, dtypes=FLOATS, covers=(name,)))
    ops.append(OpInfo("glu", N.glu, _glu_samples, dtypes=FLOATS, covers=("glu",)))
    for name, fn_ in (("leaky_relu_", lambda x: A.leaky_relu_(x, 0.2)), ("elu_", A.elu_),
                      ("hardtanh_", lambda x: A.hardtanh_(x, -1.0, 0.5)),
                      ("threshold_", lambda x: A.threshold_(x, 0.5, -2.0)),
                      ("hardsigmoid_", A.hardsigmoid_), ("hardswish_", A.hardswish_),
                      ("celu_", lambda x: N.celu_(x, 1.5))):
        ops.append(OpInfo(name, _inplace(fn_), act, dtypes=FLOATS, covers=(name,),
                          differentiable=False))
    return ops


def _where_samples(dtype):
    for i, (sc, sa, sb) in enumerate([((3, 4), (3, 4), (3, 4)), ((3, 1), (4,), ()),
                                      ((0,), (0,), (1,))]):
        yield SampleInput(f"{dtype} cond{list(sc)} {list(sa)} {list(sb)}",
                          lambda dev, i=i, sc=sc, sa=sa, sb=sb, dt=dtype: (
                              (make_tensor(200 + i, sc, "bool", dev),
                               make_tensor(300 + i, sa, dt, dev),
                               make_tensor(400 + i, sb, dt, dev)), {}))


def _inplace(fn_):
    """In-place entries run on a fresh copy so the sample's input stays intact."""
    def run(x, *args):
        y = x.clone()
        out = fn_(y, *args)
        assert out is y, "in-place ops return self"
        return y
    return run


def _inplace_binary(fn_):
    def run(a, b):
        y = a.clone()
        out = fn_(y, b)
        assert out is y, "in-place ops return self"
        return y
    return run


OPS = _build()
