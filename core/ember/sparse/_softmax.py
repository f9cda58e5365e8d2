"""``ember.sparse.softmax`` / ``log_softmax`` of COO tensors: each slice along ``dim`` is
normalised over its specified entries only (unspecified ones count as -inf, so they stay
unspecified); the result has the input's indices. Written with dense ops on the values, so
autograd reaches them and every backend runs it."""
from __future__ import annotations

import math

from .._dtype import as_dtype
from ..ops.factories import full, zeros
from ..ops.sorting import unique
from ._coo import coalesce, is_sparse, make, parts

__all__ = ["softmax", "log_softmax"]


def _slices(indices, dim):
    """The slice along sparse ``dim`` each stored entry belongs to (entries equal in every
    other sparse index share one), and the number of slices."""
    others = [r for r in range(indices.shape[0]) if r != dim]
    nnz = indices.shape[1]
    if not others or nnz == 0:
        return zeros(nnz, dtype=indices.dtype, device=indices.device), 1 if nnz else 0
    keys, group = unique(indices[others], dim=1, return_inverse=True)
    return group, keys.shape[1]


def _normalise(name, input, dim, dtype, log):
    if not is_sparse(input):
        raise RuntimeError(f"sparse.{name}: expected a sparse COO tensor (layout="
                           f"ember.sparse_coo), got a strided one; use ember.{name} for those")
    ndim = input.dim()
    if not -ndim <= dim < ndim:
        raise IndexError(f"sparse.{name}: Dimension out of range (expected to be in range of "
                         f"[{-ndim}, {ndim - 1}], but got {dim})")
    dim %= ndim
    x = coalesce(input)
    indices, values = parts(x).indices, parts(x).values
    if dtype is not None:
        values = values.to(as_dtype(dtype))
    sparse_dims = indices.shape[0]
    if dim >= sparse_dims:  # a dense dim: every stored entry holds whole slices
        d = dim - sparse_dims + 1
        out = values.log_softmax(d) if log else values.softmax(d)
        return make(indices, out, input.shape, True)
    group, count = _slices(indices, dim)
    index = group.reshape(-1, *[1] * (values.dim() - 1)).expand(values.shape)
    slice_shape = (count, *values.shape[1:])
    peak = full(slice_shape, -math.inf, dtype=values.dtype, device=values.device)
    peak = peak.scatter_reduce(0, index, values.detach(), "amax")  # for exp's range only
    shifted = values - peak.gather(0, index)
    exp = shifted.exp()
    total = zeros(slice_shape, dtype=values.dtype, device=values.device).index_add(0, group, exp)
    out = shifted - total.log().gather(0, index) if log else exp / total.gather(0, index)
    return make(indices, out, input.shape, True)


def softmax(input, dim, *, dtype=None):
    """``torch.sparse.softmax``: softmax of each slice along ``dim`` over its specified
    entries (unspecified entries are -inf: excluded, and left unspecified)."""
    return _normalise("softmax", input, dim, dtype, log=False)


def log_softmax(input, dim, *, dtype=None):
    """``torch.sparse.log_softmax``: log of ``sparse.softmax``, computed stably."""
    return _normalise("log_softmax", input, dim, dtype, log=True)
