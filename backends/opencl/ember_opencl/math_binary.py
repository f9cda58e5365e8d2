"""C bodies of the binary ops (see ``codegen.Body``): ``r`` from ``x0`` and ``x1``.

Integer division and remainder guard their inputs: x86 traps on ``n / 0`` and on
``INT_MIN / -1``, which would kill the process (PoCL runs kernels in it). Raising like the CPU
backend is done before the op by ``ANY_ZERO``, which sets the error flag (``ERR``) that the
launcher reads back; inside the op's kernel ``ERR`` is null. Integer powers with a negative
exponent tensor give 1, -1 or 0 as PyTorch's do (the op layer refuses a negative scalar one).

mul, pow (floats), the comparisons, add, sub, div (true division) and where are rendered from
their ops' pointwise rules (``codegen.rule_body``, for the dtype kinds given); written here are
their complex forms, integer powers, and maximum/minimum, whose rules pick the second operand
of equal ones (the CPU's numpy picks the first: ``maximum(-0.0, 0.0)`` is -0.0).
"""
from __future__ import annotations

from .codegen import ERR_ZERO_DIV, P, X, Body, group, rule_body


def _maxmin(ctx, ge, nan_first):
    """numpy's maximum (``>=``) / minimum (``<=``); ``nan_first``: NaN wins (maximum), else
    the non-NaN operand wins (fmax)."""
    if not ctx.is_float:
        return f"r = x0 {ge} x1 ? x0 : x1;"
    if nan_first:
        return f"r = (x0 {ge} x1 || isnan(x0)) ? x0 : x1;"
    return f"r = (x0 {ge} x1 || isnan(x1)) ? x0 : x1;"


def _int_div_prelude(ctx):
    if not ctx.is_int and not ctx.is_bool:
        return _float_div_prelude(ctx)
    neg = "if (b == -1) return (CT)(0 - a);" if ctx.signed else ""
    negmod = "if (b == -1) return 0;" if ctx.signed else ""
    return f"""
CT ew_tdiv(CT a, CT b, __global int* err) {{
  if (b == 0) {{ if (err) *err = {ERR_ZERO_DIV}; return 0; }}
  {neg}
  return a / b;
}}
CT ew_fdiv(CT a, CT b, __global int* err) {{
  if (b == 0) {{ if (err) *err = {ERR_ZERO_DIV}; return 0; }}
  {neg}
  CT q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}}
CT ew_pymod(CT a, CT b, __global int* err) {{
  if (b == 0) {{ if (err) *err = {ERR_ZERO_DIV}; return 0; }}
  {negmod}
  CT m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}}
CT ew_cmod(CT a, CT b, __global int* err) {{
  if (b == 0) {{ if (err) *err = {ERR_ZERO_DIV}; return 0; }}
  {negmod}
  return a % b;
}}"""


def _float_div_prelude(ctx):
    # numpy's npy_divmod / PyTorch's div_floor_floating
    return """
CT ew_fdiv(CT a, CT b, __global int* err) {
  if (b == 0) return a / b;
  CT mod = fmod(a, b);
  CT div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  CT fl;
  if (div != 0) { fl = floor(div); if (div - fl > (CT)0.5) fl += 1; }
  else fl = copysign((CT)0, a / b);
  return fl;
}
CT ew_pymod(CT a, CT b, __global int* err) {
  CT mod = fmod(a, b);
  if (b == 0) return mod;
  if (mod != 0) { if ((b < 0) != (mod < 0)) mod += b; }
  else mod = copysign((CT)0, b);
  return mod;
}
CT ew_tdiv(CT a, CT b, __global int* err) { return trunc(a / b); }
CT ew_cmod(CT a, CT b, __global int* err) { return fmod(a, b); }"""


def _ipow_prelude(ctx):
    if ctx.is_float:
        return ""
    # a negative exponent tensor: 1 for a == 1, +-1 for a == -1 (by parity), else 0, as PyTorch
    # and the CPU compute it (the op layer refuses negative *scalar* exponents)
    neg = ("if (b < 0) return a == 1 ? (CT)1 : (a == -1 ? ((b & 1) ? (CT)-1 : (CT)1) : (CT)0);"
           if ctx.signed else "")
    return f"""
CT ew_ipow(CT a, CT b, __global int* err) {{
  {neg}
  CT result = 1;
  while (b) {{ if (b & 1) result *= a; b >>= 1; a *= a; }}
  return result;
}}"""


def _shift(ctx, left):
    # numpy / PyTorch: shifting by the width or more gives 0 (or -1 for negative >>)
    if left:
        return f"r = (x1 < 0 || x1 >= {ctx.bits}) ? (CT)0 : (CT)(({ctx.u})x0 << x1);"
    fill = "(x0 < 0 ? (CT)-1 : (CT)0)" if ctx.signed else "(CT)0"
    return f"r = (x1 < 0 || x1 >= {ctx.bits}) ? {fill} : (CT)(x0 >> x1);"


def _logaddexp(ctx):
    # numpy's npy_logaddexp
    return ("if (x0 == x1) r = x0 + (CT)M_LN2; else { CT t = x0 - x1; "
            "r = t > 0 ? x0 + log1p(exp(-t)) : (t <= 0 ? x1 + log1p(exp(t)) : t); }"
            if ctx.ct.name == "float64" else
            "if (x0 == x1) r = x0 + M_LN2_F; else { CT t = x0 - x1; "
            "r = t > 0 ? x0 + log1p(exp(-t)) : (t <= 0 ? x1 + log1p(exp(t)) : t); }")


def _logaddexp2(ctx):
    # numpy's npy_logaddexp2: log2(1 + 2^-|t|) as log1p(...) * log2(e)
    log2e = "M_LOG2E" if ctx.ct.name == "float64" else "M_LOG2E_F"
    return (f"if (x0 == x1) r = x0 + (CT)1; else {{ CT t = x0 - x1; "
            f"r = t > 0 ? x0 + log1p(exp2(-t)) * {log2e} : "
            f"(t <= 0 ? x1 + log1p(exp2(t)) * {log2e} : t); }}")


def _complex(expr):
    return lambda ctx: f"r = {expr};"


def _build():
    ops = {
        "mul": rule_body("mul", "mul", X[0], X[1], covers="fib", kinds="fibc",
                         otherwise=_complex("c_mul(x0, x1)")),
        "maximum": Body("maximum", lambda c: _maxmin(c, ">=", True)),
        "minimum": Body("minimum", lambda c: _maxmin(c, "<=", True)),
        "fmax": Body("fmax", lambda c: _maxmin(c, ">=", False)),
        "fmin": Body("fmin", lambda c: _maxmin(c, "<=", False)),
        "remainder": Body("remainder", "r = ew_pymod(x0, x1, ERR);", _int_div_prelude),
        "fmod": Body("fmod", "r = ew_cmod(x0, x1, ERR);", _int_div_prelude),
        "floor_divide": Body("floor_divide", "r = ew_fdiv(x0, x1, ERR);", _int_div_prelude),
        "pow": rule_body("pow", "pow", X[0], X[1], covers="f", kinds="fib",
                         otherwise=lambda c: "r = ew_ipow(x0, x1, ERR);", prelude=_ipow_prelude),
        "atan2": Body("atan2", "r = atan2(x0, x1);"),
        "hypot": Body("hypot", "r = hypot(x0, x1);"),
        "logaddexp": Body("logaddexp", _logaddexp),
        "logaddexp2": Body("logaddexp2", _logaddexp2),
        "copysign": Body("copysign", "r = copysign(x0, x1);"),
        "xlogy": Body("xlogy", "r = (x0 == 0 && !isnan(x1)) ? (CT)0 : x0 * log(x1);"),
        "eq": rule_body("eq", "eq", X[0], X[1], covers="fib", kinds="fibc",
                        otherwise=_complex("x0.x == x1.x && x0.y == x1.y")),
        "ne": rule_body("ne", "ne", X[0], X[1], covers="fib", kinds="fibc",
                        otherwise=_complex("x0.x != x1.x || x0.y != x1.y")),
        **{name: rule_body(name, name, X[0], X[1], covers="fib")
           for name in ("lt", "le", "gt", "ge")},
        "logical_and": Body("logical_and", "r = (x0 != 0) && (x1 != 0);"),
        "logical_or": Body("logical_or", "r = (x0 != 0) || (x1 != 0);"),
        "logical_xor": Body("logical_xor", "r = (x0 != 0) != (x1 != 0);"),
        "bitwise_and": Body("bitwise_and", "r = x0 & x1;"),
        "bitwise_or": Body("bitwise_or", "r = x0 | x1;"),
        "bitwise_xor": Body("bitwise_xor", "r = x0 ^ x1;"),
        "bitwise_left_shift": Body("bitwise_left_shift", lambda c: _shift(c, True)),
        "bitwise_right_shift": Body("bitwise_right_shift", lambda c: _shift(c, False)),
    }
    for name in ("atan2", "hypot", "logaddexp", "logaddexp2", "copysign", "xlogy"):
        ops[name].kinds = "f"
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        ops[name].kinds = "ib"
    for name in ("bitwise_left_shift", "bitwise_right_shift"):
        ops[name].kinds = "i"
    return ops


BINARY = _build()
# a float power by a constant the pointwise rule renders without pow() (x * x, x * x * x,
# sqrt, 1 / sqrt, ...: PyTorch's forms): PoCL's pow() costs ~75 ns an element (a GELU's x ** 3,
# 10 ms on 131k elements) and differs from them at -0.0 and -inf
POW_BY = {e: rule_body(f"pow_{e}", "pow", X[0], e, covers="f") for e in (2, 3, 0.5, -0.5, -1, -2)}
TO_BOOL = {"eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"}
# integer ops whose divisor is checked first, as the CPU kernel does: the whole tensor, before
# anything is written
CHECKED = {"remainder", "fmod", "floor_divide"}
ANY_ZERO = Body("any_zero", f"r = 0; if (x0 == 0) *ERR = {ERR_ZERO_DIV};", store=False)

ADD = rule_body("add", "add", X[0], X[1], 1, covers="fibc")
ADD_ALPHA = rule_body("add_alpha", "add", X[0], X[1], P[0], covers="fib", kinds="fibc",
                      otherwise=_complex("x0 + c_mul(x1, p0)"))
SUB = rule_body("sub", "sub", X[0], X[1], 1, covers="fibc")
SUB_ALPHA = rule_body("sub_alpha", "sub", X[0], X[1], P[0], covers="fib", kinds="fibc",
                      otherwise=_complex("x0 - c_mul(x1, p0)"))
DIV = {
    None: rule_body("div", "div", X[0], X[1], None, covers="f", kinds="fc",
                    otherwise=_complex("c_div(x0, x1)")),
    "trunc": Body("div_trunc", "r = ew_tdiv(x0, x1, ERR);", _int_div_prelude),
    "floor": Body("div_floor", "r = ew_fdiv(x0, x1, ERR);", _int_div_prelude),
}
group(*[b for n, b in BINARY.items() if n not in TO_BOOL], ADD, SUB, *DIV.values())
group(*POW_BY.values())     # one operand: built apart from the two-operand bodies
group(*[b for n, b in BINARY.items() if n in TO_BOOL])
group(ADD_ALPHA, SUB_ALPHA)
WHERE = rule_body("where", "where", X[0], X[1], X[2], covers="fibc")


# numpy's maximum then minimum: NaN anywhere gives NaN
def _clamp_one(op):
    return lambda c: (f"r = (x0 {op} x1 || isnan(x0)) ? x0 : x1;" if c.is_float else
                      f"r = x0 {op} x1 ? x0 : x1;")


CLAMP = {
    (True, False): Body("clamp_lo", _clamp_one(">=")),
    (False, True): Body("clamp_hi", _clamp_one("<=")),
    (True, True): Body("clamp", lambda c: (
        "CT lo = (x0 >= x1 || isnan(x0)) ? x0 : x1; r = (lo <= x2 || isnan(lo)) ? lo : x2;"
        if c.is_float else "CT lo = x0 >= x1 ? x0 : x1; r = lo <= x2 ? lo : x2;")),
}
