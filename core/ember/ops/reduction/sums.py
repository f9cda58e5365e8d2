"""Sums, products, means and variances: sum, prod, nansum, mean, nanmean, var, std, var_mean,
std_mean, count_nonzero — each op with its meta and derivative."""
from __future__ import annotations

import math
import warnings

from ... import _dtype
from ..._dtype import FLOATING
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from ...runtime.registry import registry
from .. import _batching, _grad, _primitives, _tangents
from .. import conversion as _conv
from .._lowering import onnx_reduce
from .. import elementwise as _ew
from .. import shape as _shape_ops
from .._util import _dtype_title, tensor_method
from . import scans as _scans  # formulas only: scans imports this module
from ._rules import (accumulate_dtype, check_tensor, overload_name, reduce_dims, reduction_meta,
                     restore)
from ..._warn import user_stacklevel


# -- sum, prod, nansum, mean --------------------------------------------------------------------
def _sum_backward(ctx, g, self, dim, keepdim, dtype):
    return (restore(g, ctx.meta(0)[0], dim, keepdim),)


def _nansum_backward(ctx, g, self, dim, keepdim, dtype):
    return (_ew.where(_ew.unary_api["isnan"](self), 0.0, restore(g, self._shape, dim, keepdim)),)


def _mean_backward(ctx, g, self, dim, keepdim, dtype):
    shape = ctx.meta(0)[0]
    n = math.prod(shape[d] for d in dim) if shape else 1
    return (restore(g, shape, dim, keepdim) / n,)


def _exclusive_products(x, dim):
    """prod of all other elements along ``dim``, for every element, without dividing (exact
    when some elements are 0)."""
    n = x._shape[dim]
    one = _grad.ones(x._shape[:dim] + (1,) + x._shape[dim + 1:], x)
    cumprod, cat, flip = _scans.cumprod_op, _shape_ops.cat, _shape_ops.flip
    left = cumprod(cat([one, x.narrow(dim, 0, n - 1)], dim), dim, x.dtype)
    right = flip(cumprod(flip(cat([x.narrow(dim, 1, n - 1), one], dim), dim), dim, x.dtype), dim)
    return left * right


def _prod_backward(ctx, g, self, dim, keepdim, dtype):
    shape = self._shape
    if not shape:
        return (g,)
    g = restore(g, shape, dim, keepdim)
    rest = [d for d in range(self.ndim) if d not in dim]
    moved = self.permute(*rest, *dim)
    flat = moved.reshape(moved._shape[:len(rest)] + (-1,))
    if flat._shape[-1] == 0:
        return (_grad.zeros_like(self),)
    others = _exclusive_products(flat, flat.ndim - 1).reshape(moved._shape)
    inverse = [0] * self.ndim
    for i, d in enumerate(rest + list(dim)):
        inverse[d] = i
    return (g * _grad.conj(others.permute(*inverse)),)


_SUM_SCHEMA = "(Tensor self, int[] dim, bool keepdim, dtype dtype) -> Tensor"
sum_op = define("sum" + _SUM_SCHEMA, meta=reduction_meta("sum"),
                derivative=Derivative(_sum_backward, complex_ok=True,
                                      name=overload_name("Sum")))
prod_op = define("prod" + _SUM_SCHEMA, meta=reduction_meta("prod"),
                 derivative=Derivative(_prod_backward, save=("self",),
                                       name=overload_name("Prod"), complex_ok=True))
nansum_op = define("nansum" + _SUM_SCHEMA, meta=reduction_meta("nansum"),
                   derivative=Derivative(_nansum_backward, save=("self",),
                                         name="NansumBackward0"))
mean_op = define("mean" + _SUM_SCHEMA, meta=reduction_meta("mean"),
                 derivative=Derivative(_mean_backward, complex_ok=True,
                                       name=overload_name("Mean")))
_primitives.provide(sum_op=sum_op)
sum_op.def_onnx(onnx_reduce("ReduceSum"))
mean_op.def_onnx(onnx_reduce("ReduceMean"))


def _make_sum(name, op):
    def fn(input, dim=None, keepdim=False, *, dtype=None):
        check_tensor(input, name)
        return op(input, reduce_dims(input, dim, name), bool(keepdim),
                  accumulate_dtype(input, dtype))

    fn.__name__ = name
    return tensor_method()(fn)


sum = _make_sum("sum", sum_op)
prod = _make_sum("prod", prod_op)
nansum = _make_sum("nansum", nansum_op)


def _mean_dtype(x, dtype, op):
    if dtype is not None:
        d = _dtype.as_dtype(dtype)
        if d.category < FLOATING:
            raise RuntimeError(f"{op}(): could not infer output dtype. Optional dtype must be "
                               f"either a floating point or complex dtype. Got: {_dtype_title(d)}")
        return d
    if x.dtype.category < FLOATING:
        raise RuntimeError(f"{op}(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {_dtype_title(x.dtype)}")
    return x.dtype


@tensor_method()
def mean(input, dim=None, keepdim=False, *, dtype=None):
    check_tensor(input, "mean")
    return mean_op(input, reduce_dims(input, dim, "mean"), bool(keepdim),
                   _mean_dtype(input, dtype, "mean"))


def _nanmean(x, dim, keepdim, dtype):
    unary = _ew.unary_api
    valid = unary["logical_not"](unary["isnan"](x))
    return _ew.div(nansum_op(x, dim, keepdim, dtype), sum_op(valid, dim, keepdim, dtype))


nanmean_op = define("nanmean" + _SUM_SCHEMA, composite=_nanmean)


@tensor_method()
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    check_tensor(input, "nanmean")
    if input.dtype.category < FLOATING:
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but "
                           f"got {_dtype_title(input.dtype)}")
    return nanmean_op(input, reduce_dims(input, dim, "nanmean"), bool(keepdim),
                      _mean_dtype(input, dtype, "nanmean"))


# -- var, std -----------------------------------------------------------------------------------
def _var_backward(ctx, g, self, dim, correction, keepdim):
    shape = self._shape
    n = math.prod(shape[d] for d in dim) if shape else 1
    centered = self - mean_op(self, dim, True, self.dtype)
    return (restore(g, shape, dim, keepdim) * centered * (2.0 / (n - correction)),)


var_op = define("var(Tensor self, int[] dim, float correction, bool keepdim) -> Tensor",
                meta=reduction_meta("var", "real"),
                derivative=Derivative(_var_backward, save=("self",)))


def _sqrt(x):
    return _ew.unary_api["sqrt"](x)


_NARROW_FLOATS = (_dtype.float16, _dtype.bfloat16, _dtype.float32)


def _std(x, dim, correction, keepdim):
    """sqrt(var), with the variance of a narrow float computed in float64 where the device
    has it, as PyTorch does: the squared deviations may overflow the input's dtype (the std of
    [0, 1e30] in float32 is 7.07e29, not inf) while their square root fits."""
    if x.dtype in _NARROW_FLOATS and _dtype.float64 in registry.get(x.device.type).dtypes:
        wide = _conv.to_copy_op(x, _dtype.float64)
        return _conv.to_copy_op(_sqrt(var_op(wide, dim, correction, keepdim)), x.dtype)
    return _sqrt(var_op(x, dim, correction, keepdim))


def _std_backward(ctx, g, self, dim, correction, keepdim):
    # PyTorch's std_backward: var's backward of g / (2 std), that ratio 0 where std is 0 (a
    # constant input: the subgradient 0, not 0/0)
    r = ctx.result
    ratio = _ew.where(r.eq(0), 0.0, g / (r * 2))
    return _var_backward(ctx, ratio, self, dim, correction, keepdim)


std_op = define("std(Tensor self, int[] dim, float correction, bool keepdim) -> Tensor",
                meta=reduction_meta("std", "real"), composite=_std,
                derivative=Derivative(_std_backward, save=("self", "result")))
def _mean_part(g, shape, dim, keepdim):
    n = math.prod(shape[d] for d in dim) if shape else 1
    return restore(g, shape, dim, keepdim) / n


def _var_mean_backward(ctx, g, self, dim, correction, keepdim):
    gv, gm = g
    return (_var_backward(ctx, gv, self, dim, correction, keepdim)[0] +
            _mean_part(gm, self._shape, dim, keepdim),)


def _std_mean_backward(ctx, g, self, dim, correction, keepdim):
    gs, gm = g
    r = ctx.result[0]
    ratio = _ew.where(r.eq(0), 0.0, gs / (r * 2))
    return (_var_backward(ctx, ratio, self, dim, correction, keepdim)[0] +
            _mean_part(gm, self._shape, dim, keepdim),)


# one node for both outputs (PyTorch's VarMeanBackward0 / StdMeanBackward0)
var_mean_op = define("var_mean(Tensor self, int[] dim, float correction, bool keepdim) -> "
                     "(Tensor, Tensor)",
                     composite=lambda x, dim, c, keepdim: (var_op(x, dim, c, keepdim),
                                                           mean_op(x, dim, keepdim, x.dtype)),
                     derivative=Derivative(_var_mean_backward, save=("self",)))
std_mean_op = define("std_mean(Tensor self, int[] dim, float correction, bool keepdim) -> "
                     "(Tensor, Tensor)",
                     composite=lambda x, dim, c, keepdim: (std_op(x, dim, c, keepdim),
                                                           mean_op(x, dim, keepdim, x.dtype)),
                     derivative=Derivative(_std_mean_backward, save=("self", "result0")))


def _var_args(op, input, dim, unbiased, keepdim, correction):
    check_tensor(input, op)
    if isinstance(dim, bool):  # var(input, unbiased)
        if unbiased is not None:
            raise TypeError(f"{op}() received an invalid combination of arguments: unbiased was "
                            f"given twice")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}() received an invalid combination of arguments: pass either "
                        f"'unbiased' or 'correction', not both")
    if input.dtype.category < FLOATING:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    dims = reduce_dims(input, dim, op)
    c = correction if correction is not None else 0 if unbiased is False else 1
    if math.prod(input._shape[d] for d in dims) - c <= 0:
        warnings.warn(f"{op.split('_')[0]}(): degrees of freedom is <= 0. Correction should be "
                      f"strictly less than the reduction factor (input numel divided by output "
                      f"numel).", UserWarning, stacklevel=user_stacklevel())
    return input, dims, float(c), bool(keepdim)


def _make_var(name, op):
    def fn(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return op(*_var_args(name, input, dim, unbiased, keepdim, correction))

    fn.__name__ = name
    return fn


var = tensor_method()(_make_var("var", var_op))
std = tensor_method()(_make_var("std", std_op))
var_mean = _make_var("var_mean", var_mean_op)
std_mean = _make_var("std_mean", std_mean_op)


# -- count_nonzero ------------------------------------------------------------------------------
def _count_nonzero(x, dim):
    return sum_op(_ew.binary_api["ne"](x, 0), dim, False, _dtype.int64)


count_nonzero_op = define("count_nonzero(Tensor self, int[] dim) -> Tensor",
                          composite=_count_nonzero)


@tensor_method()
def count_nonzero(input, dim=None):
    check_tensor(input, "count_nonzero")
    return count_nonzero_op(input, reduce_dims(input, dim, "count_nonzero"))


# -- ember.func: reductions over int[] dims batch by shifting the dims; sum and mean are linear;
# the others' jvps come from their backward formulas (transposed) or their composites ----------
for _op in (sum_op, prod_op, nansum_op, mean_op, var_op):
    _op.def_batch_rule(_batching.over_dims(_op))
sum_op.def_jvp(_tangents.linear(sum_op))
mean_op.def_jvp(_tangents.linear(mean_op))
