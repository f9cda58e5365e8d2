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


# -- what the meta device makes of these --------------------------------------------------------
def output_specs(result):
    """A meta function's result as a list of (shape, dtype) pairs, or None when it returned the
    mutated argument (a Tensor)."""
    if isinstance(result, Tensor):
        return None
    if len(result) == 2 and isinstance(result[1], _dtype.dtype):
        return [(tuple(result[0]), result[1])]
    return [(tuple(s), d) for s, d in result]
