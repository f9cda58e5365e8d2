"""Derivatives of the elementwise ops (``ops/elementwise.py``).

Broadcasting needs no care here: the node sums each gradient back to its input's shape. For the
complex-capable (holomorphic) ops the gradient is ``grad * conj(f'(z))``, PyTorch's convention.
"""
from __future__ import annotations

import math

from ..._tensor import Tensor
from ...ops import elementwise as E
from . import derivative, nondifferentiable
from ._common import conj, keep_where, mask_fill_zero, zeros_like

U = E.unary_api
B = E.binary_api
where = E.where
exp, log, sqrt, rsqrt = U["exp"], U["log"], U["sqrt"], U["rsqrt"]
sin, cos, cosh, sinh, tanh = U["sin"], U["cos"], U["cosh"], U["sinh"], U["tanh"]
sigmoid, sign, isnan, isfinite = U["sigmoid"], U["sign"], U["isnan"], U["isfinite"]
eq, ne, lt, le, gt, ge = B["eq"], B["ne"], B["lt"], B["le"], B["gt"], B["ge"]
logical_and, logical_or, logical_not = B["logical_and"], B["logical_or"], U["logical_not"]

nondifferentiable(*E.UNARY["pred"], "bitwise_not", *E.BINARY["cmp"], *E.BINARY["logical"],
                  *E.BINARY["int"])

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


# -- unary: grad * conj(f'(x)), with f' written from the saved input or result -------------------
def _unary(name, save, dfn, complex_ok=False, node_name=None):
    uses_result = save == "result"

    def backward(ctx, g, self, compute):
        d = dfn(ctx.result if uses_result else self)
        return (g * conj(d),)

    derivative(name, save=(save,), complex_ok=complex_ok, name=node_name)(backward)


_unary("exp", "result", lambda r: r, True)
_unary("exp2", "result", lambda r: r * _LN2)
_unary("expm1", "result", lambda r: r + 1, True)
_unary("log", "self", lambda x: x.reciprocal(), True)
_unary("log2", "self", lambda x: (x * _LN2).reciprocal())
_unary("log10", "self", lambda x: (x * _LN10).reciprocal())
_unary("log1p", "self", lambda x: (x + 1).reciprocal(), True)
_unary("sqrt", "result", lambda r: (r * 2).reciprocal(), True)
_unary("rsqrt", "result", lambda r: r * r * r * -0.5, True)
_unary("sin", "self", cos, True)
_unary("cos", "self", lambda x: -sin(x), True)
_unary("tan", "result", lambda r: r * r + 1, True)
_unary("asin", "self", lambda x: rsqrt(1 - x * x), True)
_unary("acos", "self", lambda x: -rsqrt(1 - x * x), True)
_unary("atan", "self", lambda x: (x * x + 1).reciprocal(), True)
_unary("sinh", "self", cosh, True)
_unary("cosh", "self", sinh, True)
_unary("tanh", "result", lambda r: 1 - r * r, True)
_unary("asinh", "self", lambda x: rsqrt(x * x + 1), True)
_unary("acosh", "self", lambda x: rsqrt(x * x - 1), True)
_unary("atanh", "self", lambda x: (1 - x * x).reciprocal(), True)
_unary("sigmoid", "result", lambda r: r * (1 - r), True)
_unary("erf", "self", lambda x: exp(-(x * x)) * _TWO_OVER_SQRT_PI)
_unary("erfc", "self", lambda x: exp(-(x * x)) * -_TWO_OVER_SQRT_PI)
_unary("erfinv", "result", lambda r: exp(r * r) * (math.sqrt(math.pi) / 2))
_unary("reciprocal", "result", lambda r: -(r * r), True)
_unary("lgamma", "self", U["digamma"])
_unary("logit", "self", lambda x: (x * (1 - x)).reciprocal())
_unary("deg2rad", "self", lambda x: math.pi / 180, node_name="Deg2RadBackward0")
_unary("rad2deg", "self", lambda x: 180 / math.pi, node_name="Rad2DegBackward0")


def _silu_d(x):
    s = sigmoid(x)
    return s * (1 + x * (1 - s))


def _mish_d(x):
    t = tanh(E.softplus(x))
    return t + x * sigmoid(x) * (1 - t * t)


_unary("silu", "self", _silu_d)
_unary("mish", "self", _mish_d)


@derivative("digamma", save=("self",))
def _digamma(ctx, g, self, compute):
    raise NotImplementedError("the derivative for 'digamma' is not implemented (it needs "
                              "polygamma(1, x), which ember has no op for)")


@derivative("neg", complex_ok=True)
def _neg(ctx, g, self, compute):
    return (-g,)


@derivative("positive", complex_ok=True)
def _positive(ctx, g, self, compute):
    return (g,)


@derivative("conj_physical", complex_ok=True)
def _conj(ctx, g, self, compute):
    return (conj(g),)


@derivative("abs", save=("self",))
def _abs(ctx, g, self, compute):
    return (g * sign(self),)


@derivative("frac")
def _frac(ctx, g, self, compute):
    return (g,)


@derivative("square", save=("self",), complex_ok=True, name="PowBackward0")
def _square(ctx, g, self, compute):
    return (g * conj(self * 2),)


@derivative("relu", save=("result",))
def _relu(ctx, g, self, compute):
    return (keep_where(g, gt(ctx.result, 0)),)


def _zero_grad(ctx, g, *args):
    return (zeros_like(g),)


for _n in ("sign", "floor", "ceil", "trunc"):
    derivative(_n)(_zero_grad)
derivative("round", name=lambda self, decimals: "RoundBackward1" if decimals else
           "RoundBackward0")(_zero_grad)


@derivative("nan_to_num", save=("self",), name="NanToNumBackward0")
def _nan_to_num(ctx, g, self, nan, posinf, neginf):
    return (keep_where(g, isfinite(self)),)


# -- activations with parameters ----------------------------------------------------------------
_K_ALPHA = 1.0 / math.sqrt(2.0)
_K_PDF = 1.0 / math.sqrt(2.0 * math.pi)
_K_BETA = math.sqrt(2.0 / math.pi)
_K_KAPPA = 0.044715


@derivative("gelu", save=("self",))
def _gelu(ctx, g, x, approximate, compute):
    if approximate == "tanh":
        x_sq = x * x
        t = tanh((x + x_sq * x * _K_KAPPA) * _K_BETA)
        left = (t + 1) * 0.5
        right = x * 0.5 * (1 - t * t) * _K_BETA * (x_sq * (3 * _K_KAPPA) + 1)
        return (g * (left + right),)
    cdf = (U["erf"](x * _K_ALPHA) + 1) * 0.5
    pdf = exp(x * x * -0.5) * _K_PDF
    return (g * (cdf + x * pdf),)


@derivative("softplus", save=("self",))
def _softplus(ctx, g, x, beta, threshold, compute):
    bx = x * beta
    return (where(gt(bx, threshold), g, g * sigmoid(bx)),)


@derivative("leaky_relu", save=("self",), name="LeakyReluBackward0")
def _leaky_relu(ctx, g, x, slope):
    return (where(gt(x, 0), g, g * slope),)


@derivative("elu", save=("self",))
def _elu(ctx, g, x, alpha, scale, input_scale):
    neg = g * exp(x * input_scale) * (alpha * scale * input_scale)
    return (where(gt(x, 0), g * scale, neg),)


@derivative("hardtanh", save=("self",))
def _hardtanh(ctx, g, x, lo, hi):
    return (keep_where(g, logical_and(gt(x, lo), lt(x, hi))),)


# -- binary -------------------------------------------------------------------------------------
def _is_t(x):
    return isinstance(x, Tensor)


@derivative("add", complex_ok=True)
def _add(ctx, g, self, other, alpha, compute):
    go = None
    if ctx.needs(1):
        go = g if alpha.__class__ is int and alpha == 1 else g * conj(alpha)
    return g, go


@derivative("sub", complex_ok=True,
            name=lambda self, other, alpha, c: "SubBackward0" if _is_t(self) else "RsubBackward1")
def _sub(ctx, g, self, other, alpha, compute):
    go = None
    if ctx.needs(1):
        go = -g if alpha.__class__ is int and alpha == 1 else g * -conj(alpha)
    return g, go


@derivative("mul", save={"self": "other", "other": "self"}, complex_ok=True)
def _mul(ctx, g, self, other, compute):
    return (g * conj(other) if ctx.needs(0) else None,
            g * conj(self) if ctx.needs(1) else None)


def _div_name(self, other, mode, compute):
    return "DivBackward0" if mode is None else "DivBackward2"


@derivative("div", save={"self": "other", "other": None}, complex_ok=True, name=_div_name)
def _div(ctx, g, self, other, mode, compute):
    if mode is not None:  # floor/trunc division is piecewise constant
        return (zeros_like(g) if ctx.needs(0) else None, zeros_like(g) if ctx.needs(1) else None)
    gs = g / conj(other) if ctx.needs(0) else None
    go = None
    if ctx.needs(1):
        go = -g * conj(self / other / other)
    return gs, go


@derivative("floor_divide")
def _floor_divide(ctx, g, self, other, compute):
    return (zeros_like(g) if ctx.needs(0) else None, zeros_like(g) if ctx.needs(1) else None)


def _pow_name(self, exponent, compute):
    if not _is_t(self):
        return "PowBackward2"
    return "PowBackward1" if _is_t(exponent) else "PowBackward0"


@derivative("pow", save=("self", "other", "result"), complex_ok=True,
            name=_pow_name)
def _pow(ctx, g, self, exponent, compute):
    gs = ge_ = None
    if ctx.needs(0):
        if _is_t(exponent):
            gs = where(eq(exponent, 0), 0.0, g * conj(exponent * self ** (exponent - 1)))
        elif exponent == 0:
            gs = zeros_like(g)
        else:
            gs = g * conj(self ** (exponent - 1) * exponent)
    if ctx.needs(1):
        r = ctx.result
        if _is_t(self):
            zero_base = logical_and(eq(self, 0), ge(exponent, 0) if not
                                    exponent.is_complex() else eq(exponent, exponent))
            ge_ = g * conj(where(zero_base, 0.0, r * log(self)))
        elif self == 0:
            ge_ = zeros_like(g)
        else:
            ge_ = g * conj(r * _scalar_log(self))
    return gs, ge_


def _scalar_log(z):
    import cmath
    if isinstance(z, complex):
        return cmath.log(z)
    return math.log(z) if z > 0 else math.nan


def _split_ties(g, self, other, loser_if):
    """maximum/minimum: the gradient goes to the larger (smaller) input, halved on ties."""
    half = where(eq(self, other), g * 0.5, g)
    return mask_fill_zero(half, loser_if(self, other))


@derivative("maximum", save=("self", "other"))
def _maximum(ctx, g, self, other, compute):
    gs = _split_ties(g, self, other, lt) if ctx.needs(0) else None
    go = _split_ties(g, self, other, gt) if ctx.needs(1) else None
    return gs, go


@derivative("minimum", save=("self", "other"))
def _minimum(ctx, g, self, other, compute):
    gs = _split_ties(g, self, other, gt) if ctx.needs(0) else None
    go = _split_ties(g, self, other, lt) if ctx.needs(1) else None
    return gs, go


def _nan_mask(x, like):
    if _is_t(x):
        return isnan(x)
    return ne(like, like) if not math.isnan(x) else eq(like, like)


def _fmaxmin(cmp):
    def backward(ctx, g, self, other, compute):
        # the non-NaN input wins; self also wins when it compares better
        self_wins = logical_or(cmp(self, other), _nan_mask(other, g))
        gs = keep_where(g, self_wins) if ctx.needs(0) else None
        go = mask_fill_zero(g, self_wins) if ctx.needs(1) else None
        return gs, go
    return backward


derivative("fmax", save=("self", "other"))(_fmaxmin(ge))
derivative("fmin", save=("self", "other"))(_fmaxmin(le))


def _rem_name(prefix):
    return lambda self, other, compute: f"{prefix}Backward{1 if _is_t(other) else 0}"


@derivative("remainder", save={"self": "other", "other": "other"}, name=_rem_name("Remainder"))
def _remainder(ctx, g, self, other, compute):
    go = -g * E.div(self, other, rounding_mode="floor") if ctx.needs(1) else None
    return g, go


@derivative("fmod", save={"self": "other", "other": "other"}, name=_rem_name("Fmod"))
def _fmod(ctx, g, self, other, compute):
    go = -g * E.div(self, other, rounding_mode="trunc") if ctx.needs(1) else None
    return g, go


@derivative("atan2", save=("self", "other"))
def _atan2(ctx, g, self, other, compute):
    denom = self * self + other * other
    return (g * other / denom if ctx.needs(0) else None,
            g * -self / denom if ctx.needs(1) else None)


@derivative("hypot", save=("self", "other", "result"))
def _hypot(ctx, g, self, other, compute):
    r = ctx.result
    return (g * self / r if ctx.needs(0) else None, g * other / r if ctx.needs(1) else None)


@derivative("logaddexp", save=("self", "other"))
def _logaddexp(ctx, g, self, other, compute):
    return (g / (exp(other - self) + 1) if ctx.needs(0) else None,
            g / (exp(self - other) + 1) if ctx.needs(1) else None)


@derivative("copysign", save=("self", "result"))
def _copysign(ctx, g, self, other, compute):
    gs = None
    if ctx.needs(0):
        ratio = where(eq(self, 0), 0.0, ctx.result / self)
        gs = g * ratio
    return gs, (zeros_like(g) if ctx.needs(1) else None)


@derivative("xlogy", save=("self", "other"))
def _xlogy(ctx, g, self, other, compute):
    gs = go = None
    if ctx.needs(0):
        gs = mask_fill_zero(B["xlogy"](g, other), logical_and(eq(self, 0), le(other, 0)))
    if ctx.needs(1):
        go = g * self / other
    return gs, go


# -- where / clamp ------------------------------------------------------------------------------
@derivative("where", save=("condition",), diff=("self", "other"), complex_ok=True)
def _where(ctx, g, condition, self, other, compute):
    return (None, keep_where(g, condition) if ctx.needs(1) else None,
            mask_fill_zero(g, condition) if ctx.needs(2) else None)


def _clamp_name(self, lo, hi, compute):
    return "ClampBackward0" if _is_t(lo) or _is_t(hi) else "ClampBackward1"


@derivative("clamp", save=("self", "min", "max"), name=_clamp_name)
def _clamp(ctx, g, x, lo, hi, compute):
    inside = None
    if lo is not None:
        inside = ge(x, lo)
    if hi is not None:
        upper = le(x, hi)
        inside = upper if inside is None else logical_and(inside, upper)
    gx = keep_where(g, inside) if ctx.needs(0) else None
    glo = ghi = None
    if ctx.needs(1):
        m = lt(x, lo)
        if hi is not None:
            m = logical_and(m, le(lo, hi))
        glo = keep_where(g, m)
    if ctx.needs(2):
        pre = B["maximum"](x, lo) if lo is not None else x
        ghi = keep_where(g, gt(pre, hi))
    return gx, glo, ghi
