"""Ops that rearrange or combine data (copies, unlike the views in ``views.py``).

Kernels: ``cat(Tensor[] tensors, int dim, dtype dtype)``, ``flip(Tensor self, int[] dims)``,
``roll(Tensor self, int[] shifts, int[] dims)``, ``tile(Tensor self, int[] reps)``,
``tril(Tensor self, int diagonal)``, ``triu(Tensor self, int diagonal)``.
"""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
from ..dispatch.dispatcher import define
from ._util import tensor_method

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "flip", "fliplr",
           "flipud", "roll", "tile", "tril", "triu"]

cat_op = define("cat(Tensor[] tensors, int dim, dtype dtype) -> Tensor")
flip_op = define("flip(Tensor self, int[] dims) -> Tensor")
roll_op = define("roll(Tensor self, int[] shifts, int[] dims) -> Tensor")
tile_op = define("tile(Tensor self, int[] reps) -> Tensor")
tril_op = define("tril(Tensor self, int diagonal) -> Tensor")
triu_op = define("triu(Tensor self, int diagonal) -> Tensor")


def _tensor_list(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be a sequence of Tensors, not "
                        f"{type(tensors).__name__}")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    if not tensors:
        raise RuntimeError(f"{op}(): expected a non-empty list of Tensors")
    return tensors


def cat(tensors, dim=0, *, out=None):
    tensors = _tensor_list(tensors, "cat")
    # PyTorch's legacy rule: 1-D empty tensors are skipped whatever the other shapes
    shaped = [t for t in tensors if not (t.ndim == 1 and t._shape[0] == 0)]
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = _dtype.promote_types(dtype, t.dtype)
    if not shaped:
        r = cat_op(tensors, 0, dtype)
        return r if out is None else _out(out, r)
    ref = shaped[0]
    if ref.ndim == 0:
        raise RuntimeError("zero-dimensional tensor (at position 0) cannot be concatenated")
    d = _wrap_dim(dim, ref.ndim, "cat")
    for i, t in enumerate(tensors):
        if t.ndim == 1 and t._shape[0] == 0:
            continue
        if t.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} and "
                               f"{t.ndim}")
        for k in range(ref.ndim):
            if k != d and t._shape[k] != ref._shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref._shape[k]} but got size {t._shape[k]} "
                                   f"for tensor number {i} in the list.")
    r = cat_op(shaped, d, dtype)
    return r if out is None else _out(out, r)


def _out(out, r):
    from ._util import write_out
    return write_out(out, r, "cat")


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    tensors = _tensor_list(tensors, "stack")
    shape = tensors[0]._shape
    for i, t in enumerate(tensors):
        if t._shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t._shape)} at entry {i}")
    d = _wrap_dim(dim, len(shape) + 1, "stack")
    return cat([t.unsqueeze(d) for t in tensors], d, out=out)


def hstack(tensors):
    tensors = _tensor_list(tensors, "hstack")
    tensors = [t.reshape(1) if t.ndim == 0 else t for t in tensors]
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    tensors = _tensor_list(tensors, "vstack")
    return cat([t.reshape(1, -1) if t.ndim < 2 else t for t in tensors], 0)


@tensor_method()
def flip(input, *dims):
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    n = input.ndim
    ds = tuple(_wrap_dim(d, n, "flip") for d in dims)
    if len(set(ds)) != len(ds):
        raise RuntimeError(f"dims has duplicates, original flip dims size={len(ds)}, but unique "
                           f"flip dims size={len(set(ds))}")
    return flip_op(input, ds)


def fliplr(input):
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip_op(input, (1,))


def flipud(input):
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip_op(input, (0,))


Tensor.fliplr, Tensor.flipud = fliplr, flipud


@tensor_method()
def roll(input, shifts, dims=None):
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"roll: shifts must be a single int when dims is not given, got "
                               f"{list(shifts)}")
        return roll_op(input.flatten(), shifts, (0,)).view(input._shape)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    return roll_op(input, shifts, tuple(_wrap_dim(d, input.ndim, "roll") for d in dims))


def _reps(reps):
    if len(reps) == 1 and isinstance(reps[0], (list, tuple)):
        reps = reps[0]
    return tuple(int(r) for r in reps)


@tensor_method()
def repeat(self, *sizes):
    sizes = _reps(sizes)
    if len(sizes) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {list(sizes)}")
    return tile_op(self, sizes)


@tensor_method()
def tile(input, *dims):
    dims = _reps(dims)
    if len(dims) < input.ndim:
        dims = (1,) * (input.ndim - len(dims)) + dims
    return tile_op(input, dims)


def _tri(op, name):
    def fn(input, diagonal=0, *, out=None):
        if input.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        r = op(input, int(diagonal))
        if out is None:
            return r
        from ._util import write_out
        return write_out(out, r, name)

    def fn_(self, diagonal=0):
        r = fn(self, diagonal)
        self.copy_(r)
        return self

    fn.__name__, fn_.__name__ = name, name + "_"
    return fn, fn_


tril, tril_ = _tri(tril_op, "tril")
triu, triu_ = _tri(triu_op, "triu")
Tensor.tril, Tensor.tril_, Tensor.triu, Tensor.triu_ = tril, tril_, triu, triu_
