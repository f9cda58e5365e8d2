"""Extrema and logical reductions: amax, amin, max, min (over everything, along a dim, or
elementwise against another tensor), aminmax, argmax, argmin, all, any."""
from __future__ import annotations

from ... import _dtype, return_types
from ..._tensor import Tensor, _wrap_dim
from ...dispatch.dispatcher import define
from ...dispatch.facets import NOT_DIFFERENTIABLE, Derivative
from .. import _batching, _grad, _meta
from .._lowering import onnx_reduce
from .. import elementwise as _ew
from .._util import tensor_method
from . import sums as _sums
from ._rules import (check_tensor, given, no_complex, nonempty, reduce_dims,
                     reduction_meta, restore)

_int64 = _dtype.int64


# -- meta functions -----------------------------------------------------------------------------
def _extreme_dim_meta(op: str):
    """``max_dim``/``min_dim(Tensor self, int dim, bool keepdim) -> (values, indices)``."""
    def meta(x, dim, keepdim):
        dims = (_meta._check_dim(op, dim, x.ndim),) if x.ndim else ()
        shape = _meta.reduced(x._shape, dims, keepdim)
        return (shape, x.dtype), (shape, _int64)
    return meta


def _arg_extreme_meta(op: str):
    """``argmax(Tensor self, int? dim, bool keepdim)``: None = the flat index."""
    def meta(x, dim, keepdim):
        if dim is None:
            return ((1,) * x.ndim if keepdim else ()), _int64
        dims = (_meta._check_dim(op, dim, x.ndim),) if x.ndim else ()
        return _meta.reduced(x._shape, dims, keepdim), _int64
    return meta


# -- derivatives --------------------------------------------------------------------------------
def _extreme_backward(ctx, g, self, dim, keepdim):
    """amax/amin: the gradient is shared evenly between the elements equal to the extremum
    (PyTorch's scale_grad_by_count: g / count * hit, so a NaN extremum, which equals nothing,
    gives NaN gradients as there)."""
    shape = self._shape
    r = _grad.unsqueeze_dims(ctx.result, shape, dim, keepdim)
    hit = _ew.binary_api["eq"](self, r)
    count = _sums.sum_op(hit, dim, True, self.dtype)
    return ((restore(g, shape, dim, keepdim) / count) * hit,)


def _extreme_all_backward(ctx, g, self):
    """max()/min() over everything: PyTorch's evenly_distribute_backward (a NaN result gives
    the gradient to the NaNs)."""
    return (_grad.evenly_distribute(g, self, ctx.result),)


def _extreme_dim_backward(ctx, g, self, dim, keepdim):
    """max/min along a dim: the gradient goes to the element the index points at."""
    return (_grad.scatter_selected(g[0], ctx.result[1], ctx.meta(0)[0], dim, keepdim),)


# -- amax, amin, max, min -----------------------------------------------------------------------
_EXTREME_SCHEMA = "(Tensor self, int[] dim, bool keepdim) -> Tensor"
amax_op = define("amax" + _EXTREME_SCHEMA, meta=reduction_meta("amax", "same"),
                 derivative=Derivative(_extreme_backward, save=("self", "result")))
amin_op = define("amin" + _EXTREME_SCHEMA, meta=reduction_meta("amin", "same"),
                 derivative=Derivative(_extreme_backward, save=("self", "result")))
max_all_op = define("max_all(Tensor self) -> Tensor",
                    composite=lambda self: amax_op(self, tuple(range(self.ndim)), False),
                    derivative=Derivative(_extreme_all_backward, save=("self", "result"),
                                          name="MaxBackward1"),
                    doc="max() over every element (torch's max(Tensor self))")
min_all_op = define("min_all(Tensor self) -> Tensor",
                    composite=lambda self: amin_op(self, tuple(range(self.ndim)), False),
                    derivative=Derivative(_extreme_all_backward, save=("self", "result"),
                                          name="MinBackward1"),
                    doc="min() over every element (torch's min(Tensor self))")
amax_op.def_onnx(onnx_reduce("ReduceMax"))
amin_op.def_onnx(onnx_reduce("ReduceMin"))
max_dim_op = define("max_dim(Tensor self, int dim, bool keepdim) -> (Tensor values, Tensor "
                    "indices)", meta=_extreme_dim_meta("max_dim"),
                    derivative=Derivative(_extreme_dim_backward, save=("result1",),
                                          outputs=(True, False), name="MaxBackward0"))
min_dim_op = define("min_dim(Tensor self, int dim, bool keepdim) -> (Tensor values, Tensor "
                    "indices)", meta=_extreme_dim_meta("min_dim"),
                    derivative=Derivative(_extreme_dim_backward, save=("result1",),
                                          outputs=(True, False), name="MinBackward0"))


def _make_amax(name, op):
    def fn(input, dim=(), keepdim=False):
        check_tensor(input, name)
        no_complex(input, name)
        dims = reduce_dims(input, dim, name)
        nonempty(input, dims, name, given(dim))
        return op(input, dims, bool(keepdim))

    fn.__name__ = name
    return tensor_method()(fn)


amax = _make_amax("amax", amax_op)
amin = _make_amax("amin", amin_op)


def _make_max(name, all_op, dim_op, binary):
    result = getattr(return_types, name)

    def fn(input, dim=None, keepdim=False, *, other=None):
        check_tensor(input, name)
        if isinstance(dim, Tensor):  # max(input, other): the elementwise maximum
            dim, other = None, dim
        if other is not None:
            return binary(input, other)
        no_complex(input, name)
        if dim is None:
            nonempty(input, (), name, False)
            return all_op(input)
        d = _wrap_dim(dim, input.ndim, name)
        if input.ndim:
            nonempty(input, (d,), name, True)
        return result(*dim_op(input, d, bool(keepdim)))

    fn.__name__ = name
    return tensor_method()(fn)


def _binary(name):
    def fn(a, b):
        return _ew.binary_api[name](a, b)
    return fn


max = _make_max("max", max_all_op, max_dim_op, _binary("maximum"))
min = _make_max("min", min_all_op, min_dim_op, _binary("minimum"))

aminmax_op = define("aminmax(Tensor self, int[] dim, bool keepdim) -> (Tensor min, Tensor max)",
                    composite=lambda x, dim, keepdim: (amin_op(x, dim, keepdim),
                                                       amax_op(x, dim, keepdim)))


@tensor_method()
def aminmax(input, *, dim=None, keepdim=False):
    check_tensor(input, "aminmax")
    no_complex(input, "aminmax")
    if dim is None:
        dims = tuple(range(input.ndim))
    else:
        d = _wrap_dim(dim, input.ndim, "aminmax")
        dims = (d,) if input.ndim else ()
    if not input.numel():
        if dim is None:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        for d in dims:
            if input._shape[d] == 0:
                raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    return return_types.aminmax(*aminmax_op(input, dims, bool(keepdim)))


# -- argmax, argmin -----------------------------------------------------------------------------
_ARG_SCHEMA = "(Tensor self, int? dim, bool keepdim) -> Tensor"
argmax_op = define("argmax" + _ARG_SCHEMA, meta=_arg_extreme_meta("argmax"),
                   derivative=NOT_DIFFERENTIABLE)
argmin_op = define("argmin" + _ARG_SCHEMA, meta=_arg_extreme_meta("argmin"),
                   derivative=NOT_DIFFERENTIABLE)


def _make_arg(name, op):
    def fn(input, dim=None, keepdim=False):
        check_tensor(input, name)
        if input.dtype is _dtype.bool_:
            raise RuntimeError(f"{name}(): does not support bool input")
        no_complex(input, name)
        if dim is None:
            if not input.numel():
                raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                                 f"input.numel() == 0.")
            return op(input, None, bool(keepdim))
        d = _wrap_dim(dim, input.ndim, name)
        if not input.ndim:
            return op(input, None, bool(keepdim))
        if input._shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        return op(input, d, bool(keepdim))

    fn.__name__ = name
    return tensor_method()(fn)


argmax = _make_arg("argmax", argmax_op)
argmin = _make_arg("argmin", argmin_op)


# -- all, any -----------------------------------------------------------------------------------
_LOGICAL_SCHEMA = "(Tensor self, int[] dim, bool keepdim, dtype dtype) -> Tensor"
all_op = define("all" + _LOGICAL_SCHEMA, meta=reduction_meta("all"),
                derivative=NOT_DIFFERENTIABLE)
any_op = define("any" + _LOGICAL_SCHEMA, meta=reduction_meta("any"),
                derivative=NOT_DIFFERENTIABLE)


def _make_logical(name, op):
    def fn(input, dim=None, keepdim=False):
        check_tensor(input, name)
        dtype = _dtype.uint8 if input.dtype is _dtype.uint8 else _dtype.bool_
        return op(input, reduce_dims(input, dim, name, empty_is_all=False), bool(keepdim), dtype)

    fn.__name__ = name
    return tensor_method()(fn)


all = _make_logical("all", all_op)
any = _make_logical("any", any_op)


# -- ember.func: batching rules (dims shift past the batch) ------------------------------------
for _op in (amax_op, amin_op, all_op, any_op):
    _op.def_batch_rule(_batching.over_dims(_op))
for _op in (max_dim_op, min_dim_op):
    _op.def_batch_rule(_batching.along_dim(_op))
for _op in (argmax_op, argmin_op):
    _op.def_batch_rule(_batching.along_dim(_op, optional=True))
