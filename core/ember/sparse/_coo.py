"""Sparse COO tensors: an ``ember.Tensor`` whose layout is ``sparse_coo``.

Such a tensor holds two dense tensors on its device — ``indices`` (int64, sparse_dim x nnz) and
``values`` (nnz x dense dims) — plus whether it is coalesced (indices sorted, no duplicates).
Its dispatch key set carries ``SPARSE``, so an op called with it goes to ``dispatch.py``: the
ops with a COO form run it, every other op raises naming itself and the layout instead of
reading memory that isn't there. Every COO algorithm here is written with ember's dense ops on
``indices``/``values`` (sort-based coalesce, gather / scale / index_add for sparse @ dense), so
each backend that runs the dense ops runs sparse tensors, and autograd reaches ``values`` and
the dense operands through those ops."""
from __future__ import annotations

import math

from .. import _dtype
from .._layout import sparse_coo, strided
from .._tensor import Tensor
from ..dispatch import keys as K
from ..runtime.layout import contiguous_strides
from ..dispatch.grad_mode import no_grad
from ..runtime.registry import registry
from ..ops.factories import tensor as to_tensor, zeros
from ..ops.shape import stack
from ..ops.sorting import unique
from ._invariants import check_sparse_tensor_invariants

SPARSE = K.SPARSE


class _Parts:
    __slots__ = ("indices", "values", "coalesced")

    def __init__(self, indices, values, coalesced):
        self.indices, self.values, self.coalesced = indices, values, coalesced


def parts(t) -> _Parts:
    return t.__dict__["_sparse"]


def is_sparse(t) -> bool:
    # the key bit, not the instance dict: reading __dict__ would create one on every tensor
    return isinstance(t, Tensor) and bool(t._ks & SPARSE)


def make(indices, values, shape, coalesced):
    """The sparse tensor of ``indices``/``values`` with the full ``shape`` (no checks)."""
    if (indices._ks | values._ks) & K.BATCHED and (
            indices.__class__ is not Tensor or values.__class__ is not Tensor):
        # as in torch, vmap has no batching rule for sparse tensors: refuse rather than mix a
        # batched values tensor into ops that see the sparse tensor as unbatched
        raise RuntimeError("vmap: sparse COO tensors can't be built from batched indices or "
                           "values (ember.func has no batching rules for sparse tensors)")
    shape = tuple(int(s) for s in shape)
    # strides of the dense shape only keep shape utilities working: no kernel reads them (the
    # SPARSE key sends every op to a COO form or an error)
    t = Tensor._make(values._storage, shape, contiguous_strides(shape), 0, values.dtype,
                     values.device)
    t._ks |= SPARSE
    t.__dict__["_sparse"] = _Parts(indices, values, bool(coalesced))
    return t


def sparse_coo_tensor(indices=None, values=None, size=None, *, dtype=None, device=None,
                      pin_memory=False, requires_grad=False, check_invariants=None,
                      is_coalesced=None):
    """``torch.sparse_coo_tensor``: a COO tensor from ``indices`` (sparse_dim x nnz) and
    ``values`` (nnz x dense dims); ``size`` defaults to the smallest that holds the indices.
    ``sparse_coo_tensor(size)`` alone is an empty sparse tensor of that size."""
    if values is None:
        if size is None and indices is not None and not isinstance(indices, Tensor):
            indices, size = None, indices   # torch's sparse_coo_tensor(size) overload
        if indices is not None or size is None:
            raise TypeError("sparse_coo_tensor() missing 1 required positional arguments: "
                            "\"values\"")
        size = tuple(int(s) for s in size)
        return sparse_coo_tensor(zeros((len(size), 0), dtype=_dtype.int64, device=device),
                                 zeros((0,), dtype=dtype, device=device), size,
                                 requires_grad=requires_grad)
    if not isinstance(indices, Tensor):
        indices = to_tensor(indices, dtype=_dtype.int64, device=device)
    if not isinstance(values, Tensor):
        values = to_tensor(values, dtype=dtype, device=device)
    if device is not None:
        indices, values = indices.to(device), values.to(device)
    if dtype is not None and values.dtype is not dtype:
        values = values.to(dtype)
    if indices.dtype.category == _dtype.COMPLEX:
        raise RuntimeError(f"sparse_coo_tensor: indices must be an int64 tensor, got "
                           f"{indices.dtype}")
    indices = indices.to(_dtype.int64)  # PyTorch casts float and bool indices (toward zero)
    if indices.ndim != 2:
        raise RuntimeError(f"sparse_coo_tensor: indices must be sparse_dim x nnz, but got: "
                           f"{list(indices.shape)}")
    if values.ndim < 1:
        values = values.reshape(1) if indices.shape[1] == 1 else values
    if indices.device != values.device:
        raise RuntimeError(f"sparse_coo_tensor: indices are on {indices.device} but values on "
                           f"{values.device}; expected both on one device")
    sparse_dim, nnz = indices.shape
    if values.shape[0] != nnz:
        raise RuntimeError(f"sparse_coo_tensor: indices and values must have same nnz, but got "
                           f"nnz from indices: {nnz}, nnz from values: {values.shape[0]}")
    dense_shape = tuple(values.shape[1:])
    if size is None:
        if nnz == 0:
            raise RuntimeError("sparse_coo_tensor: size must be given when there are no "
                               "indices")
        size = tuple(int(m) + 1 for m in indices.amax(1).tolist()) + dense_shape
    size = tuple(int(s) for s in size)
    if len(size) != sparse_dim + len(dense_shape) or tuple(size[sparse_dim:]) != dense_shape:
        raise RuntimeError(f"sparse_coo_tensor: number of dimensions must be sparse_dim "
                           f"({sparse_dim}) + dense_dim ({len(dense_shape)}), but got size "
                           f"{list(size)} for values of shape {list(values.shape)}")
    if check_invariants or (check_invariants is None and size is not None and nnz):
        _check_bounds(indices, size[:sparse_dim])
    if is_coalesced and nnz > 1 and (check_invariants or (
            check_invariants is None and check_sparse_tensor_invariants.is_enabled())):
        _check_coalesced(indices, size[:sparse_dim])
    if requires_grad:
        values = values.detach().requires_grad_(True)
    return make(indices, values, size, bool(is_coalesced) if is_coalesced is not None
                else nnz <= 1)


def _check_bounds(indices, sparse_shape):
    if indices.shape[1] == 0 or not registry.get(indices.device.type).has_data:
        return                    # (meta tensors have no values to check)
    lo = indices.amin(1).tolist()
    hi = indices.amax(1).tolist()
    for d, (a, b, n) in enumerate(zip(lo, hi, sparse_shape)):
        if a < 0:
            raise RuntimeError(f"sparse_coo_tensor: found negative index {a} for dim {d}")
        if b >= n:
            raise RuntimeError(f"sparse_coo_tensor: size is inconsistent with indices: for dim "
                               f"{d}, size is {n} but found index {b}")


def _check_coalesced(indices, sparse_shape):
    """torch's invariant for ``is_coalesced=True``: index columns strictly increasing."""
    if not registry.get(indices.device.type).has_data:
        return
    lin = _linear(indices, sparse_shape)
    if not bool((lin[1:] > lin[:-1]).all()):
        raise RuntimeError("cannot set is_coalesced to true if indices correspond to "
                           "uncoalesced COO tensor")


# -- structure ----------------------------------------------------------------------------------
def _linear(indices, sparse_shape):
    """Row-major linear positions of the index columns (int64)."""
    lin = None
    for d, n in enumerate(sparse_shape):
        lin = indices[d] if lin is None else lin * n + indices[d]
    return lin


def _unravel(lin, sparse_shape):
    rows = []
    rest = lin
    for n in reversed(sparse_shape[1:]):
        rows.append(rest.remainder(n))
        rest = rest.floor_divide(n)
    rows.append(rest)
    return stack(list(reversed(rows)), 0)


def coalesce(t):
    """Sorted indices without duplicates; duplicate entries' values summed."""
    p = parts(t)
    if p.coalesced:
        return t
    sdim = p.indices.shape[0]
    shape = t._shape
    nnz = p.indices.shape[1]
    if nnz == 0:
        return make(p.indices, p.values, shape, True)
    lin = _linear(p.indices, shape[:sdim])
    uniq, inverse, _ = unique(lin, sorted=True, return_inverse=True, return_counts=True)
    values = zeros((uniq.shape[0],) + tuple(p.values.shape[1:]), dtype=p.values.dtype,
                   device=p.values.device).index_add(0, inverse, p.values)
    return make(_unravel(uniq, shape[:sdim]), values, shape, True)


def to_dense(t, dtype=None, *, masked_grad=None):
    if not is_sparse(t):
        return t if dtype is None else t.to(dtype)
    p = parts(t)
    sdim = p.indices.shape[0]
    shape = t._shape
    flat = zeros((math.prod(shape[:sdim]),) + tuple(shape[sdim:]), dtype=p.values.dtype,
                 device=p.values.device)
    if p.indices.shape[1]:
        flat = flat.index_add(0, _linear(p.indices, shape[:sdim]), p.values)
    out = flat.reshape(shape)
    return out if dtype is None else out.to(dtype)


def to_sparse(t, sparse_dim=None, *, layout=None, blocksize=None, dense_dim=None):
    """``Tensor.to_sparse``: the nonzero entries (or nonzero dense slices) of a strided
    tensor as a coalesced COO tensor."""
    if layout is not None and layout is not sparse_coo:
        raise RuntimeError(f"to_sparse: layout {layout} is not supported (ember has strided and "
                           f"sparse_coo)")
    if is_sparse(t):
        if sparse_dim is not None and sparse_dim != parts(t).indices.shape[0]:
            raise RuntimeError("to_sparse: conversion of a sparse tensor to a different "
                               "sparse_dim is not supported")
        return t
    if dense_dim is not None:
        sparse_dim = t.ndim - dense_dim
    sparse_dim = t.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 <= sparse_dim <= t.ndim:
        raise RuntimeError(f"to_sparse: sparse_dim {sparse_dim} must be in [0, {t.ndim}] for a "
                           f"tensor of shape {list(t.shape)}")
    with no_grad():
        nz = t != 0
        if sparse_dim < t.ndim:
            nz = nz.reshape(t._shape[:sparse_dim] + (-1,)).any(-1)
        indices = nz.nonzero().t().contiguous() if sparse_dim else \
            _empty_index(t, nz)
    if sparse_dim == 0:
        values = t.unsqueeze(0)
    else:
        values = t[tuple(indices[d] for d in range(sparse_dim))]
    return make(indices, values, t._shape, True)


def _empty_index(t, nz):
    return zeros((0, 1), dtype=_dtype.int64, device=t.device)


def sparse_mask(t, mask):
    """``Tensor.sparse_mask``: this dense tensor's values at ``mask``'s (sparse) indices."""
    if not is_sparse(mask):
        raise RuntimeError("sparse_mask: expected mask to be a sparse COO tensor, got a "
                           "strided one")
    if tuple(t.shape) != tuple(mask.shape):
        raise RuntimeError(f"sparse_mask: operands have incompatible sizes; self has size "
                           f"{list(t.shape)} but mask has size {list(mask.shape)}")
    m = coalesce(mask)
    p = parts(m)
    values = t[tuple(p.indices[d] for d in range(p.indices.shape[0]))]
    return make(p.indices, values, t._shape, True)


# -- matrix products ----------------------------------------------------------------------------
def spmm(s, dense):
    """``s @ dense`` for a 2-D COO ``s`` (no dense dims): gather the rows of ``dense`` named by
    the column indices, scale them by the values, add them into the output rows."""
    p = parts(s)
    if p.indices.shape[0] != 2 or p.values.ndim != 1:
        raise RuntimeError(f"sparse.mm: expected a 2-D sparse matrix without dense dimensions, "
                           f"got size {list(s.shape)} with sparse_dim {p.indices.shape[0]}")
    if is_sparse(dense):
        dense = to_dense(dense)
    vector = dense.ndim == 1
    if vector:
        dense = dense.unsqueeze(1)
    if dense.ndim != 2 or dense.shape[0] != s.shape[1]:
        raise RuntimeError(f"sparse.mm: mat1 and mat2 shapes cannot be multiplied "
                           f"({s.shape[0]}x{s.shape[1]} and "
                           f"{'x'.join(str(d) for d in dense.shape)})")
    if dense.device != s.device:
        raise RuntimeError(f"sparse.mm: expected both operands on one device, got {s.device} "
                           f"and {dense.device}")
    dtype = _dtype.promote_types(p.values.dtype, dense.dtype)
    out = zeros((s.shape[0], dense.shape[1]), dtype=dtype, device=dense.device)
    if p.indices.shape[1]:
        rows, cols = p.indices[0], p.indices[1]
        contrib = dense.index_select(0, cols).to(dtype) * p.values.to(dtype).unsqueeze(1)
        out = out.index_add(0, rows, contrib)
    return out.squeeze(1) if vector else out


def transpose(s, dim0=0, dim1=1):
    p = parts(s)
    sdim = p.indices.shape[0]
    if not (dim0 < sdim and dim1 < sdim):
        raise RuntimeError("transpose of a sparse tensor is supported between sparse "
                           "dimensions only")
    order = list(range(sdim))
    order[dim0], order[dim1] = order[dim1], order[dim0]
    indices = p.indices.index_select(0, to_tensor(order, device=p.indices.device))
    shape = list(s._shape)
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    return make(indices, p.values, shape, False)


def layout_of(t):
    return sparse_coo if is_sparse(t) else strided
