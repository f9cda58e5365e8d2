"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode,
unique.

Indices are int64. NaN sorts above every number (last ascending, first descending), and equal
values keep their input order (``sort`` is always stable here, which PyTorch allows). Order
statistics are composites of the ``sort`` kernel; ``mode`` and ``unique`` have kernels. topk's
gradient comes from sort's: it is a sort, a narrow and a copy.
"""
from __future__ import annotations

import math

from .. import _dtype, return_types
from .._tensor import Tensor, _wrap_dim
from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from . import _batching, _grad, _meta
from ..return_types import _return_type
from ._util import ember_namespace, require_tensor, tensor_method
from .elementwise import where
from .factories import full
from .indexing import gather_op

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
           "unique"]

for _name in ("sort", "topk", "kthvalue", "median", "nanmedian", "mode"):
    setattr(return_types, _name, _return_type(_name, ["values", "indices"]))


# -- sort, mode, unique: metas and derivatives ---------------------------------------------------
# values carry the gradient back to where they came from; indices are not differentiable
def _sort_meta(self, dim, descending, stable):
    _meta._check_dim("sort", dim, self.ndim)
    s = _meta.shape_of(self)
    return (s, self.dtype), (s, _dtype.int64)


def _sort_backward(ctx, g, self, dim, descending, stable):
    return (_grad.scatter_selected(g[0], ctx.result[1], ctx.meta(0)[0], dim),)


def _sort_name(self, dim, descending, stable):
    # the kernels always sort stably, so ``stable`` only says which overload was called:
    # PyTorch's sort.stable (any ``stable=``) records SortBackward1
    return "SortBackward1" if stable else "SortBackward0"


def _mode_meta(self, dim):
    dims = (_meta._check_dim("mode", dim, self.ndim),) if self.ndim else ()
    s = _meta.reduced(self._shape, dims, False)
    return (s, self.dtype), (s, _dtype.int64)


def _mode_backward(ctx, g, self, dim):
    return (_grad.scatter_selected(g[0], ctx.result[1], ctx.meta(0)[0], dim, keepdim=False),)


sort_op = define("sort(Tensor self, int dim, bool descending, bool stable) -> "
                 "(Tensor values, Tensor indices)", meta=_sort_meta,
                 derivative=Derivative(_sort_backward, save=("result1",), outputs=(True, False),
                                       complex_ok=True, name=_sort_name))
mode_op = define("mode(Tensor self, int dim) -> (Tensor values, Tensor indices)",
                 meta=_mode_meta,
                 derivative=Derivative(_mode_backward, save=("result1",), outputs=(True, False)))
# unique has no derivative (as in PyTorch): its outputs get a node that raises in backward
unique_op = define("unique(Tensor self, int? dim) -> (Tensor values, Tensor inverse, "
                   "Tensor counts)")


def _check(input, op):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.is_complex():
        raise RuntimeError(f"{op}(): complex tensors are not supported (they have no order)")


def _dim(input, dim, op):
    d = _wrap_dim(dim, input.ndim, op)  # a 0-d tensor takes dim 0 or -1, as in PyTorch
    return d if input.ndim else 0


def _nonempty(input, d, op):
    if input.ndim and input._shape[d] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


@tensor_method()
def sort(input, dim=-1, descending=False, stable=None):
    _check(input, "sort")
    d = _dim(input, dim, "sort")
    return return_types.sort(*sort_op(input, d, bool(descending), stable is not None))


@tensor_method()
def argsort(input, dim=-1, descending=False, stable=None):
    return sort(input, dim, descending, stable).indices


@tensor_method()
def msort(input):
    return sort(input, 0).values


def _topk(input, k, d, largest, sorted):
    values, indices = sort_op(input, d, largest, True)
    if input.ndim:
        values, indices = values.narrow(d, 0, k), indices.narrow(d, 0, k)
    return values.contiguous(), indices.contiguous()


def _selection_op(schema, composite, dim_keepdim, name=None):
    """An order statistic composed of sort, recorded as one node for its values and indices
    (PyTorch's TopkBackward0, KthvalueBackward0, MedianBackward1, …) that saves the indices:
    the gradient goes back where they point. ``dim_keepdim(*args after self)``: the dim the
    values were picked along and whether it was kept."""
    def backward(ctx, g, self, *rest):
        dim, keepdim = dim_keepdim(*rest)
        return (_grad.scatter_selected(g[0], ctx.result[1], ctx.meta(0)[0], dim, keepdim),)
    return define(schema + " -> (Tensor values, Tensor indices)", composite=composite,
                  derivative=Derivative(backward, save=("result1",), outputs=(True, False),
                                        name=name))


topk_op = _selection_op("topk(Tensor self, int k, int dim, bool largest, bool sorted)", _topk,
                        lambda k, d, largest, sorted: (d, True))


@tensor_method()
def topk(input, k, dim=-1, largest=True, sorted=True):
    _check(input, "topk")
    d = _dim(input, dim, "topk")
    size = input._shape[d] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"topk(): selected index k out of range (k={k}, dimension {d} has size "
                           f"{size})")
    return return_types.topk(*topk_op(input, int(k), d, bool(largest), bool(sorted)))


def _pick(input, d, keepdim, pos, name):
    """Values and indices at sorted position ``pos`` (an int, or an index tensor of keepdim
    shape) along ``d``, from a stable ascending sort."""
    values, indices = sort_op(input, d, False, True)
    if input.ndim == 0:
        return getattr(return_types, name)(values, indices)
    if isinstance(pos, int):
        values, indices = values.narrow(d, pos, 1), indices.narrow(d, pos, 1)
    else:
        values, indices = values.gather(d, pos), indices.gather(d, pos)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return getattr(return_types, name)(values.contiguous(), indices.contiguous())


@tensor_method()
def kthvalue(input, k, dim=-1, keepdim=False):
    _check(input, "kthvalue")
    d = _dim(input, dim, "kthvalue")
    size = input._shape[d] if input.ndim else 1
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return return_types.kthvalue(*kthvalue_op(input, int(k), d, bool(keepdim)))


def _nan_count(input, d):
    return input.isnan().sum(d, keepdim=True)


def _median_along(input, d, keepdim, name, ignore_nan):
    n = input._shape[d] if input.ndim else 1
    if input.dtype.category != _dtype.FLOATING or input.ndim == 0:
        return _pick(input, d, keepdim, (n - 1) // 2, name)
    nans = _nan_count(input, d)
    if ignore_nan:
        valid = n - nans
        pos = where(valid > 0, (valid - 1).div(2, rounding_mode="floor"), 0)
    else:
        # any NaN makes the median NaN: the first NaN in sorted order
        pos = where(nans > 0, n - nans, (n - 1) // 2)
    return _pick(input, d, keepdim, pos, name)


def _dim_keepdim(*args):
    return args[-2:]


kthvalue_op = _selection_op("kthvalue(Tensor self, int k, int dim, bool keepdim)",
                            lambda x, k, d, keepdim: tuple(_pick(x, d, keepdim, k - 1, "kthvalue")),
                            _dim_keepdim)
median_dim_op = _selection_op(
    "median_dim(Tensor self, int dim, bool keepdim)",
    lambda x, d, keepdim: tuple(_median_along(x, d, keepdim, "median", False)), _dim_keepdim,
    name="MedianBackward1")
nanmedian_dim_op = _selection_op(
    "nanmedian_dim(Tensor self, int dim, bool keepdim)",
    lambda x, d, keepdim: tuple(_median_along(x, d, keepdim, "nanmedian", True)), _dim_keepdim,
    name="NanmedianBackward1")


def _evenly_distribute(ctx, g, self):
    # a median over everything shares its gradient between the elements equal to it; the
    # median along a dim gives it to the one element its index names
    return (_grad.evenly_distribute(g, self, ctx.result),)


def _median_all_op(name, ignore_nan):
    def composite(self):
        return _median_along(self.reshape(-1), 0, False, name, ignore_nan).values
    return define(f"{name}_all(Tensor self) -> Tensor", composite=composite,
                  derivative=Derivative(_evenly_distribute, save=("self", "result"),
                                        name=f"{name.capitalize()}Backward0"),
                  doc=f"{name} of all elements (the lower of the two middle values)")


median_all_op = _median_all_op("median", ignore_nan=False)
nanmedian_all_op = _median_all_op("nanmedian", ignore_nan=True)


def _median(name, ignore_nan):
    all_op = nanmedian_all_op if ignore_nan else median_all_op
    dim_op = nanmedian_dim_op if ignore_nan else median_dim_op

    def fn(input, dim=None, keepdim=False):
        _check(input, name)
        if dim is None:
            if input.numel() == 0:
                if input.dtype.category != _dtype.FLOATING:
                    raise RuntimeError(f"{name}(): input tensor cannot be empty")
                return full((), math.nan, dtype=input.dtype, device=input.device)
            return all_op(input)
        d = _dim(input, dim, name)
        _nonempty(input, d, name)
        return getattr(return_types, name)(*dim_op(input, d, bool(keepdim)))

    fn.__name__ = name
    return tensor_method()(fn)


median = _median("median", ignore_nan=False)
nanmedian = _median("nanmedian", ignore_nan=True)


@tensor_method()
def mode(input, dim=-1, keepdim=False):
    _check(input, "mode")
    d = _dim(input, dim, "mode")
    _nonempty(input, d, "mode")
    values, indices = mode_op(input, d)
    if keepdim and input.ndim:
        values, indices = values.unsqueeze(d), indices.unsqueeze(d)
    return return_types.mode(values, indices)


@tensor_method()
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    _check(input, "unique")
    # the result is always sorted, which PyTorch's sorted=False permits
    d = None if dim is None else _wrap_dim(dim, input.ndim, "unique")
    if d is not None and any(n == 0 for k, n in enumerate(input._shape) if k != d):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    values, inverse, counts = unique_op(input, d)
    out = (values,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts
                                                                else ())
    return out[0] if len(out) == 1 else out


@tensor_method()
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """The first element of every run of equal consecutive elements (slices along ``dim``),
    with the run index of each element and the run lengths on request."""
    require_tensor(input, "unique_consecutive")
    em = ember_namespace()
    if dim is None:
        x = input.reshape(-1)
        d = 0
    else:
        d = dim % max(input.ndim, 1)
        x = input
    n = x.shape[d] if x.ndim else 1
    if n == 0:
        out = x
        inverse = em.zeros(input.shape if dim is None else (0,), dtype=_dtype.int64,
                           device=input.device)
        counts = em.zeros(0, dtype=_dtype.int64, device=input.device)
    else:
        cur, prev = x.narrow(d, 1, n - 1), x.narrow(d, 0, n - 1)
        change = cur.ne(prev)
        if x.ndim > 1:
            change = change.movedim(d, 0).flatten(1).any(1)
        first = em.ones(1, dtype=_dtype.bool_, device=input.device)
        starts_mask = em.cat([first, change], 0)
        starts = starts_mask.nonzero().reshape(-1)
        out = x.index_select(d, starts)
        inverse = starts_mask.to(_dtype.int64).cumsum(0) - 1
        if dim is None:
            inverse = inverse.reshape(input.shape)
        ends = em.cat([starts[1:], em.tensor([n], dtype=_dtype.int64, device=input.device)])
        counts = ends - starts
    result = (out,)
    if return_inverse:
        result += (inverse,)
    if return_counts:
        result += (counts,)
    return result[0] if len(result) == 1 else result


# -- ember.func: the dim shifts past the batch; sorted values carry their elements' tangents ----
def _sort_jvp(ctx, tangents, self, dim, descending, stable):
    t = tangents[0]
    if t is None:
        return None
    if not self._shape:
        return t, None
    return gather_op(t, dim, ctx.result[1]), None


sort_op.def_batch_rule(_batching.along_dim(sort_op))
mode_op.def_batch_rule(_batching.along_dim(mode_op))
sort_op.def_jvp(_sort_jvp)
