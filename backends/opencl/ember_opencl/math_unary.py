"""C bodies of the unary ops (see ``codegen.Body``): ``r`` from ``x0``.

The semantics are the CPU backend's (numpy/scipy, i.e. PyTorch's): NaN-propagating relu,
sign(NaN) = NaN, predicates false for integers. scipy's special functions evaluate float32
inputs in double; so do ours where the device has fp64 (``W``, the widest float).

Ops with a pointwise rule are rendered from it (``codegen.rule_body``: ``FROM_RULE`` below, for
the dtype kinds given there); written here are the complex forms and the ops whose rule rounds
otherwise than the CPU reference: erf (evaluated in ``W`` here, in the compute dtype by the
rule), silu (``x * (1 / (1 + exp(-x)))`` here, ``x / (1 + exp(-x))`` by the rule), mish (a
stable softplus here), abs on integers, and gelu, elu and hardtanh below (``W`` erf, and
parameters the rule computes with in Python).
"""
from __future__ import annotations

import math

import numpy as np

from .codegen import P, X, Body, group, rule_body


def _w(ctx, v):
    """A literal of the wide float type W."""
    return repr(float(v)) + ("" if ctx.w == "double" else "f")


def _via_wide(fn):
    return lambda ctx: f"r = (CT){fn}((W)x0);"


def _float_only(expr):
    """Same-dtype ops that are the identity on integers and bools (floor, ceil, trunc)."""
    return lambda ctx: f"r = {expr};" if ctx.is_float else "r = x0;"


_BUILTIN = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos", "tan",
            "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh"]
#: op -> the dtype kinds whose body is the op's pointwise rule (identical results, measured on a
#: grid of special values against the hand-written bodies they replaced)
FROM_RULE = {**{name: "f" for name in ("exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt",
                                       "sin", "cos", "tan", "tanh", "rsqrt", "reciprocal",
                                       "sigmoid")},
             "neg": "fibc", "abs": "f", "square": "fib", "relu": "fib"}


def _erfinv_prelude(ctx):
    a = [0.886226899, -1.645349621, 0.914624893, -0.140543331]
    b = [-2.118377725, 1.442710462, -0.329097515, 0.012229801]
    c = [-1.970840454, -1.624906493, 3.429567803, 1.641345311]
    d = [3.543889200, 1.637067800]

    def L(v):
        return _w(ctx, v)
    newton = (f"x = x - (erf(x) - y) / ({L(2 / math.sqrt(math.pi))} * exp(-x * x));")
    # PyTorch's calc_erfinv: a rational first guess, then two Newton steps on erf
    return f"""
W ew_erfinv(W y) {{
  W ya = fabs(y);
  if (ya > 1) return NAN;
  if (ya == 1) return copysign((W)INFINITY, y);
  W x, z, num, dem;
  if (ya <= {L(0.7)}) {{
    z = y * y;
    num = ((({L(a[3])} * z + {L(a[2])}) * z + {L(a[1])}) * z + {L(a[0])});
    dem = (((({L(b[3])} * z + {L(b[2])}) * z + {L(b[1])}) * z + {L(b[0])}) * z + {L(1)});
    x = y * num / dem;
  }} else {{
    z = sqrt(-log(({L(1)} - ya) / {L(2)}));
    num = (({L(c[3])} * z + {L(c[2])}) * z + {L(c[1])}) * z + {L(c[0])};
    dem = ({L(d[1])} * z + {L(d[0])}) * z + {L(1)};
    x = copysign(num, y) / dem;
  }}
  {newton}
  {newton}
  return x;
}}"""


def digamma_prelude(ctx):
    A = [8.33333333333333333333E-2, -2.10927960927960927961E-2, 7.57575757575757575758E-3,
         -4.16666666666666666667E-3, 3.96825396825396825397E-3, -8.33333333333333333333E-3,
         8.33333333333333333333E-2]

    def L(v):
        return _w(ctx, v)
    poly = L(A[0])
    for coef in A[1:]:
        poly = f"({poly} * z + {L(coef)})"
    # PyTorch's calc_digamma: reflection for x < 0, recurrence up to 10, asymptotic series
    return f"""
W ew_digamma(W x) {{
  if (x == 0) return copysign((W)INFINITY, -x);
  W result = 0;
  if (x < 0) {{
    if (x == trunc(x)) return NAN;
    W frac = x - trunc(x);
    result = -({L(math.pi)} / tan({L(math.pi)} * frac));
    x = 1 - x;
  }}
  while (x < 10) {{ result -= 1 / x; x += 1; }}
  if (x == 10) return result + {L(2.25175258906672110764)};
  W y = 0;
  if (x < {L(1e17)}) {{ W z = 1 / (x * x); y = z * {poly}; }}
  return result + log(x) - {L(0.5)} / x - y;
}}"""


def _logit_prelude(ctx):
    # scipy's logit: the plain formula loses precision near 0.5, where log1p is exact
    return f"""
W ew_logit(W x) {{
  if (x < {_w(ctx, 0.3)} || x > {_w(ctx, 0.65)}) return log(x / (1 - x));
  W s = 2 * (x - {_w(ctx, 0.5)});
  return log1p(s) - log1p(-s);
}}"""


def _deg(ctx, to_rad):
    # numpy multiplies by a constant rounded in the input's precision (NPY_PIf / 180.0f)
    if ctx.ct.name == "float64":
        k = math.pi / 180 if to_rad else 180 / math.pi
    else:
        pi = np.float32(math.pi)
        k = float(pi / np.float32(180)) if to_rad else float(np.float32(180) / pi)
    return f"r = x0 * {ctx.lit(k)};"


def _abs(ctx):
    """abs of integers and complex numbers (floats: its rule)."""
    if ctx.is_complex:
        return "r = c_abs(x0);"  # the kernel's result dtype is the real one
    return "r = x0 < 0 ? -x0 : x0;" if ctx.signed else "r = x0;"


def _sign(ctx):
    if ctx.is_float:
        # PyTorch's (x > 0) - (x < 0): NaN and -0.0 give +0
        return "r = x0 > 0 ? (CT)1 : (x0 < 0 ? (CT)-1 : (CT)0);"
    return "r = x0;" if ctx.is_bool else "r = (x0 > 0) - (x0 < 0);"


def _pred(float_expr, int_expr, complex_expr=None):
    def code(ctx):
        expr = complex_expr if ctx.is_complex else float_expr if ctx.is_float else int_expr
        return f"r = {expr};"
    return code


PREDICATES = {"isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit", "logical_not"}
_FLOAT_ONLY = _BUILTIN + ["erf", "erfc", "lgamma", "erfinv", "digamma", "logit", "rsqrt",
                          "reciprocal", "sigmoid", "silu", "mish", "deg2rad", "rad2deg", "frac"]


_COMPLEX = {"exp": "c_exp(x0)", "log": "c_log(x0)", "sqrt": "c_sqrt(x0)",
            "square": "c_mul(x0, x0)", "reciprocal": "c_div((CT)(1, 0), x0)",
            "conj_physical": "(CT)(x0.x, -x0.y)"}


def _build():
    ops = {}
    for name, covers in FROM_RULE.items():
        ops[name] = rule_body(name, name, X[0], covers=covers, kinds="fib" if name == "abs" else
                              None, otherwise=_abs if name == "abs" else None)
    for name in _BUILTIN:
        if name not in FROM_RULE:
            ops[name] = Body(name, f"r = {name}(x0);")
    for name in ("erf", "erfc", "lgamma"):
        ops[name] = Body(name, _via_wide(name))
    ops["erfinv"] = Body("erfinv", "r = (CT)ew_erfinv((W)x0);", _erfinv_prelude)
    ops["digamma"] = Body("digamma", "r = (CT)ew_digamma((W)x0);", digamma_prelude)
    ops["logit"] = Body("logit", "r = (CT)ew_logit((W)x0);", _logit_prelude)
    ops["silu"] = Body("silu", "r = x0 * ((CT)1 / ((CT)1 + exp(-x0)));")
    # numpy's logaddexp(x, 0), then tanh
    ops["mish"] = Body("mish", "CT sp = x0 > 0 ? x0 + log1p(exp(-x0)) : log1p(exp(x0)); "
                               "r = x0 * tanh(sp);")
    ops["deg2rad"] = Body("deg2rad", lambda ctx: _deg(ctx, True))
    ops["rad2deg"] = Body("rad2deg", lambda ctx: _deg(ctx, False))
    # same-dtype family
    ops["sign"] = Body("sign", _sign)
    for name in ("floor", "ceil", "trunc"):
        ops[name] = Body(name, _float_only(f"{name}(x0)"))
    ops["frac"] = Body("frac", "r = x0 - trunc(x0);")
    ops["positive"] = Body("positive", "r = x0;")
    ops["conj_physical"] = Body("conj_physical", "r = x0;")
    ops["bitwise_not"] = Body("bitwise_not", lambda ctx: "r = !x0;" if ctx.is_bool else
                              "r = ~x0;")
    # predicates: result dtype bool
    ops["isnan"] = Body("isnan", _pred("isnan(x0)", "0", "isnan(x0.x) || isnan(x0.y)"))
    ops["isinf"] = Body("isinf", _pred("isinf(x0)", "0", "isinf(x0.x) || isinf(x0.y)"))
    ops["isfinite"] = Body("isfinite", _pred("isfinite(x0)", "1",
                                             "isfinite(x0.x) && isfinite(x0.y)"))
    ops["isposinf"] = Body("isposinf", _pred("isinf(x0) && x0 > 0", "0"))
    ops["isneginf"] = Body("isneginf", _pred("isinf(x0) && x0 < 0", "0"))
    ops["signbit"] = Body("signbit", lambda ctx: "r = signbit(x0);" if ctx.is_float else
                          "r = 0;" if ctx.is_bool else "r = x0 < 0;")
    ops["logical_not"] = Body("logical_not", "r = x0 == 0;")
    # complex forms (numpy's formulas, helpers from codegen.complex_prelude)
    for name, expr in _COMPLEX.items():
        real_code = ops[name].code
        ops[name].code = (lambda ctx, e=expr, rc=real_code:
                          f"r = {e};" if ctx.is_complex else rc(ctx))
    for name in _FLOAT_ONLY:
        ops[name].kinds = "fc" if name in _COMPLEX else "f"
    for name in ("neg", "abs", "square", "positive", "conj_physical", "isnan", "isinf",
                 "isfinite"):
        ops[name].kinds += "" if "c" in ops[name].kinds else "c"
    ops["bitwise_not"].kinds = "ib"
    group(*[b for n, b in ops.items() if n not in PREDICATES])
    group(*[b for n, b in ops.items() if n in PREDICATES])
    return ops


UNARY = _build()

# -- unary ops with parameters ------------------------------------------------------------------
ROUND = {
    "0": Body("round0", lambda ctx: "r = rint(x0);" if ctx.is_float else "r = x0;"),
    # numpy: multiply by 10**d, round half to even, divide (negative d: the other way round);
    # integers go through the wide float
    "pos": Body("round+", "r = rint(x0 * p0) / p0;"),
    "neg": Body("round-", lambda ctx: "r = rint(x0 / p0) * p0;" if ctx.is_float else
                "r = (CT)(rint((W)x0 / (W)p0) * (W)p0);"),
}
NAN_TO_NUM = Body("nan_to_num", lambda ctx: (
    "r = isnan(x0) ? p0 : (isinf(x0) ? (x0 > 0 ? p1 : p2) : x0);" if ctx.is_float else "r = x0;"))
GELU = Body("gelu", lambda ctx: (
    f"r = ({ctx.lit(0.5)} * x0) * ((CT)1 + (CT)erf((W)(x0 * {ctx.lit(1 / math.sqrt(2.0))})));"))
GELU_TANH = Body("gelu_tanh", lambda ctx: (
    f"r = ({ctx.lit(0.5)} * x0) * ((CT)1 + tanh({ctx.lit(math.sqrt(2.0 / math.pi))} * "
    f"(x0 + {ctx.lit(0.044715)} * x0 * x0 * x0)));"))
SOFTPLUS = rule_body("softplus", "softplus", X[0], P[0], P[1])
LEAKY_RELU = rule_body("leaky_relu", "leaky_relu", X[0], P[0], covers="fib")
ELU = Body("elu", "r = x0 > 0 ? x0 * p1 : p0 * expm1(x0 * p2);")
# numpy's maximum/minimum: NaN from either side wins
HARDTANH = Body("hardtanh", "CT lo = (x0 >= p0 || isnan(x0)) ? x0 : p0; "
                            "r = (lo <= p1 || isnan(lo)) ? lo : p1;", kinds="f")
group(GELU, GELU_TANH)
group(SOFTPLUS, HARDTANH)
