"""Scans and softmax: cumsum, cumprod (and their in-place Tensor methods), softmax,
log_softmax."""
from __future__ import annotations

from ... import _dtype
from ... import return_types as _rt
from ..._dtype import COMPLEX, FLOATING
from ..._tensor import Tensor, _wrap_dim
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _batching, _grad, _primitives, _tangents
from .. import elementwise as _ew
from .. import factories as _fac
from .. import shape as _shape_ops
from .._util import _dtype_title, cpp_dtype_name, ember_namespace, every_example, require_tensor, tensor_method
from .. import _meta
from ._rules import accumulate_dtype, along_dim_meta, check_tensor, no_complex


# -- cumsum, cumprod ----------------------------------------------------------------------------
def _reverse_cumsum(g, dim):
    flip = _shape_ops.flip
    return flip(cumsum_op(flip(g, dim), dim, g.dtype), dim)


def _cumsum_backward(ctx, g, self, dim, dtype):
    if not ctx.meta(0)[0]:
        return (g,)
    return (_reverse_cumsum(g, dim),)


def _cumprod_backward(ctx, g, self, dim, dtype):
    if not self._shape or self._shape[dim] == 0:
        return (g,)
    # (under vmap: any zero in any example takes the exact path for all of them)
    if not bool(every_example(_ew.binary_api["eq"](self, 0)).any()):
        return (_reverse_cumsum(g * ctx.result, dim) / self,)
    # zeros: d out_i / d x_k = prod_{j<=i, j!=k} x_j (i >= k), built for every k at once from
    # copies of x with x_k set to 1; O(n^2) in the scanned length
    n = self._shape[dim]
    x = self.movedim(dim, -1)                                        # (..., n)
    hot = _fac.eye(n, dtype=self.dtype, device=self.device).bool()   # (k, i)
    xk = _ew.where(hot, 1.0, x.unsqueeze(-2))                        # (..., k, i)
    prods = cumprod_op(xk, xk.ndim - 1, self.dtype)
    steps = _fac.arange(n, device=self.device)
    upper = _ew.binary_api["ge"](steps.unsqueeze(0), steps.unsqueeze(1))   # i >= k
    gk = _primitives.sum_op(_grad.keep_where(prods * g.movedim(dim, -1).unsqueeze(-2), upper),
                      (xk.ndim - 1,), False, self.dtype)             # (..., k)
    return (gk.movedim(-1, dim),)


cumsum_op = define("cumsum(Tensor self, int dim, dtype dtype) -> Tensor",
                   meta=along_dim_meta("cumsum"),
                   derivative=Derivative(_cumsum_backward, complex_ok=True))
cumprod_op = define("cumprod(Tensor self, int dim, dtype dtype) -> Tensor",
                    meta=along_dim_meta("cumprod"),
                    derivative=Derivative(_cumprod_backward, save=("self", "result")))


def _make_scan(name, op):
    def fn(input, dim, *, dtype=None):
        check_tensor(input, name)
        d = _wrap_dim(dim, input.ndim, name)
        dt = accumulate_dtype(input, dtype)
        if dt is _dtype.bool_:
            raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")
        return op(input, d, dt)

    def fn_(self, dim, *, dtype=None):
        if dtype is not None and _dtype.as_dtype(dtype) is not self.dtype:
            cpp = cpp_dtype_name
            raise RuntimeError(f"Bad in-place call: input tensor dtype {cpp(self.dtype)} and "
                               f"output tensor dtype {cpp(_dtype.as_dtype(dtype))} should match")
        if self.dtype is _dtype.bool_:
            raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")
        return self.copy_(op(self, _wrap_dim(dim, self.ndim, name + "_"), self.dtype))

    fn.__name__, fn_.__name__ = name, name + "_"
    setattr(Tensor, name + "_", fn_)
    return tensor_method()(fn)


cumsum = _make_scan("cumsum", cumsum_op)
cumprod = _make_scan("cumprod", cumprod_op)


# -- softmax, log_softmax -----------------------------------------------------------------------
def _dims_of(shape, dim):
    return (dim,) if shape else ()


def _softmax_backward(ctx, g, self, dim, dtype):
    return (softmax_backward_data_op(g, ctx.result, dim, ctx.meta(0)[1]),)


def _log_softmax_backward(ctx, g, self, dim, dtype):
    return (log_softmax_backward_data_op(g, ctx.result, dim, ctx.meta(0)[1]),)


# -- their backward ops (PyTorch's _softmax_backward_data, _log_softmax_backward_data): one op
# (one kernel) instead of three or four, and what custom autograd Functions call by name
def _as(t, dtype):
    return t if t.dtype is dtype else t.to(dtype)


def _softmax_data_composite(grad_output, output, dim, input_dtype):
    """output * (grad_output - sum(grad_output * output, dim))."""
    dims = _dims_of(output._shape, dim)
    g = grad_output
    return _as(output * (g - _primitives.sum_op(g * output, dims, True, g.dtype)), input_dtype)


def _log_softmax_data_composite(grad_output, output, dim, input_dtype):
    """grad_output - exp(output) * sum(grad_output, dim)."""
    dims = _dims_of(output._shape, dim)
    g = grad_output
    return _as(g - _ew.unary_api["exp"](output) * _primitives.sum_op(g, dims, True, g.dtype),
               input_dtype)


def _softmax_data_double(ctx, gg, grad_output, output, dim, input_dtype):
    # r = y * (g - S), S = sum(g * y): dr/dg is the same map of gg; dr/dy = gg * (g - S) -
    # g * sum(gg * y)
    g, y = grad_output, output
    gg = _as(gg, g.dtype)
    dims = _dims_of(y._shape, dim)
    g_g = softmax_backward_data_op(gg, y, dim, g.dtype) if ctx.needs(0) else None
    g_y = None
    if ctx.needs(1):
        s = _primitives.sum_op(g * y, dims, True, g.dtype)
        g_y = gg * (g - s) - g * _primitives.sum_op(gg * y, dims, True, g.dtype)
    return g_g, g_y, None, None


def _log_softmax_data_double(ctx, gg, grad_output, output, dim, input_dtype):
    # r = g - exp(y) * sum(g): dr/dg = gg - sum(gg * exp(y)); dr/dy = -gg * exp(y) * sum(g)
    g, y = grad_output, output
    gg = _as(gg, g.dtype)
    dims = _dims_of(y._shape, dim)
    e = _ew.unary_api["exp"](y)
    g_g = gg - _primitives.sum_op(gg * e, dims, True, g.dtype) if ctx.needs(0) else None
    g_y = -(gg * e) * _primitives.sum_op(g, dims, True, g.dtype) if ctx.needs(1) else None
    return g_g, g_y, None, None


def _softmax_data_meta(name):
    def meta(grad_output, output, dim, input_dtype):
        if grad_output._shape != output._shape or grad_output.dtype is not output.dtype:
            raise RuntimeError(f"{name}: grad_output {list(grad_output._shape)} "
                               f"({grad_output.dtype}) and output {list(output._shape)} "
                               f"({output.dtype}) must have one shape and dtype")
        _meta._check_dim(name, dim, output.ndim)
        return output._shape, input_dtype
    return meta


softmax_backward_data_op = define(
    "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, dtype input_dtype) "
    "-> Tensor", meta=_softmax_data_meta("_softmax_backward_data"),
    composite=_softmax_data_composite,
    derivative=Derivative(_softmax_data_double, save=("grad_output", "output")))
log_softmax_backward_data_op = define(
    "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, dtype input_dtype) "
    "-> Tensor", meta=_softmax_data_meta("_log_softmax_backward_data"),
    composite=_log_softmax_data_composite,
    derivative=Derivative(_log_softmax_data_double, save=("grad_output", "output")))
softmax_op = define("softmax(Tensor self, int dim, dtype dtype) -> Tensor",
                    meta=along_dim_meta("softmax"),
                    derivative=Derivative(_softmax_backward, save=("result",)))
log_softmax_op = define("log_softmax(Tensor self, int dim, dtype dtype) -> Tensor",
                        meta=along_dim_meta("log_softmax"),
                        derivative=Derivative(_log_softmax_backward, save=("result",)))


@softmax_op.def_onnx
def _softmax_onnx(b, c, x, dim, *rest):
    return b.op("Softmax", [x], axis=int(dim))


@log_softmax_op.def_onnx
def _log_softmax_onnx(b, c, x, dim, *rest):
    return b.op("LogSoftmax", [x], axis=int(dim))


def _make_softmax(name, op):
    def fn(input, dim, dtype=None):
        check_tensor(input, name)
        d = _wrap_dim(dim, input.ndim, name)
        dt = input.dtype if dtype is None else _dtype.as_dtype(dtype)
        if dt.category != FLOATING:
            raise NotImplementedError(f"\"{name}\" not implemented for '{_dtype_title(dt)}'")
        if dtype is not None and input.dtype.category == COMPLEX:
            input = input.to(dt)        # PyTorch casts to dtype first (the imaginary part goes)
        no_complex(input, name)
        return op(input, d, dt)

    fn.__name__ = name
    return tensor_method()(fn)


softmax = _make_softmax("softmax", softmax_op)
log_softmax = _make_softmax("log_softmax", log_softmax_op)


def _make_softmax_backward_data(name, op):
    def fn(grad_output, output, dim, input_dtype):
        check_tensor(grad_output, name)
        check_tensor(output, name)
        return op(grad_output, output, _wrap_dim(dim, output.ndim, name),
                  _dtype.as_dtype(input_dtype))
    fn.__name__ = name
    fn.__doc__ = f"``torch.{name}(grad_output, output, dim, input_dtype)``: the gradient of " \
                 f"{name[1:name.index('_backward')]} from its output, in ``input_dtype``."
    return fn


_softmax_backward_data = _make_softmax_backward_data("_softmax_backward_data",
                                                     softmax_backward_data_op)
_log_softmax_backward_data = _make_softmax_backward_data("_log_softmax_backward_data",
                                                         log_softmax_backward_data_op)


# -- cummax, cummin, logcumsumexp: compositions of ember ops ----------------------------------
def _shift_fill(t, dim, k, fill):
    """``t`` shifted by ``k`` along ``dim`` (toward higher indices), ``fill`` coming in."""
    em = ember_namespace()
    length = t.shape[dim]
    head_shape = list(t.shape)
    head_shape[dim] = min(k, length)
    head = em.full(head_shape, fill, dtype=t.dtype, device=t.device)
    if k >= length:
        return head
    return em.cat([head, t.narrow(dim, 0, length - k)], dim)


def _cum_extreme(input, dim, take_new):
    """Inclusive scan of (value, index) pairs: a later pair wins where ``take_new(new, old)``
    (ties go to the later index, as in PyTorch; NaN propagates and sticks)."""
    em = ember_namespace()
    if input.ndim == 0:
        return input.clone(), em.zeros((), dtype=_dtype.int64, device=input.device)
    length = input.shape[dim]
    shape = [1] * input.ndim
    shape[dim] = length
    idx = em.arange(length, device=input.device).reshape(shape).expand(*input.shape)
    values, index = input, idx
    step = 1
    while step < length:
        prev_v = _shift_fill(values, dim, step, 0)
        prev_i = _shift_fill(index, dim, step, -1)
        has_prev = prev_i.ge(0)
        keep_prev = has_prev & ~take_new(values, prev_v)
        values = em.where(keep_prev, prev_v, values)
        index = em.where(keep_prev, prev_i, index)
        step *= 2
    index = index.contiguous()
    return input.gather(dim, index), index


def _isnan(t):
    return t.ne(t)  # NaN != NaN; never true for integers


def _later_max(new, old):
    return new.ge(old) | _isnan(new) & ~_isnan(old)


def _later_min(new, old):
    return new.le(old) | _isnan(new) & ~_isnan(old)


def _cum_extreme_backward(ctx, g, self, dim):
    # PyTorch's cummaxmin_backward: each gradient added in where its value came from
    shape = ctx.meta(0)[0]
    if not shape:
        return (g[0],)
    return (_grad.zeros(shape, g[0]).scatter_add(dim, ctx.result[1], g[0]),)


# one node for values and indices (PyTorch's CummaxBackward0 / CumminBackward0)
cummax_op = define("cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)",
                   composite=lambda x, dim: _cum_extreme(x, dim, _later_max),
                   derivative=Derivative(_cum_extreme_backward, save=("result1",),
                                         outputs=(True, False)))
cummin_op = define("cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)",
                   composite=lambda x, dim: _cum_extreme(x, dim, _later_min),
                   derivative=Derivative(_cum_extreme_backward, save=("result1",),
                                         outputs=(True, False)))


for _name in ("cummax", "cummin"):
    setattr(_rt, _name, _rt._return_type(_name, ["values", "indices"]))


@tensor_method()
def cummax(input, dim):
    """Running maximum along ``dim`` and the index where it was (last) reached."""
    require_tensor(input, "cummax")
    return _rt.cummax(*cummax_op(input, _wrap_dim(dim, input.ndim, "cummax")))


@tensor_method()
def cummin(input, dim):
    """Running minimum along ``dim`` and the index where it was (last) reached."""
    require_tensor(input, "cummin")
    return _rt.cummin(*cummin_op(input, _wrap_dim(dim, input.ndim, "cummin")))


@tensor_method()
def logcumsumexp(input, dim):
    """``log(cumsum(exp(input)))`` along ``dim``, shifted by the running maximum for range."""
    require_tensor(input, "logcumsumexp")
    em = ember_namespace()
    if input.ndim == 0:
        return input.clone()
    dim = _wrap_dim(dim, input.ndim, "logcumsumexp")
    if input.shape[dim] == 0:
        return input.clone()
    if input.is_complex():
        return _complex_logcumsumexp(input, dim)
    shift = cummax(input.detach(), dim).values
    shift = em.where(shift.isinf(), em.zeros_like(shift), shift)
    # terms exp(x_j - m_i) for j <= i never overflow: m_i is their running maximum
    x = input.unsqueeze(dim + 1)                          # (..., L, 1, ...)
    m = shift.unsqueeze(dim)                              # (..., 1, L, ...)
    length = input.shape[dim]
    mask_shape = [1] * (input.ndim + 1)
    mask_shape[dim], mask_shape[dim + 1] = length, length
    j = em.arange(length, device=input.device)
    upper = j.reshape(-1, 1).le(j.reshape(1, -1)).reshape(mask_shape)  # j <= i
    terms = em.where(upper, (x - m).exp(), em.zeros((), dtype=input.dtype, device=input.device))
    return terms.sum(dim).log() + shift


# -- ember.func: batching rules (the dim shifts past the batch); cumsum is linear --------------
for _op in (cumsum_op, cumprod_op, softmax_op, log_softmax_op):
    _op.def_batch_rule(_batching.along_dim(_op))
cumsum_op.def_jvp(_tangents.linear(cumsum_op))


def _softmax_jvp(ctx, tangents, self, dim, dtype):
    t = tangents[0]
    if t is None:
        return None
    y = ctx.result
    return y * (t - _primitives.sum_op(y * t, _dims_of(y._shape, dim), True, y.dtype))


def _log_softmax_jvp(ctx, tangents, self, dim, dtype):
    t = tangents[0]
    if t is None:
        return None
    p = _ew.unary_api["exp"](ctx.result)
    return t - _primitives.sum_op(p * t, _dims_of(p._shape, dim), True, p.dtype)


softmax_op.def_jvp(_softmax_jvp)
log_softmax_op.def_jvp(_log_softmax_jvp)


def _complex_logcumsumexp(input, dim):
    """PyTorch's complex scan: fold ``max + log1p(exp(min - max))`` along ``dim``, min and max
    by real part (a tie keeps the running value as max). Its imaginary parts are not wrapped
    into (-pi, pi], so a closed form ``log(cumsum(exp(x)))`` would differ by multiples of 2 pi."""
    em = ember_namespace()
    outs = [input.select(dim, 0)]
    for k in range(1, input.shape[dim]):
        acc, new = outs[-1], input.select(dim, k)
        acc_smaller = acc.real.lt(new.real)
        low, high = em.where(acc_smaller, acc, new), em.where(acc_smaller, new, acc)
        outs.append((low - high).exp().log1p() + high)
    return em.stack(outs, dim)
