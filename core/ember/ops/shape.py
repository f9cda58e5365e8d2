"""Ops that rearrange or combine data (copies, unlike the views in ``views/``), each with its
meta and derivative beside its define.

Kernels: ``cat(Tensor[] tensors, int dim, dtype dtype)``, ``stack(Tensor[] tensors, int dim,
dtype dtype)`` (a backend without it runs its composite: ``cat`` of unsqueezed views),
``flip(Tensor self, int[] dims)``,
``roll(Tensor self, int[] shifts, int[] dims)``, ``tile(Tensor self, int[] reps)``,
``tril(Tensor self, int diagonal)``, ``triu(Tensor self, int diagonal)``.
``repeat_interleave`` and the ``*stack`` helpers are composites of these and of views.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
from ..dispatch.dispatcher import define
from ..dispatch.facets import Derivative
from . import _batching, _grad, _primitives, _tangents
from . import _meta
from . import factories as _fac
from ._lowering import foldable
from ._util import require_tensor, tensor_method, write_out
from .views import select_op, slice_op, unsqueeze, view_op
from .factories import zeros

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack",
           "column_stack", "row_stack", "atleast_1d", "atleast_2d", "atleast_3d", "flip",
           "fliplr", "flipud", "roll", "tile", "tril", "triu", "repeat_interleave"]



# -- metas --------------------------------------------------------------------------------------
def _cat_meta(tensors, dim, dtype):
    if not tensors:
        raise RuntimeError("cat: expected a non-empty list of Tensors")
    shaped = [t for t in tensors if not (t.ndim == 1 and t._shape[0] == 0)]
    if not shaped:
        return (0,), dtype
    ref = tuple(shaped[0]._shape)
    d = _meta._check_dim("cat", dim, len(ref))
    total = 0
    for i, t in enumerate(shaped):
        s = tuple(t._shape)
        if len(s) != len(ref) or s[:d] + s[d + 1:] != ref[:d] + ref[d + 1:]:
            raise RuntimeError(f"cat: sizes of tensors must match except in dimension {d}: "
                               f"tensor 0 has shape {list(ref)}, tensor {i} has shape {list(s)}")
        total += s[d]
    return ref[:d] + (total,) + ref[d + 1:], dtype


def _stack_meta(tensors, dim, dtype):
    shape = tuple(tensors[0]._shape)
    return shape[:dim] + (len(tensors),) + shape[dim:], dtype


def _tile_meta(self, reps):
    reps = tuple(reps)
    shape = tuple(self._shape)
    n = max(len(reps), len(shape))
    reps = (1,) * (n - len(reps)) + reps
    shape = (1,) * (n - len(shape)) + shape
    return _meta._size("tile", tuple(s * r for s, r in zip(shape, reps))), self.dtype


# -- derivatives --------------------------------------------------------------------------------
def _shapes(tensors, dim, dtype):
    return [t._shape for t in tensors]


def _cat_backward(ctx, g, tensors, dim, dtype):
    grads = []
    start = 0
    for meta, shape in zip(ctx.metas_of(0), ctx.info):
        if len(shape) != g.ndim:  # a skipped 1-D empty tensor (PyTorch's legacy cat rule)
            grads.append(None)
            continue
        n = shape[dim]
        grads.append(slice_op(g, dim, start, start + n, 1) if meta is not None else None)
        start += n
    return (grads,)


def _stack_backward(ctx, g, tensors, dim, dtype):
    # StackBackward0: entry i's gradient is the i-th slice of g along dim
    return ([select_op(g, dim, i) if meta is not None else None
             for i, meta in enumerate(ctx.metas_of(0))],)


def _stack_composite(tensors, dim, dtype):
    """What a backend without a ``stack`` kernel runs: its ``cat`` of unsqueezed views."""
    return cat_op([unsqueeze(t, dim) for t in tensors], dim, dtype)


def _flip_backward(ctx, g, self, dims):
    return (flip_op(g, tuple(dims)),)


def _roll_backward(ctx, g, self, shifts, dims):
    return (roll_op(g, tuple(-s for s in shifts), tuple(dims)),)


def _tile_backward(ctx, g, self, reps):
    shape = ctx.meta(0)[0]
    padded = (1,) * (len(reps) - len(shape)) + tuple(shape)
    # out dim i = reps[i] copies of padded[i]: split each into (reps, size) and sum the copies
    split = []
    for r, s in zip(reps, padded):
        split += [r, s]
    if 0 in split:
        return (_grad.zeros(shape, g),)
    r = _primitives.sum_op(g.reshape(split), tuple(range(0, 2 * len(reps), 2)), False, g.dtype)
    return (view_op(r, tuple(shape)) if r._shape != tuple(shape) else r,)


def _tril_backward(ctx, g, self, diagonal):
    return (tril_op(g, diagonal),)


def _triu_backward(ctx, g, self, diagonal):
    return (triu_op(g, diagonal),)


# -- ops ----------------------------------------------------------------------------------------
cat_op = define("cat(Tensor[] tensors, int dim, dtype dtype) -> Tensor", meta=_cat_meta,
                derivative=Derivative(_cat_backward, complex_ok=True, setup=_shapes))
stack_op = define("stack(Tensor[] tensors, int dim, dtype dtype) -> Tensor", meta=_stack_meta,
                  composite=_stack_composite,
                  derivative=Derivative(_stack_backward, complex_ok=True))
flip_op = define("flip(Tensor self, int[] dims) -> Tensor", meta=_meta.same("flip"),
                 derivative=Derivative(_flip_backward, complex_ok=True))
roll_op = define("roll(Tensor self, int[] shifts, int[] dims) -> Tensor", meta=_meta.same("roll"),
                 derivative=Derivative(_roll_backward, complex_ok=True))


@cat_op.def_onnx
@foldable
def _cat_onnx(b, c, xs, dim, *rest):
    return b.op("Concat", list(xs), axis=int(dim))


@stack_op.def_onnx
@foldable
def _stack_onnx(b, c, xs, dim, *rest):
    axes = b.ints([dim])
    return b.op("Concat", [b.op("Unsqueeze", [x, axes]) for x in xs], axis=int(dim))


tile_op = define("tile(Tensor self, int[] reps) -> Tensor", meta=_tile_meta,
                 derivative=Derivative(_tile_backward, complex_ok=True, name="RepeatBackward0"))
tril_op = define("tril(Tensor self, int diagonal) -> Tensor", meta=_meta.same("tril"),
                 derivative=Derivative(_tril_backward, complex_ok=True))
triu_op = define("triu(Tensor self, int diagonal) -> Tensor", meta=_meta.same("triu"),
                 derivative=Derivative(_triu_backward, complex_ok=True))
_primitives.provide(cat_op=cat_op)


def _tensor_list(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' must be a sequence of Tensors, not "
                        f"{type(tensors).__name__}")
    tensors = list(tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    return tensors


def _legacy_empty(t):
    return t.ndim == 1 and t._shape[0] == 0


def cat(tensors, dim=0, *, out=None):
    tensors = _tensor_list(tensors, "cat")
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    dtype = tensors[0].dtype
    legacy = False
    for i, t in enumerate(tensors):
        if t.dtype is not dtype:
            dtype = _dtype.promote_types(dtype, t.dtype)
        shape = t._shape
        if len(shape) < 2:
            if not shape:
                raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                                   f"concatenated")
            legacy = legacy or shape[0] == 0
    # PyTorch's legacy rule: 1-D empty tensors are skipped whatever the other shapes (they
    # still take part in the dtype promotion)
    shaped = [t for t in tensors if not _legacy_empty(t)] if legacy else tensors
    if not shaped:
        r = cat_op(tensors, 0, dtype)
        return r if out is None else write_out(out, r, "cat")
    ref = shaped[0]._shape
    d = _wrap_dim(dim, len(ref), "cat")
    nd, before, after = len(ref), ref[:d], ref[d + 1:]
    for t in tensors:
        s = t._shape
        if len(s) != nd or s[:d] != before or s[d + 1:] != after:
            if not (legacy and _legacy_empty(t)):
                _cat_mismatch(tensors, ref, d)
    r = cat_op(shaped, d, dtype)
    return r if out is None else write_out(out, r, "cat")


def _cat_mismatch(tensors, ref, d):
    """PyTorch's message for the first tensor whose shape does not fit ``ref`` off ``d``."""
    for i, t in enumerate(tensors):
        if _legacy_empty(t):
            continue
        if t.ndim != len(ref):
            raise RuntimeError(f"cat(): Tensors must have same number of dimensions: got "
                               f"{len(ref)} and {t.ndim}")
        for k in range(len(ref)):
            if k != d and t._shape[k] != ref[k]:
                raise RuntimeError(f"cat(): Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref[k]} but got size {t._shape[k]} "
                                   f"for tensor number {i} in the list.")


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    tensors = _tensor_list(tensors, "stack")
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0]._shape
    for i, t in enumerate(tensors):
        if t._shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(shape)} at entry 0 and {list(t._shape)} at entry {i}")
    d = _wrap_dim(dim, len(shape) + 1, "stack")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not dtype:
            dtype = _dtype.promote_types(dtype, t.dtype)
    r = stack_op(tensors, d, dtype)
    return r if out is None else write_out(out, r, "stack")


def _atleast(n):
    def pad(t):
        if t.ndim >= n:
            return t
        if n == 3 and t.ndim:
            # numpy's (and PyTorch's) placement: (n,) -> (1, n, 1), (m, n) -> (m, n, 1)
            return t.reshape(((1,) if t.ndim == 1 else ()) + t._shape + (1,))
        return t.reshape((1,) * (n - t.ndim) + t._shape)

    def fn(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
            return tuple(pad(t) for t in _tensor_list(tensors[0], f"atleast_{n}d"))
        if len(tensors) == 1:
            return pad(tensors[0])
        return tuple(pad(t) for t in _tensor_list(tensors, f"atleast_{n}d"))

    fn.__name__ = f"atleast_{n}d"
    return fn


atleast_1d, atleast_2d, atleast_3d = _atleast(1), _atleast(2), _atleast(3)


def hstack(tensors, *, out=None):
    tensors = atleast_1d(_tensor_list(tensors, "hstack"))
    return cat(tensors, 0 if tensors and tensors[0].ndim == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    return cat(atleast_2d(_tensor_list(tensors, "vstack")), 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    return cat(atleast_3d(_tensor_list(tensors, "dstack")), 2, out=out)


def column_stack(tensors, *, out=None):
    tensors = _tensor_list(tensors, "column_stack")
    return cat([t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors], 1, out=out)


# -- flips and rolls ----------------------------------------------------------------------------
def _dims(args):
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        return tuple(args[0])
    return args


@tensor_method()
def flip(input, *dims_args, dims=None):
    """``flip(x, dims)``, ``flip(x, dims=(0, 1))`` or, as a method, ``x.flip(0, 1)``."""
    if dims is not None:
        if dims_args:
            raise TypeError("flip() got multiple values for argument 'dims'")
        dims_args = (dims,)
    if not dims_args:
        raise TypeError("flip() missing 1 required positional argument: 'dims'")
    ds = tuple(_wrap_dim(d, input.ndim, "flip") for d in _dims(dims_args))
    for i, d in enumerate(ds):
        if d in ds[:i]:
            raise RuntimeError(f"flip: dim {d} appears multiple times in the list of dims")
    return flip_op(input, ds if input.ndim else ())


@tensor_method()
def fliplr(input):
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip_op(input, (1,))


@tensor_method()
def flipud(input):
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return flip_op(input, (0,))


@tensor_method()
def roll(input, shifts, dims=None):
    shifts = (int(shifts),) if not isinstance(shifts, (list, tuple)) else tuple(shifts)
    dims = () if dims is None else (dims,) if not isinstance(dims, (list, tuple)) else tuple(dims)
    if not dims:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                               f"dims:0")
        # no dims: roll the flattened tensor
        return roll_op(input.reshape(-1), shifts, (0,)).view(input._shape)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    if input.ndim == 0:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    return roll_op(input, shifts, tuple(_wrap_dim(d, input.ndim, "roll") for d in dims))


# -- repetition ---------------------------------------------------------------------------------
def _reps(reps):
    return tuple(int(r) for r in _dims(reps))


def _tile(input, reps):
    shape = (1,) * (len(reps) - input.ndim) + input._shape
    target = [s * r for s, r in zip(shape, reps)]
    if any(r < 0 for r in reps):
        raise RuntimeError(f"tile: Trying to create tensor with negative dimension "
                           f"{min(target)}: {target}")
    return tile_op(input, reps)


@tensor_method()
def repeat(self, *sizes):
    sizes = _reps(sizes)
    if len(sizes) < self.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    return _tile(self, sizes)


@tensor_method()
def tile(input, *dims):
    dims = _reps(dims)
    return _tile(input, (1,) * (input.ndim - len(dims)) + dims)


@tensor_method()
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    if repeats is None:
        # repeat_interleave(repeats): index i repeated repeats[i] times
        repeats = input
        if repeats.ndim != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        return _positions(_repeat_counts(repeats, repeats._shape[0]), repeats.device)
    if dim is None:
        input, d = input.reshape(-1), 0
    else:
        d = _wrap_dim(dim, input.ndim, "repeat_interleave")
        if input.ndim == 0:
            input = input.reshape(1)
    n = input._shape[d]
    if isinstance(repeats, Tensor):
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        counts = _repeat_counts(repeats, n)
    else:
        if int(repeats) < 0:
            raise RuntimeError("Repeats must be non-negative")
        counts = np.full(n, int(repeats), dtype=np.int64)
    index = _positions(counts, input.device)
    if output_size is not None and index._shape[0] != output_size:
        raise RuntimeError(f"repeat_interleave: output_size ({output_size}) does not match the "
                           f"sum of repeats ({index._shape[0]})")
    return input.index_select(d, index)


def _repeat_counts(repeats, n):
    if repeats.dtype.category != _dtype.INTEGRAL:
        raise RuntimeError(f"repeat_interleave: repeats must be an integer tensor, got "
                           f"{repeats.dtype}")
    counts = repeats._host().reshape(-1).astype(np.int64)
    if counts.size == 1 and n != 1:
        counts = np.repeat(counts, n)
    if counts.size != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {counts.size} and input.size(0) = {n}")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    return counts


def _positions(counts, device):
    # the output size depends on the values, so PyTorch computes it on the host as well
    return _fac.tensor(np.repeat(np.arange(counts.size), counts), dtype=_dtype.int64, device=device)


# -- triangles ----------------------------------------------------------------------------------
def _tri(op, name):
    def fn(input, diagonal=0, *, out=None):
        if input.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
        r = op(input, int(diagonal))
        return r if out is None else write_out(out, r, name)

    def fn_(self, diagonal=0):
        return self.copy_(fn(self, diagonal))

    fn.__name__, fn_.__name__ = name, name + "_"
    return fn, fn_


tril, tril_ = _tri(tril_op, "tril")
triu, triu_ = _tri(triu_op, "triu")
Tensor.tril, Tensor.tril_, Tensor.triu, Tensor.triu_ = tril, tril_, triu, triu_


def diag(input, diagonal=0, *, out=None):
    """A 1-D tensor placed on the ``diagonal``-th diagonal of a square matrix, or the
    ``diagonal``-th diagonal of a matrix as a new 1-D tensor (composed of ``diagonal`` views and
    a copy, so autograd and every backend get it)."""
    require_tensor(input, "diag")
    if isinstance(diagonal, bool) or not isinstance(diagonal, int):
        raise TypeError(f"diag(): argument 'diagonal' must be int, not "
                        f"{type(diagonal).__name__}")
    if input.ndim == 1:
        n = input.shape[0] + abs(diagonal)
        r = zeros(n, n, dtype=input.dtype, device=input.device)
        r.diagonal(diagonal).copy_(input)
    elif input.ndim == 2:
        r = input.diagonal(diagonal).clone()
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    if out is None:
        return r
    return write_out(out, r, "diag")


Tensor.diag = diag
__all__ += ["diag", "rot90"]


@tensor_method()
def rot90(input, k=1, dims=(0, 1)):
    """Rotation by 90 degrees ``k`` times in the plane of ``dims`` (first toward second)."""
    require_tensor(input, "rot90")
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (_wrap_dim(d, input.ndim, "rot90") for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0, d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


# -- ember.func: batching rules (dims shift past the batch); every op here is linear ----------
def _list_batch_rule(op):
    """cat's and stack's rule: every entry batched at dim 0, the dim shifted past it."""
    def rule(args, bdims, layer):
        tensors, dim, dtype = args
        if all(d is None for d in bdims[0]):
            return op(tensors, dim, dtype), None
        size = _batching.batch_size_of(args, bdims, layer)
        parts = [_batching.materialize(t, d, size) for t, d in zip(tensors, bdims[0])]
        return op(parts, dim + 1, dtype), 0
    rule.__name__ = f"_{op.name}_batch_rule"
    return rule


def _tile_batch_rule(args, bdims, layer):
    x, reps = args
    if bdims[0] is None:
        return tile_op(x, reps), None
    n = max(len(reps), x.ndim - 1)
    reps = (1,) * (n - len(reps)) + tuple(reps)
    return tile_op(_batching.pad_logical(x, n), (1,) + reps), 0


cat_op.def_batch_rule(_list_batch_rule(cat_op))
stack_op.def_batch_rule(_list_batch_rule(stack_op))
flip_op.def_batch_rule(_batching.shift_dims(flip_op, 1))
roll_op.def_batch_rule(_batching.shift_dims(roll_op, 2))
tile_op.def_batch_rule(_tile_batch_rule)
tril_op.def_batch_rule(_batching.last_dims(tril_op))
triu_op.def_batch_rule(_batching.last_dims(triu_op))
for _op in (cat_op, stack_op, flip_op, roll_op, tile_op, tril_op, triu_op):
    _op.def_jvp(_tangents.linear(_op))
