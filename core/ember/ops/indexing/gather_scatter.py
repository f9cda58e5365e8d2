"""Gather and scatter along a dim: ``gather``, ``scatter`` (``scatter_add``), ``index_select``,
``index_add``, ``index_copy`` — each op with its meta and derivative. The in-place variants run
the out-of-place op, then ``copy_`` the result into ``self``."""
from __future__ import annotations

from ... import _dtype
from ..._tensor import Tensor, _wrap_dim
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _batching, _grad, _primitives, _tangents
from .. import _meta
from .. import factories as _fac
from .. import reduction as _red
from .._util import _dtype_title, contiguous_strides, every_example, tensor_method, write_out
from ..views import movedim, view_scatter
from .advanced import index_put__op


# -- metas --------------------------------------------------------------------------------------
def _gather_meta(self, dim, index):
    _meta._check_dim("gather", dim, self.ndim)
    return _meta.shape_of(index), self.dtype


def _scatter_meta(self, dim, index, src, reduce):
    _meta._check_dim("scatter", dim, self.ndim)
    return _meta.shape_of(self), self.dtype


def _index_select_meta(self, dim, index):
    if self.ndim == 0:
        return (), self.dtype
    d = _meta._check_dim("index_select", dim, self.ndim)
    s = tuple(self._shape)
    return s[:d] + (index.numel(),) + s[d + 1:], self.dtype


def _index_add_meta(self, dim, index, source, alpha):
    _meta._check_dim("index_add", dim, self.ndim)
    return _meta.shape_of(self), self.dtype


# -- derivatives --------------------------------------------------------------------------------
def scatter_into_zeros(g, shape, dim, index):
    """zeros(shape) with ``g`` added at ``index`` along ``dim`` (gather's adjoint)."""
    return scatter_op(_grad.zeros(shape, g), dim, index, g, "add")
_primitives.provide(scatter_into_zeros=scatter_into_zeros)


def _gather_backward(ctx, g, self, dim, index):
    return (scatter_into_zeros(g, ctx.meta(0)[0], dim, index),)


def _src_grad(g, dim, index, src_shape):
    """gather(g, index), placed in the leading corner of ``src`` (which may be larger)."""
    gi = gather_op(g, dim, index)
    if gi._shape == tuple(src_shape) or not src_shape:
        return gi
    return view_scatter(gi, src_shape, gi._shape, contiguous_strides(src_shape), 0)


def _scatter_name(self, dim, index, src, reduce):
    return "ScatterAddBackward0" if reduce == "add" else "ScatterBackward0"


def _scatter_backward(ctx, g, self, dim, index, src, reduce):
    if reduce == "multiply":
        raise NotImplementedError("the derivative for 'scatter' with reduce='multiply' is not "
                                  "implemented")
    gs = gsrc = None
    if ctx.needs(0):
        gs = g if reduce == "add" else scatter_op(g, dim, index, _grad.zeros(index._shape, g),
                                                  None)
    if ctx.needs(3):
        gsrc = _src_grad(g, dim, index, ctx.meta(3)[0])
    return gs, None, None, gsrc


def _index_select_backward(ctx, g, self, dim, index):
    shape = ctx.meta(0)[0]
    return (index_add_op(_grad.zeros(shape, g), dim, index, g, 1),)


def _index_add_backward(ctx, g, self, dim, index, source, alpha):
    gsrc = None
    if ctx.needs(3):
        shape = ctx.meta(3)[0]
        gsrc = index_select_op(g, dim, index) if g.ndim else g
        if alpha != 1:
            gsrc = gsrc * alpha
        if not shape:
            gsrc = _red.sum_op(gsrc, tuple(range(gsrc.ndim)), False, gsrc.dtype)
    return g, None, None, gsrc


# -- ops ----------------------------------------------------------------------------------------
gather_op = define("gather(Tensor self, int dim, Tensor index) -> Tensor", meta=_gather_meta,
                   derivative=Derivative(_gather_backward, save=("index",), diff=("self",),
                                         complex_ok=True))
scatter_op = define("scatter(Tensor self, int dim, Tensor index, Tensor src, str? reduce) -> "
                    "Tensor", meta=_scatter_meta,
                    derivative=Derivative(_scatter_backward, save=("index",),
                                          diff=("self", "src"), name=_scatter_name,
                                          complex_ok=True))
index_select_op = define("index_select(Tensor self, int dim, Tensor index) -> Tensor",
                         meta=_index_select_meta,
                         derivative=Derivative(_index_select_backward, save=("index",),
                                               diff=("self",), complex_ok=True))


@index_select_op.def_onnx
def _index_select_onnx(b, c, x, dim, index, *rest):
    return b.op("Gather", [x, index], axis=int(dim))
index_add_op = define("index_add(Tensor self, int dim, Tensor index, Tensor source, "
                      "Scalar alpha) -> Tensor", meta=_index_add_meta,
                      derivative=Derivative(_index_add_backward, save=("index",),
                                            diff=("self", "source"), complex_ok=True))


# -- gather / scatter API -----------------------------------------------------------------------
def _check_index(op, input, dim, index, src=None):
    if not isinstance(index, Tensor):
        raise TypeError(f"{op}(): argument 'index' must be Tensor, not {type(index).__name__}")
    # PyTorch checks the dtype of a non-empty index only
    if index.dtype not in (_dtype.int64, _dtype.int32) and index.numel():
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    d = _wrap_dim(dim, input.ndim, op)
    if index.numel() == 0:       # PyTorch checks no shapes against an empty index
        return d
    if index.ndim != input.ndim and not (index.ndim <= 1 and input.ndim <= 1):
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as "
                           f"{'input' if src is None else 'self'} tensor")
    if input.ndim == 0 or index.ndim == 0:
        return d
    too_big = [k for k in range(index.ndim) if k != d and index._shape[k] > input._shape[k]]
    if src is None:
        if too_big:
            raise RuntimeError(f"{op}(): Size does not match at dimension {too_big[0]} expected "
                               f"index {list(index._shape)} to be no larger than self "
                               f"{list(input._shape)} apart from dimension {d}")
    elif too_big or (src.ndim and any(index._shape[k] > src._shape[k]
                                      for k in range(index.ndim))):
        raise RuntimeError(f"{op}(): Expected index {list(index._shape)} to be no larger than self "
                           f"{list(input._shape)} apart from dimension {d} and to be no larger "
                           f"size than src {list(src._shape)}")
    return d


@tensor_method()
def gather(input, dim, index, *, sparse_grad=False, out=None):
    d = _check_index("gather", input, dim, index)
    if index.numel() == 0 and index.ndim != input.ndim:
        r = input.reshape(-1).narrow(0, 0, 0).reshape(index.shape)   # empty, in input's graph
    else:
        r = gather_op(input, d, index)
    return r if out is None else write_out(out, r, "gather")


def _scatter(op_name, input, dim, index, src, reduce):
    if src is None:
        raise TypeError(f"{op_name}(): expected a src tensor or a value")
    if not isinstance(src, Tensor):
        src = _fac.full(index._shape if isinstance(index, Tensor) else (), src, dtype=input.dtype,
                   device=input.device)
    elif src.dtype is not input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    d = _check_index(op_name, input, dim, index, src)
    if index.numel() == 0:       # nothing scattered: self, whatever the index's shape
        return input.clone()
    return scatter_op(input, d, index, src, reduce)


@tensor_method()
def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    return _scatter("scatter", input, dim, index, value if src is None else src, reduce)


@tensor_method()
def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    return _assign(self, scatter(self, dim, index, src, value=value, reduce=reduce))


@tensor_method()
def scatter_add(input, dim, index, src):
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add(): argument 'src' must be Tensor, not "
                        f"{type(src).__name__}")
    return _scatter("scatter_add", input, dim, index, src, "add")


@tensor_method()
def scatter_add_(self, dim, index, src):
    return _assign(self, scatter_add(self, dim, index, src))


def _assign(self, result):
    """In-place variant: the out-of-place kernel, then a copy (bumps the version)."""
    return self.copy_(result)


# -- index_select / index_add / index_copy ------------------------------------------------------
def _vector_index(op, index):
    if not isinstance(index, Tensor) or index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector")
    return index.reshape(-1)


@tensor_method()
def index_select(input, dim, index, *, out=None):
    d = _wrap_dim(dim, input.ndim, "index_select")
    index = _vector_index("index_select", index)
    if input.ndim == 0 and index.numel() != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got "
                           f"{index.numel()} value(s)")
    r = index_select_op(input, d, index)
    return r if out is None else write_out(out, r, "index_select")


def _check_source(op, input, d, index, source):
    if not isinstance(source, Tensor):
        raise TypeError(f"{op}(): argument 'source' must be Tensor, not "
                        f"{type(source).__name__}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"{op}(): self ({_dtype_title(input.dtype)}) and source "
                           f"({_dtype_title(source.dtype)}) must have the same scalar type")
    n = index.numel()
    src_shape = source._shape if source.ndim else (1,)
    self_shape = input._shape if input.ndim else (1,)
    if len(src_shape) != len(self_shape) or any(
            k != d and src_shape[k] != self_shape[k] for k in range(len(self_shape))):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input._shape)} "
                           f"source.shape = {list(source._shape)}")
    if src_shape[d] != n:
        raise RuntimeError(f"{op}(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({src_shape[d]}), for dim: {d}")


@tensor_method()
def index_add(input, dim, index, source, *, alpha=1):
    d = _wrap_dim(dim, input.ndim, "index_add")
    index = _vector_index("index_add_", index)
    _check_source("index_add_", input, d, index, source)
    if input.dtype.category <= _dtype.INTEGRAL:
        alpha = int(alpha)
    return index_add_op(input, d, index, source, alpha)


@tensor_method()
def index_add_(self, dim, index, source, *, alpha=1):
    return _assign(self, index_add(self, dim, index, source, alpha=alpha))


@tensor_method()
def index_copy_(self, dim, index, source):
    d = _wrap_dim(dim, self.ndim, "index_copy")
    index = _vector_index("index_copy_", index)
    _check_source("index_copy_", self, d, index, source)
    size = self._shape[d] if self.ndim else 1
    if index.numel():
        every = every_example(index)
        lo, hi = int(every.min().item()), int(every.max().item())
        if lo < 0 or hi >= size:
            raise IndexError(f"index_copy_(): index {lo if lo < 0 else hi} is out of bounds for "
                             f"dimension {d} with size {size}")
    target = self.reshape(1) if self.ndim == 0 else self
    shape = target._shape[:d] + (index.numel(),) + target._shape[d + 1:]
    indices = [None] * target.ndim
    indices[d] = index
    index_put__op(target, indices, source.reshape(shape), False)
    self._storage.version += 1
    return self


@tensor_method()
def index_copy(input, dim, index, source):
    return index_copy_(input.clone(), dim, index, source)


# -- ember.func: batching rules (the batch is one more leading dim of every operand) -----------
def _as_rows(x):
    """A 0-d example as one element along a dim (the batch rules below index dim 1)."""
    return _batching.unsqueeze_at(x, 1) if x.ndim == 1 else x


def _unrow(out, was_0d):
    return out.view(out._shape[:1]) if was_0d and out.ndim == 2 else out


def _gather_batch_rule(args, bdims, layer):
    self, dim, index = args
    if bdims[0] is None and bdims[2] is None:
        return gather_op(*args), None
    size = _batching.batch_size_of(args, bdims, layer)
    was_0d = self.ndim - (bdims[0] is not None) == 0
    x = _as_rows(_batching.materialize(self, bdims[0], size))
    i = _as_rows(_batching.materialize(index, bdims[2], size))
    return _unrow(gather_op(x, dim + 1, i), was_0d), 0


def _scatter_batch_rule(args, bdims, layer):
    self, dim, index, src, reduce = args
    if all(d is None for d in bdims):
        return scatter_op(*args), None
    size = _batching.batch_size_of(args, bdims, layer)
    was_0d = self.ndim - (bdims[0] is not None) == 0
    x = _as_rows(_batching.materialize(self, bdims[0], size))
    i = _as_rows(_batching.materialize(index, bdims[2], size))
    s = _as_rows(_batching.materialize(src, bdims[3], size)) if isinstance(src, Tensor) else src
    return _unrow(scatter_op(x, dim + 1, i, s, reduce), was_0d), 0


def _index_select_batch_rule(args, bdims, layer):
    self, dim, index = args
    if bdims[0] is None and bdims[2] is None:
        return index_select_op(*args), None
    was_0d = self.ndim - (bdims[0] is not None) == 0
    if bdims[2] is None:
        return _unrow(index_select_op(_as_rows(self), dim + 1, index), was_0d), 0
    # one index vector per example: gather along the dim with the index spread over the rest
    size = _batching.batch_size_of(args, bdims, layer)
    x = _as_rows(_batching.materialize(self, bdims[0], size))
    d = dim + 1
    idx = index.reshape(size, -1)
    k = idx._shape[1]
    shape = [1] * x.ndim
    shape[0], shape[d] = size, k
    target = x._shape[:d] + (k,) + x._shape[d + 1:]
    spread = idx.reshape(tuple(shape)).expand(*target)
    return _unrow(gather_op(x, d, spread), was_0d), 0


def _index_add_batch_rule(args, bdims, layer):
    self, dim, index, source, alpha = args
    if all(d is None for d in bdims):
        return index_add_op(*args), None
    if self.ndim - (bdims[0] is not None) in (0, ) or \
            source.ndim - (bdims[3] is not None) != self.ndim - (bdims[0] is not None):
        return _batching.loop(index_add_op, args, bdims, layer)
    size = _batching.batch_size_of(args, bdims, layer)
    x = _batching.materialize(self, bdims[0], size)
    src = _batching.materialize(source, bdims[3], size)
    d = dim + 1
    if bdims[2] is None:
        return index_add_op(x, d, index, src, alpha), 0
    # per-example indices: fold the batch into the indexed dim (example b owns rows b*n...)
    n = x._shape[d]
    xm = movedim(x, d, 1)
    rest = xm._shape[2:]
    idx = index.reshape(size, -1)
    offsets = _fac.arange(size, dtype=idx.dtype, device=idx.device).reshape(size, 1) * n
    flat_i = (idx + offsets).reshape(-1)
    flat_s = movedim(src, d, 1).reshape(flat_i._shape[0], *rest)
    out = index_add_op(xm.reshape(size * n, *rest), 0, flat_i, flat_s, alpha)
    return movedim(out.reshape(size, n, *rest), 1, d), 0


def _scatter_jvp(ctx, tangents, self, dim, index, src, reduce):
    if reduce not in (None, "add"):
        return NotImplemented   # the transpose of the backward formula (ember.func's rule)
    return _tangents.linear(scatter_op, (0, 3))(ctx, tangents, self, dim, index, src, reduce)


gather_op.def_batch_rule(_gather_batch_rule)
scatter_op.def_batch_rule(_scatter_batch_rule)
index_select_op.def_batch_rule(_index_select_batch_rule)
index_add_op.def_batch_rule(_index_add_batch_rule)
gather_op.def_jvp(_tangents.linear(gather_op))
index_select_op.def_jvp(_tangents.linear(index_select_op))
index_add_op.def_jvp(_tangents.linear(index_add_op, (0, 3)))
scatter_op.def_jvp(_scatter_jvp)
