"""The ``SPARSE`` dispatch key's handler: which ops have a COO form, one row per op.

A call whose arguments include a sparse COO tensor reaches this handler before autograd. An op
listed in ``COO_FORMS`` runs its form (written with dense ops on the tensor's indices and
values, so autograd records those); any other op raises ``NotImplementedError`` naming the op
and the layout — PyTorch's "Could not run 'aten::x' with arguments from the 'SparseCPU'
backend" — rather than reading the memory of a tensor that has no strided storage."""
from __future__ import annotations

from ..dispatch import dispatcher as _dispatcher
from . import _coo
from ._coo import SPARSE, coalesce, is_sparse, make, parts, spmm
from ..ops.factories import tensor
from ..ops.shape import cat


def _scalar_values(op_name, fn):
    """Ops that act on each stored value alone, with a scalar: same indices, new values."""
    def form(a, b, *rest):
        if is_sparse(a) and not isinstance(b, _coo.Tensor):
            p = parts(a)
            return make(p.indices, fn(p.values, b, *rest), a._shape, p.coalesced)
        if is_sparse(b) and not isinstance(a, _coo.Tensor) and op_name == "mul":
            p = parts(b)
            return make(p.indices, fn(p.values, a, *rest), b._shape, p.coalesced)
        raise NotImplementedError(
            f"Could not run '{op_name}' with a sparse COO tensor and a tensor operand in ember; "
            f"convert with .to_dense() (sparse_coo supports {op_name} by a scalar)")
    return form


def _add(a, b, alpha=1, *rest):
    if is_sparse(a) and is_sparse(b):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"add: expected sizes of the sparse operands to match, got "
                               f"{list(a.shape)} and {list(b.shape)}")
        pa, pb = parts(a), parts(b)
        values = cat([pa.values, pb.values * alpha if alpha != 1 else pb.values], 0)
        return coalesce(make(cat([pa.indices, pb.indices], 1), values, a._shape, False))
    if is_sparse(b) and not is_sparse(a):          # dense + sparse is dense
        return a + _coo.to_dense(b) * alpha
    if is_sparse(a) and not is_sparse(b):
        return _coo.to_dense(a) + b * alpha
    raise AssertionError


def _matmul(a, b, *rest):
    if is_sparse(a):
        return spmm(a, b)
    if b.ndim != 2:      # dense @ sparse: (sparse^T @ dense^T)^T
        raise RuntimeError("matmul: a dense @ sparse product needs a 2-D sparse matrix")
    return spmm(_coo.transpose(b), a.t()).t()


def _addmm(bias, m1, m2, beta=1, alpha=1, *rest):
    prod = _matmul(m1, m2)
    if is_sparse(bias):
        bias = _coo.to_dense(bias)
    return bias * beta + prod * alpha if beta != 0 else prod * alpha


def _permute(t, dims, *rest):
    p = parts(t)
    sdim = p.indices.shape[0]
    dims = [d % t.ndim for d in dims]
    if sorted(dims[:sdim]) != list(range(sdim)) or dims[sdim:] != list(range(sdim, t.ndim)):
        raise NotImplementedError("permute of a sparse COO tensor may reorder its sparse "
                                  "dimensions only")
    order = tensor(dims[:sdim], device=p.indices.device)
    return make(p.indices.index_select(0, order), p.values,
                tuple(t._shape[d] for d in dims), sdim <= 1)


def _transpose(t, dim0, dim1, *rest):
    dims = list(range(t.ndim))
    dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
    return _permute(t, dims)


def _clone(t, *rest):
    p = parts(t)
    return make(p.indices.clone(), p.values.clone(), t._shape, p.coalesced)


def _to_copy(t, dtype, *rest):
    p = parts(t)
    return make(p.indices, p.values.to(dtype), t._shape, p.coalesced)


def _neg(t, *rest):
    p = parts(t)
    return make(p.indices, -p.values, t._shape, p.coalesced)


def _sum(t, dim, keepdim=False, dtype=None, *rest):
    if not dim:
        out = parts(t).values.sum()
        return out if dtype is None else out.to(dtype)
    return _coo.to_dense(t).sum(dim, keepdim=keepdim, dtype=dtype)


#: op name -> its COO form
COO_FORMS = {
    "mul": _scalar_values("mul", lambda v, s, *r: v * s),
    "div": _scalar_values("div", lambda v, s, mode=None, *r: v.div(s, rounding_mode=mode)),
    "add": _add,
    "sub": lambda a, b, alpha=1, *r: _add(a, b, -alpha),
    "neg": _neg,
    "matmul": _matmul, "mm": _matmul, "addmm": _addmm,
    "clone": _clone, "_to_copy": _to_copy, "permute": _permute,
    "transpose": _transpose, "t": lambda t, *r: _permute(t, list(range(t.ndim))[::-1]),
    "sum": _sum,
}


def _make_handler(op, bit):
    form = COO_FORMS.get(op.name)

    def handler(*args, **kwargs):
        if form is None:
            dev = next((a.device for a in _dispatcher.tensors_in(args) if is_sparse(a)), None)
            raise NotImplementedError(
                f"Could not run '{op.name}' with arguments from the 'Sparse"
                f"{dev.type.upper() if dev else ''}' backend: ember has no sparse COO form of "
                f"{op.name} (layout=ember.sparse_coo); convert with .to_dense() first")
        return form(*args, **kwargs)
    return handler


_dispatcher.register_functionality(SPARSE, _make_handler)
