"""Special functions (``torch.special`` and its top-level members ``i0``, ``sinc``,
``polygamma``, ``mvlgamma``): one row per op with its derivative, beside the op's define.

Kernel conventions are the elementwise ones: unary ``name(Tensor self, dtype compute) -> Tensor``
(``compute`` a floating dtype: integer inputs compute in the default float dtype), binary
``name(Tensor self, Tensor other, dtype compute) -> Tensor`` (either side may be a Python
number), plus ``polygamma(int n, Tensor self, dtype compute)``. None of them takes complex
inputs (PyTorch refuses them). ``mvlgamma`` is a composite of ``lgamma``.

The public ``ember.special`` namespace (``ember/special/``) wraps these with PyTorch's names.
"""
from __future__ import annotations

import math

from ... import _dtype
from ..._dtype import COMPLEX
from ..._tensor import Tensor
from ...dispatch.dispatcher import define
from ...dispatch.facets import NOT_DIFFERENTIABLE, Derivative
from .. import _grad, _meta, _tangents
from .._util import check_inplace, every_example, require_tensor, tensor_method, write_out
from . import unary as _unary
from .selection import where
from ._rules import (FLOAT, FLOAT_BINARY, binary_dtype, binary_meta, check_bcast, check_overlap,
                     check_operands, float_dtype, unary_meta)

_SQRT_2PI = math.sqrt(2 * math.pi)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _api(name):
    """The public function of a special op (formulas call each other through these)."""
    return special_api[name]


def _from_input(fprime, **kw):
    return Derivative(lambda ctx, g, x, compute: (g * fprime(x),), save=("self",), **kw)


def _from_both(fprime, **kw):
    """``grad * f'(x, f(x))``."""
    return Derivative(lambda ctx, g, x, compute: (g * fprime(x, ctx.result),),
                      save=("self", "result"), **kw)


def _i1_d(x, r):
    # d/dx I1 = I0 - I1 / x, 1/2 at 0
    return where(x.eq(0), 0.5, _api("i0")(x) - r / x)


def _i1e_d(x, r):
    # d/dx exp(-|x|) I1 = exp(-|x|) I0 - I1e (sgn(x) + 1/x), 1/2 at 0
    return where(x.eq(0), 0.5, _api("special_i0e")(x) - r * (x.sign() + x.reciprocal()))


def _sinc_d(x):
    # near 0 the Taylor series of sinc' (-pi^2 x / 3 + pi^4 x^3 / 30), so the double backward
    # is finite there too (PyTorch's gives nan at 0); elsewhere the closed form on a safe x
    near = (x * math.pi).abs() < 1e-3
    safe = where(near, 1.0, x)
    px = safe * math.pi
    closed = (px * px.cos() - px.sin()) / (px * safe)
    x2 = x * x
    series = x * (-(math.pi ** 2) / 3 + (math.pi ** 4 / 30) * x2)
    return where(near, series, closed)


def _j1_d(x):
    # J1' = J0 - J1 / x, 1/2 at 0
    return where(x.eq(0), 0.5, _api("special_bessel_j0")(x) - _api("special_bessel_j1")(x) / x)


# name, derivative
UNARY_ROWS = [
    ("i0", _from_input(lambda x: _api("special_i1")(x))),
    ("special_i0e", _from_both(lambda x, r: _api("special_i1e")(x) - x.sign() * r)),
    ("special_i1", _from_both(_i1_d)),
    ("special_i1e", _from_both(_i1e_d)),
    # torch's ndtr is (1 + erf(x / sqrt 2)) / 2: its graph keeps x / sqrt 2, not x itself, so
    # writing to x before backward is allowed; the same here
    ("special_ndtr", Derivative(lambda ctx, g, x, compute: (
        g * ((-(ctx.info * ctx.info)).exp() * (1 / _SQRT_2PI)),),
        setup=lambda x, compute: x * (1 / math.sqrt(2)))),
    ("special_ndtri", Derivative(lambda ctx, g, x, compute: (
        g * ((ctx.result * ctx.result * 0.5).exp() * _SQRT_2PI),), save=("result",))),
    ("special_log_ndtr", _from_both(lambda x, r: (-(r + x * x * 0.5)).exp() * (1 / _SQRT_2PI))),
    ("sinc", _from_input(_sinc_d)),
    ("special_entr", _from_input(lambda x: -(x.log() + 1))),
    ("special_erfcx", _from_both(lambda x, r: x * r * 2.0 - _TWO_OVER_SQRT_PI)),
    ("special_bessel_j0", _from_input(lambda x: -_api("special_bessel_j1")(x))),
    ("special_bessel_j1", _from_input(_j1_d)),
    # Y and K: the same recurrences as J (torch's special functions have none; these do)
    ("special_bessel_y0", _from_input(lambda x: -_api("special_bessel_y1")(x))),
    ("special_bessel_y1", _from_both(lambda x, r: _api("special_bessel_y0")(x) - r / x)),
    ("special_modified_bessel_k0",
     _from_input(lambda x: -_api("special_modified_bessel_k1")(x))),
    ("special_modified_bessel_k1",
     _from_both(lambda x, r: -_api("special_modified_bessel_k0")(x) - r / x)),
    ("special_scaled_modified_bessel_k0",
     _from_both(lambda x, r: r - _api("special_scaled_modified_bessel_k1")(x))),
    ("special_scaled_modified_bessel_k1",
     _from_both(lambda x, r: r * (1 - x.reciprocal())
                - _api("special_scaled_modified_bessel_k0")(x))),
    # the Airy function Ai (torch's result never requires grad: it has no derivative)
    ("special_airy_ai", NOT_DIFFERENTIABLE),
]
UNARY = [name for name, _ in UNARY_ROWS]
#: ops with an in-place form and Tensor methods (PyTorch's top-level ones)
TENSOR_METHODS = ("i0", "sinc")


def _check_real(name, *xs):
    for x in xs:
        if isinstance(x, Tensor) and x.dtype.category == COMPLEX:
            raise RuntimeError(f"{name}: complex inputs are not supported, got {x.dtype}")


def _public(name):
    return name[len("special_"):] if name.startswith("special_") else name


def _make_unary(name, op, op_):
    public = _public(name)

    def fn(input, *, out=None):
        require_tensor(input, public)
        _check_real(public, input)
        r = op(input, float_dtype(input.dtype))
        return r if out is None else write_out(out, r, public)

    def fn_(self):
        _check_real(public + "_", self)
        d = float_dtype(self.dtype)
        check_inplace(f"{public}_", self, d, self._shape)
        if 0 in self._stride:
            check_overlap(self, public + "_")
        op_(self, d)
        self._storage.version += 1
        return self

    fn.__name__, fn_.__name__ = public, public + "_"
    return fn, fn_


special_ops = {}   # op name -> (kind, op, in-place op or None)
special_api = {}   # op name -> the Python function
for _name, _derivative in UNARY_ROWS:
    _op = define(f"{_name}(Tensor self, dtype compute) -> Tensor", meta=unary_meta(_name, FLOAT),
                 derivative=_derivative)
    _op_ = None
    if _name in TENSOR_METHODS:
        _op_ = define(f"{_name}_(Tensor(a!) self, dtype compute) -> Tensor(a!)",
                      meta=_meta.inplace(_name + "_"), functional=_op)
    special_ops[_name] = (FLOAT, _op, _op_)
    _fn, _fn_ = _make_unary(_name, _op, _op_)
    special_api[_name] = _fn
    if _op_ is not None:
        special_api[_name + "_"] = _fn_
        setattr(Tensor, _name, _fn)
        setattr(Tensor, _name + "_", _fn_)


# -- binary: xlog1py, zeta, gammainc/c --------------------------------------------------------------------
def _xlog1py_backward(ctx, g, self, other, compute):
    gs = go = None
    if ctx.needs(0):
        gs = _grad.mask_fill_zero(_api("special_xlog1py")(g, other),
                                  self.eq(0).logical_and(other.le(-1)))
    if ctx.needs(1):
        go = g * self / (other + 1)
    return gs, go


def _zeta_backward(ctx, g, self, other, compute):
    if ctx.needs(0):
        raise NotImplementedError("the derivative for 'zeta' with respect to 'self' (the "
                                  "exponent) is not implemented")
    return None, g * -self * _api("special_zeta")(self + 1.0, other)


def _igamma_density(a, x):
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) (PyTorch's formula)."""
    lg = math.lgamma(a) if isinstance(a, (int, float)) else a.lgamma()
    return ((a - 1.0) * x.log() - x - lg).exp()


def _gammainc_backward(ctx, g, self, other, compute):
    if ctx.needs(0):
        raise NotImplementedError("the derivative for 'igamma' with respect to 'self' (the "
                                  "shape) is not implemented")
    return None, g * _igamma_density(self, other)


def _gammaincc_backward(ctx, g, self, other, compute):
    if ctx.needs(0):
        raise NotImplementedError("the derivative for 'igammac' with respect to 'self' (the "
                                  "shape) is not implemented")
    return None, -g * _igamma_density(self, other)


BINARY_ROWS = [
    ("special_xlog1py", Derivative(_xlog1py_backward, save=("self", "other"))),
    ("special_zeta", Derivative(_zeta_backward, save=("self", "other"))),
    # the regularized incomplete gamma functions P(a, x) and Q(a, x) (torch.igamma/igammac)
    ("special_gammainc", Derivative(_gammainc_backward, save=("self", "other"))),
    ("special_gammaincc", Derivative(_gammaincc_backward, save=("self", "other"))),
]
BINARY = [name for name, _ in BINARY_ROWS]


def _make_binary(name, op):
    public = _public(name)

    def fn(input, other, *, out=None):
        input, other = check_operands(input, other, public)
        _check_real(public, input, other)
        if isinstance(input, complex) or isinstance(other, complex):
            raise RuntimeError(f"{public}: complex inputs are not supported")
        d = float_dtype(binary_dtype(input, other))
        check_bcast(input, other, public)
        r = op(input, other, d)
        return r if out is None else write_out(out, r, public)

    fn.__name__ = public
    return fn


for _name, _derivative in BINARY_ROWS:
    _op = define(f"{_name}(Tensor self, Tensor other, dtype compute) -> Tensor",
                 meta=binary_meta(_name, FLOAT_BINARY), derivative=_derivative)
    special_ops[_name] = (FLOAT_BINARY, _op, None)
    special_api[_name] = _make_binary(_name, _op)


# -- polygamma ----------------------------------------------------------------------------------
def _polygamma_meta(n, x, compute):
    return _meta.shape_of(_meta.tensor_arg("polygamma", x)), compute


def _polygamma_backward(ctx, g, n, x, compute):
    return None, g * polygamma(n + 1, x)


polygamma_op = define("polygamma(int n, Tensor self, dtype compute) -> Tensor",
                      meta=_polygamma_meta,
                      derivative=Derivative(_polygamma_backward, save=("self",)),
                      doc="The n-th derivative of digamma (n >= 0).")
special_ops["polygamma"] = (FLOAT, polygamma_op, None)


def _check_n(n, op="polygamma"):
    if isinstance(n, Tensor):
        n = n.item()
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{op}(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"{op}(n, x) does not support negative n.")
    return n


def polygamma(n, input, *, out=None):
    n = _check_n(n)
    if not isinstance(input, Tensor):
        raise TypeError(f"polygamma(): argument 'input' (position 2) must be Tensor, not "
                        f"{type(input).__name__}")
    _check_real("polygamma", input)
    r = polygamma_op(n, input, float_dtype(input.dtype))
    return r if out is None else write_out(out, r, "polygamma")


def _polygamma_method(self, n):
    return polygamma(n, self)


def _polygamma_(self, n):
    r = polygamma(n, self)
    check_inplace("polygamma_", self, r.dtype, self._shape)
    return self.copy_(r)


Tensor.polygamma = _polygamma_method
Tensor.polygamma_ = _polygamma_
special_api["polygamma"] = polygamma


# -- mvlgamma (multigammaln): a composite of lgamma ---------------------------------------------
def _mvlgamma(x, p):
    lgamma = _unary.unary_api["lgamma"]
    r = lgamma(x)
    for i in range(1, p):
        r = r + lgamma(x - i / 2)
    return r + p * (p - 1) / 4 * math.log(math.pi)


def _mvlgamma_backward(ctx, g, x, p):
    digamma = _unary.unary_api["digamma"]
    d = digamma(x)
    for i in range(1, p):
        d = d + digamma(x - i / 2)
    return (g * d,)


mvlgamma_op = define("mvlgamma(Tensor self, int p) -> Tensor", composite=_mvlgamma,
                     derivative=Derivative(_mvlgamma_backward, save=("self",)),
                     doc="The multivariate log-gamma function of dimension p (x > (p - 1) / 2 "
                         "checked by the caller).")


def mvlgamma(input, p, *, out=None):
    require_tensor(input, "mvlgamma")
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"mvlgamma(): argument 'p' (position 2) must be int, not "
                        f"{type(p).__name__}")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    _check_real("mvlgamma", input)
    x = input if input.dtype.category >= _dtype.FLOATING else \
        input.to(_dtype.get_default_dtype())
    if x.numel() and not bool(every_example(x > 0.5 * (p - 1)).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {0.5 * (p - 1)}")
    r = mvlgamma_op(x, p)
    return r if out is None else write_out(out, r, "mvlgamma")


def _mvlgamma_(self, p):
    r = mvlgamma(self, p)
    check_inplace("mvlgamma_", self, r.dtype, self._shape)
    return self.copy_(r)


Tensor.mvlgamma = lambda self, p: mvlgamma(self, p)
Tensor.mvlgamma_ = _mvlgamma_
special_api["mvlgamma"] = mvlgamma

_real_sinc, _real_sinc_ = special_api["sinc"], special_api["sinc_"]


def _complex_sinc(z):
    """``sin(pi z) / (pi z)``, 1 at 0, for complex z (PyTorch's sinc takes complex input; the
    zero is kept out of the quotient so its gradient is PyTorch's 0 there, not NaN)."""
    zero, one = z.eq(0), z.new_ones(())
    safe = where(zero, one, z) * math.pi
    return where(zero, one, safe.sin() / safe)


def sinc(input, *, out=None):
    if isinstance(input, Tensor) and input.dtype.category == COMPLEX:
        r = _complex_sinc(input)
        return r if out is None else write_out(out, r, "sinc")
    return _real_sinc(input, out=out)


def sinc_(self):
    if self.dtype.category == COMPLEX:
        return self.copy_(_complex_sinc(self))
    return _real_sinc_(self)


special_api["sinc"], special_api["sinc_"] = sinc, sinc_
Tensor.sinc, Tensor.sinc_ = sinc, sinc_
i0 = special_api["i0"]
# -- the pre-special names igamma, igammac ------------------------------------------------------
@tensor_method()
def igamma(input, other, *, out=None):
    """The regularized lower incomplete gamma function (``special.gammainc``)."""
    return special_api["special_gammainc"](input, other, out=out)


@tensor_method()
def igammac(input, other, *, out=None):
    """The regularized upper incomplete gamma function (``special.gammaincc``)."""
    return special_api["special_gammaincc"](input, other, out=out)


@tensor_method("igamma_")
def _igamma_(self, other):
    return self.copy_(igamma(self, other))


@tensor_method("igammac_")
def _igammac_(self, other):
    return self.copy_(igammac(self, other))


__all__ = ["i0", "sinc", "polygamma", "mvlgamma", "igamma", "igammac"]


# -- ember.func: every op above batches elementwise; its jvp comes from its backward ------------
_tangents.attach_elementwise(*(o for _, op, op_ in special_ops.values() for o in (op, op_)),
                             polygamma_op)
