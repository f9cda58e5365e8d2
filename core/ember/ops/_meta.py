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

import math

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


# -- copies -------------------------------------------------------------------------------------
def to_copy(self, dtype):
    return shape_of(tensor_arg("_to_copy", self)), dtype


def copy_(self, src):
    if tuple(src._shape) != tuple(self._shape):
        raise RuntimeError(f"copy_: the source of shape {list(src._shape)} must have the "
                           f"destination's shape {list(self._shape)} (expand it first)")
    return self


# -- factories ----------------------------------------------------------------------------------
def _size(op, size) -> tuple:
    out = tuple(int(s) for s in size)
    if any(s < 0 for s in out):
        raise RuntimeError(f"{op}: trying to create tensor with negative dimension: {list(out)}")
    return out


def full(size, fill_value, dtype, device):
    return _size("full", size), dtype


def arange(start, end, step, dtype, device):
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    return (max(math.ceil((end - start) / step), 0),), dtype


def linspace(start, end, steps, dtype, device):
    return _size("linspace", (steps,)), dtype


def eye(n, m, dtype, device):
    return _size("eye", (n, m)), dtype


def sized(op: str):
    """Random factories: ``op(..., int[] size, Generator generator, dtype dtype, Device device)``
    (rand, randn, randint, normal): the size argument, third from the end."""
    return lambda *args: (_size(op, args[-4]), args[-2])


def randperm(n, generator, dtype, device):
    return _size("randperm", (n,)), dtype


def multinomial(self, num_samples, replacement, generator):
    if self.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got shape "
                           f"{list(self._shape)}")
    return tuple(self._shape[:-1]) + (int(num_samples),), _int64


def bernoulli_(self, p, generator):
    if isinstance(p, Tensor):
        same_shape("bernoulli_", self, broadcast("bernoulli_", self, p), "self and p")
    return self


# -- shape ops ----------------------------------------------------------------------------------
def cat(tensors, dim, dtype):
    if not tensors:
        raise RuntimeError("cat: expected a non-empty list of Tensors")
    shaped = [t for t in tensors if not (t.ndim == 1 and t._shape[0] == 0)]
    if not shaped:
        return (0,), dtype
    ref = tuple(shaped[0]._shape)
    d = _check_dim("cat", dim, len(ref))
    total = 0
    for i, t in enumerate(shaped):
        s = tuple(t._shape)
        if len(s) != len(ref) or s[:d] + s[d + 1:] != ref[:d] + ref[d + 1:]:
            raise RuntimeError(f"cat: sizes of tensors must match except in dimension {d}: "
                               f"tensor 0 has shape {list(ref)}, tensor {i} has shape {list(s)}")
        total += s[d]
    return ref[:d] + (total,) + ref[d + 1:], dtype


def tile(self, reps):
    reps = tuple(reps)
    shape = tuple(self._shape)
    n = max(len(reps), len(shape))
    reps = (1,) * (n - len(reps)) + reps
    shape = (1,) * (n - len(shape)) + shape
    return _size("tile", tuple(s * r for s, r in zip(shape, reps))), self.dtype


# -- indexing -----------------------------------------------------------------------------------
def _index_shape(op, shape, indices):
    """``view[indices]`` with one index tensor (or None) per leading dim: the broadcast index
    shape replaces adjacent indexed dims, and goes first when they are not adjacent."""
    indices = list(indices) + [None] * (len(shape) - len(indices))
    if len(indices) > len(shape):
        raise IndexError(f"{op}: too many indices ({len(indices)}) for a tensor of shape "
                         f"{list(shape)}")
    dims = [d for d, t in enumerate(indices) if t is not None]
    if not dims:
        return tuple(shape)
    try:
        b = broadcast(op, *[indices[d] for d in dims])
    except RuntimeError:
        raise IndexError(f"{op}: shape mismatch: indexing tensors could not be broadcast "
                         f"together with shapes "
                         f"{', '.join(str(list(indices[d]._shape)) for d in dims)}") from None
    if dims == list(range(dims[0], dims[-1] + 1)):
        return tuple(shape[:dims[0]]) + b + tuple(shape[dims[-1] + 1:])
    return b + tuple(s for d, s in enumerate(shape) if indices[d] is None)


def index(self, indices):
    return _index_shape("index", tuple(self._shape), indices), self.dtype


def index_put_(self, indices, values, accumulate):
    target = _index_shape("index_put_", tuple(self._shape), indices)
    try:
        _broadcast_pair(target, shape_of(values))
    except RuntimeError:
        raise RuntimeError(f"index_put_: shape mismatch: value tensor of shape "
                           f"{list(shape_of(values))} cannot be broadcast to indexing result of "
                           f"shape {list(target)}") from None
    return self


def gather(self, dim, index):
    _check_dim("gather", dim, self.ndim)
    return shape_of(index), self.dtype


def scatter(self, dim, index, src, reduce):
    _check_dim("scatter", dim, self.ndim)
    return shape_of(self), self.dtype


def index_select(self, dim, index):
    if self.ndim == 0:
        return (), self.dtype
    d = _check_dim("index_select", dim, self.ndim)
    s = tuple(self._shape)
    return s[:d] + (index.numel(),) + s[d + 1:], self.dtype


def index_add(self, dim, index, source, alpha):
    _check_dim("index_add", dim, self.ndim)
    return shape_of(self), self.dtype


def masked_fill(self, mask, value):
    return broadcast("masked_fill", self, mask), self.dtype


# -- what the meta device makes of these --------------------------------------------------------
def output_specs(result):
    """A meta function's result as a list of (shape, dtype) pairs, or None when it returned the
    mutated argument (a Tensor)."""
    if isinstance(result, Tensor):
        return None
    if len(result) == 2 and isinstance(result[1], _dtype.dtype):
        return [(tuple(result[0]), result[1])]
    return [(tuple(s), d) for s, d in result]
