"""Sorting: sort, argsort, topk (indices are int64; NaN sorts above every number)."""
from __future__ import annotations

from .._tensor import Tensor, _wrap_dim
from ..dispatch.dispatcher import define
from ._util import tensor_method
from .reduction import _return_type, return_types

__all__ = ["sort", "argsort", "topk", "msort"]

return_types.sort = _return_type("sort", ["values", "indices"])
return_types.topk = _return_type("topk", ["values", "indices"])

sort_op = define("sort(Tensor self, int dim, bool descending, bool stable) -> "
                 "(Tensor values, Tensor indices)")


def _check(input, op):
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    if input.is_complex():
        raise RuntimeError(f"{op}(): complex tensors can't be sorted")


@tensor_method()
def sort(input, dim=-1, descending=False, stable=False):
    _check(input, "sort")
    d = _wrap_dim(dim, input.ndim, "sort") if input.ndim else 0
    return return_types.sort(*sort_op(input, d, bool(descending), bool(stable)))


@tensor_method()
def argsort(input, dim=-1, descending=False, stable=False):
    return sort(input, dim, descending, stable).indices


def msort(input):
    return sort(input, 0).values


Tensor.msort = msort


@tensor_method()
def topk(input, k, dim=-1, largest=True, sorted=True):
    _check(input, "topk")
    d = _wrap_dim(dim, input.ndim, "topk") if input.ndim else 0
    size = input._shape[d] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"selected index k out of range (k={k}, size {size} at dim {d})")
    values, indices = sort_op(input, d, bool(largest), True)
    if input.ndim:
        values, indices = values.narrow(d, 0, k), indices.narrow(d, 0, k)
    return return_types.topk(values.contiguous(), indices.contiguous())
