"""``ember.sparse``: sparse COO tensors (``layout=ember.sparse_coo``) and their products.

A COO tensor is an ordinary ``ember.Tensor`` whose ``layout`` is ``sparse_coo`` (``_coo.py``);
ops reach their COO forms through the ``SPARSE`` dispatch key (``dispatch.py``). This module
is the user's face: ``ember.sparse_coo_tensor``, ``Tensor.to_sparse``/``to_dense``/
``coalesce``/``indices``/``values``…, ``ember.sparse.mm``/``addmm``/``sum`` and
``sparse @ dense``. Gradients reach the dense operand and the values (a tensor made with
``requires_grad=True`` gets a sparse ``.grad`` with its indices, as torch's)."""
from __future__ import annotations

from .._layout import sparse_coo, strided
from .._tensor import Tensor
from . import dispatch as _dispatch  # noqa: F401 - registers the SPARSE key's handler
from ._coo import (coalesce, is_sparse, make, parts, sparse_coo_tensor, sparse_mask, spmm,
                   to_dense, to_sparse)

from ._construct import spdiags
from ._invariants import check_sparse_tensor_invariants
from ._softmax import log_softmax, softmax

__all__ = ["mm", "addmm", "sum", "sparse_coo_tensor", "is_sparse", "softmax", "log_softmax",
           "spdiags", "check_sparse_tensor_invariants"]


def mm(mat1, mat2, reduce="sum"):
    """``torch.sparse.mm``: sparse @ dense (or sparse @ sparse, densified) with gradients to
    the dense operand and the sparse operand's values."""
    if reduce != "sum":
        raise NotImplementedError(f"sparse.mm: reduce={reduce!r} is not supported (only 'sum')")
    if not is_sparse(mat1):
        raise RuntimeError("sparse.mm: expected mat1 to be a sparse COO tensor")
    return spmm(mat1, mat2)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``torch.sparse.addmm``: ``beta * mat + alpha * (mat1 @ mat2)`` with a sparse ``mat1``."""
    return mat * beta + spmm(mat1, mat2) * alpha


def sum(input, dim=None, dtype=None):  # noqa: A001 - torch.sparse.sum's name
    """``torch.sparse.sum``: all stored values summed (a dense scalar), or over ``dim``."""
    if not is_sparse(input):
        raise RuntimeError("sparse.sum: expected a sparse COO tensor")
    if dim is None:
        out = parts(input).values.sum()
        return out if dtype is None else out.to(dtype)
    dims = [dim] if isinstance(dim, int) else list(dim)
    return to_dense(input).sum(dims, dtype=dtype)


# -- Tensor's sparse surface --------------------------------------------------------------------
def _need_sparse(t, name):
    if not is_sparse(t):
        raise RuntimeError(f"{name}: expected a sparse COO tensor (layout=ember.sparse_coo), "
                           f"got a strided one")
    return parts(t)


def _indices(self):
    return _need_sparse(self, "_indices").indices


def _values(self):
    return _need_sparse(self, "_values").values


def _coalesced(self, what):
    p = _need_sparse(self, what)
    if not p.coalesced:
        raise RuntimeError(f"Cannot get {what} on an uncoalesced tensor, please call "
                           f".coalesce() first")
    return p


def indices(self):
    return _coalesced(self, "indices").indices


def values(self):
    return _coalesced(self, "values").values


def _coalesce(self):
    _need_sparse(self, "coalesce")
    return coalesce(self)


def is_coalesced(self):
    return _need_sparse(self, "is_coalesced").coalesced


def sparse_dim(self):
    return parts(self).indices.shape[0] if is_sparse(self) else 0


def dense_dim(self):
    return parts(self).values.ndim - 1 if is_sparse(self) else self.ndim


def _nnz(self):
    return parts(self).indices.shape[1] if is_sparse(self) else _need_sparse(self, "_nnz")


def indices_copy(input, *, out=None):
    return input._indices().clone()


def values_copy(input, *, out=None):
    return input._values().clone()


def _install():
    T = Tensor
    T.layout = property(lambda self: sparse_coo if is_sparse(self) else strided)
    T.is_sparse = property(is_sparse)
    for f in (_indices, _values, indices, values, is_coalesced, sparse_dim, dense_dim, _nnz,
              sparse_mask):
        setattr(T, f.__name__, f)
    T.coalesce = _coalesce
    T.to_dense = to_dense
    T.to_sparse = to_sparse
    T.to_sparse_coo = lambda self: to_sparse(self)

    dense_to = T.to

    def to(self, *args, **kwargs):
        if not is_sparse(self):
            return dense_to(self, *args, **kwargs)
        p = parts(self)
        values = dense_to(p.values, *args, **kwargs)
        idx = p.indices if values.device == p.indices.device else p.indices.to(values.device)
        return self if values is p.values else make(idx, values, self._shape, p.coalesced)
    to.__doc__ = dense_to.__doc__
    T.to = to

    dense_repr = T.__repr__

    def __repr__(self, *, tensor_contents=None):
        if not is_sparse(self):
            return dense_repr(self, tensor_contents=tensor_contents)
        p = parts(self)
        pad = " " * 7
        ind = repr(p.indices).replace("\n", "\n" + pad + " " * 8)
        val = repr(p.values).replace("\n", "\n" + pad + " " * 7)
        extra = f", device='{self.device}'" if self.device.type != "cpu" else ""
        dtype = "" if self.dtype.is_floating_point and self.dtype.itemsize == 4 else \
            f", dtype={self.dtype}"
        grad = ", requires_grad=True" if p.values.requires_grad else ""
        return (f"tensor(indices={ind},\n{pad}values={val},\n{pad}size={tuple(self.shape)}, "
                f"nnz={p.indices.shape[1]}{dtype}{extra}, layout=ember.sparse_coo{grad})")
    T.__repr__ = __repr__
    T.__str__ = __repr__

    grad_prop, rg_prop = T.grad, T.requires_grad

    def get_grad(self):
        if is_sparse(self):
            return _sparse_grad(self)
        return grad_prop.fget(self)

    def set_grad(self, value):
        if is_sparse(self):
            parts(self).values.grad = None if value is None else to_sparse_like(value, self)
            return
        grad_prop.fset(self, value)
    T.grad = property(get_grad, set_grad)

    def get_rg(self):
        if is_sparse(self):
            return parts(self).values.requires_grad
        return rg_prop.fget(self)

    def set_rg(self, value):
        if is_sparse(self):
            parts(self).values.requires_grad = value
            return
        rg_prop.fset(self, value)
    T.requires_grad = property(get_rg, set_rg)

    dense_requires_grad_ = T.requires_grad_

    def requires_grad_(self, requires_grad=True):
        if is_sparse(self):
            parts(self).values.requires_grad_(requires_grad)
            return self
        return dense_requires_grad_(self, requires_grad)
    T.requires_grad_ = requires_grad_

    dense_detach = T.detach

    def detach(self):
        if is_sparse(self):
            p = parts(self)
            return make(p.indices, p.values.detach(), self._shape, p.coalesced)
        return dense_detach(self)
    T.detach = detach

    dense_numpy = T.numpy

    def numpy(self, *, force=False):
        if is_sparse(self):
            raise TypeError("can't convert a sparse COO tensor to numpy; call .to_dense() "
                            "first")
        return dense_numpy(self, force=force)
    T.numpy = numpy


def _sparse_grad(t):
    """torch's gradient of a sparse leaf: coalesced, at its pattern. Every duplicate entry of
    an uncoalesced leaf received the gradient of its position, so they are averaged, not
    summed."""
    p = parts(t)
    g = p.values.grad
    if g is None:
        return None
    if p.coalesced:
        return make(p.indices, g, t._shape, True)
    summed = coalesce(make(p.indices, g, t._shape, False))
    counts = coalesce(make(p.indices, g.new_ones(g.shape[:1]), t._shape, False))
    values = parts(summed).values / parts(counts).values.reshape(
        (-1,) + (1,) * (g.ndim - 1))
    return make(parts(summed).indices, values, t._shape, True)


def to_sparse_like(value, like):
    """A gradient assigned to a sparse tensor's ``.grad``: its values at ``like``'s indices."""
    if is_sparse(value):
        return parts(coalesce(value)).values if parts(like).coalesced else parts(value).values
    return sparse_mask(value, like)._values()


_install()
