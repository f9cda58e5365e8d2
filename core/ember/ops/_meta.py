"""Meta functions: an op's output shape and dtype from its arguments alone, no data read.

A meta function takes exactly the op's arguments (the kernel calling convention; tensors may
live on any device, meta tensors included) and returns ``(shape, dtype)`` for one output, a
tuple of such pairs for several outputs (``max_dim``, ``sort``), or, for an op that mutates an
argument, that argument after checking the other arguments fit it. The op modules attach them
with ``define(..., meta=...)``; the meta device (plugins/ember-meta) turns each into a kernel
that allocates a data-less tensor. They are written per family so one rule covers many ops.

The Python API has validated user input before the op is called, but ops are also called
directly (composites, autograd formulas, other packages), so shape mismatches are checked here
too, with errors naming the op and the shapes involved.
"""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor
from ._util import _broadcast_pair

_bool, _int64 = _dtype.bool_, _dtype.int64


# -- shared rules -------------------------------------------------------------------------------
def shape_of(x) -> tuple:
    return tuple(x._shape) if isinstance(x, Tensor) else ()


def broadcast(op: str, *xs) -> tuple:
    """The broadcast shape of the tensor/scalar operands ``xs``; RuntimeError naming ``op``."""
    return broadcast_shapes(op, *[shape_of(x) for x in xs if isinstance(x, Tensor)])


def broadcast_shapes(op: str, *shapes) -> tuple:
    out = ()
    for s in shapes:
        if s == out:
            continue
        try:
            out = _broadcast_pair(out, tuple(s))
        except RuntimeError as e:
            raise RuntimeError(f"{op}: {e} (operand shapes "
                               f"{', '.join(str(list(x)) for x in shapes)})") from None
    return out


def real_of(d):
    return d.to_real() if d.category == _dtype.COMPLEX else d


def reduced(shape, dims, keepdim) -> tuple:
    """``shape`` reduced over the (wrapped) ``dims``; kept as size 1 when ``keepdim``."""
    dims = set(dims)
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _check_dim(op, dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-n}, {n - 1}], but got {dim})")
    return dim % n


def tensor_arg(op, x, what="self"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: argument '{what}' must be a Tensor, got {type(x).__name__}")
    return x


def same_shape(op, self, shape, what):
    if tuple(shape) != tuple(self._shape):
        raise RuntimeError(f"{op}: output with shape {list(self._shape)} doesn't match the "
                           f"broadcast shape {list(shape)} of {what}")
    return self


# -- elementwise --------------------------------------------------------------------------------
def inplace(name: str):
    """In-place ops whose other arguments are not shaped (``exp_``, ``fill_``, ``uniform_``)."""
    def meta(self, *args):
        return tensor_arg(name, self)
    return meta


def same(name: str):
    """Ops whose output is shaped and typed like ``self`` (round, leaky_relu, flip, tril…)."""
    return lambda self, *args: (shape_of(tensor_arg(name, self)), self.dtype)


def with_compute(name: str):
    """``name(Tensor self, ..., dtype compute)``: self's shape, the compute dtype (gelu…)."""
    return lambda self, *args: (shape_of(tensor_arg(name, self)), args[-1])


# -- sizes --------------------------------------------------------------------------------------
def _size(op, size) -> tuple:
    """A size argument (factories, random, tile) as a tuple of ints; negative sizes raise."""
    out = tuple(int(s) for s in size)
    if any(s < 0 for s in out):
        raise RuntimeError(f"{op}: trying to create tensor with negative dimension: {list(out)}")
    return out


# -- reductions ---------------------------------------------------------------------------------
def _dims_ok(op, x, dims):
    for d in dims:
        if not 0 <= d < max(x.ndim, 1):
            raise IndexError(f"{op}: dim {d} out of range for a tensor of shape "
                             f"{list(x._shape)}")
    return dims


def reduction(op: str, result: str = "dtype"):
    """``op(Tensor self, int[] dim, [...,] bool keepdim, [dtype dtype])`` with the reduced dims
    already wrapped. ``result``: "dtype" = the dtype argument (sum, all…), "same" = self's
    dtype (amax), "real" = self's real dtype (var, vector_norm)."""
    def meta(x, dim, *rest):
        tensor_arg(op, x)
        keepdim = next(r for r in rest if r.__class__ is bool)
        shape = reduced(x._shape, _dims_ok(op, x, tuple(dim)), keepdim)
        d = rest[-1] if result == "dtype" else x.dtype if result == "same" else real_of(x.dtype)
        return shape, d
    return meta


def extreme_dim(op: str):
    """``max_dim``/``min_dim(Tensor self, int dim, bool keepdim) -> (values, indices)``."""
    def meta(x, dim, keepdim):
        dims = (_check_dim(op, dim, x.ndim),) if x.ndim else ()
        shape = reduced(x._shape, dims, keepdim)
        return (shape, x.dtype), (shape, _int64)
    return meta


def arg_extreme(op: str):
    """``argmax(Tensor self, int? dim, bool keepdim)``: None = the flat index."""
    def meta(x, dim, keepdim):
        if dim is None:
            return ((1,) * x.ndim if keepdim else ()), _int64
        dims = (_check_dim(op, dim, x.ndim),) if x.ndim else ()
        return reduced(x._shape, dims, keepdim), _int64
    return meta


def vector_norm(x, ord, dim, keepdim):
    tensor_arg("vector_norm", x)
    return reduced(x._shape, _dims_ok("vector_norm", x, tuple(dim)), keepdim), real_of(x.dtype)


def along_dim(op: str):
    """Scans and softmax: ``op(Tensor self, int dim, dtype dtype)``, self's shape."""
    def meta(x, dim, dtype):
        _check_dim(op, dim, x.ndim)
        return shape_of(x), dtype
    return meta


# -- linear algebra -----------------------------------------------------------------------------
def matmul(a, b):
    sa, sb = shape_of(a), shape_of(b)
    if not sa or not sb:
        raise RuntimeError(f"matmul: both arguments need to be at least 1D, got shapes "
                           f"{list(sa)} and {list(sb)}")
    xa = sa if len(sa) > 1 else (1,) + sa
    xb = sb if len(sb) > 1 else sb + (1,)
    if xa[-1] != xb[-2]:
        raise RuntimeError(f"matmul: shapes {list(sa)} and {list(sb)} cannot be multiplied "
                           f"({xa[-2]}x{xa[-1]} and {xb[-2]}x{xb[-1]})")
    batch = broadcast_shapes("matmul", xa[:-2], xb[:-2])
    out = batch + (xa[-2],) * (len(sa) > 1) + (xb[-1],) * (len(sb) > 1)
    return out, a.dtype


def svdvals(A):
    s = shape_of(A)
    if len(s) < 2:
        raise RuntimeError(f"linalg.svdvals: The input tensor A must have at least 2 dimensions, "
                           f"got shape {list(s)}")
    return s[:-2] + (min(s[-2:]),), real_of(A.dtype)


def einsum(equation, operands):
    """The op gets an explicit equation (``"ij,jk->ik"``, ellipses spelled out): each output
    label takes the broadcast size that label has among the operands."""
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise RuntimeError(f"einsum: the equation {equation!r} names {len(terms)} operands, "
                           f"got {len(operands)}")
    sizes = {}
    for i, (term, t) in enumerate(zip(terms, operands)):
        if len(term) != t.ndim:
            raise RuntimeError(f"einsum: operand {i} has shape {list(t._shape)} but the "
                               f"equation {equation!r} gives it {len(term)} subscripts")
        for c, n in zip(term, t._shape):
            old = sizes.get(c, 1)
            if n != old and 1 not in (n, old):
                raise RuntimeError(f"einsum: subscript {c} has size {n} for operand {i}, which "
                                   f"does not broadcast with size {old} seen before")
            sizes[c] = n if old == 1 else old
    return tuple(sizes[c] for c in rhs), operands[0].dtype


# -- sorting ------------------------------------------------------------------------------------
def sort(self, dim, descending, stable):
    _check_dim("sort", dim, self.ndim)
    s = shape_of(self)
    return (s, self.dtype), (s, _int64)


def mode(self, dim):
    dims = (_check_dim("mode", dim, self.ndim),) if self.ndim else ()
    s = reduced(self._shape, dims, False)
    return (s, self.dtype), (s, _int64)


# -- what the meta device makes of these --------------------------------------------------------
def output_specs(result):
    """A meta function's result as a list of (shape, dtype) pairs, or None when it returned the
    mutated argument (a Tensor)."""
    if isinstance(result, Tensor):
        return None
    if len(result) == 2 and isinstance(result[1], _dtype.dtype):
        return [(tuple(result[0]), result[1])]
    return [(tuple(s), d) for s, d in result]
