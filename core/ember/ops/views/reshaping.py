"""Views that keep every element: ``view``/``reshape``, permutations, ``expand``,
and the dtype and complex-part views — each op with its derivative.
"""
from __future__ import annotations


import functools
import math
import warnings

from ... import _dtype
from ..._warn import user_stacklevel
from ..._tensor import Tensor, _wrap_dim
from ...dispatch.dispatcher import define
from ...dispatch.facets import Derivative
from .. import _batching, _grad, _primitives, _tangents
from .._lowering import foldable
from .._util import broadcast_shapes, contiguous_strides, require_tensor, tensor_method


# -- view / reshape -----------------------------------------------------------------------------
def _infer_size(shape, numel, op):
    if -1 not in shape and math.prod(shape) == numel and min(shape, default=0) >= 0:
        return tuple(shape)   # every size given and right: the common case, checked in C
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for i, s in enumerate(shape):
        if s != -1:
            if s < 0:
                raise RuntimeError(f"invalid shape dimension {s}")
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"{op}: shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


# the view geometry is a pure function of a few small tuples, and a program asks the same
# questions every step (each matmul and linear reshapes): the answers are remembered
_remember = functools.lru_cache(maxsize=4096)


@_remember
def _view_strides(old_shape, old_stride, new_shape):
    """PyTorch's computeStride: strides for ``new_shape`` over the same memory, or None."""
    if not old_shape:
        return tuple(1 for _ in new_shape)
    numel = 1
    for s in old_shape:
        numel *= s
    if numel == 0:
        return contiguous_strides(new_shape)
    new_stride = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = old_stride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(old_shape) - 1, -1, -1):
        tensor_numel *= old_shape[tensor_d]
        if tensor_d == 0 or (old_shape[tensor_d - 1] != 1 and
                             old_stride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_stride[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = old_stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_stride)


def _view(self, shape):
    shape = _infer_size(shape, self.numel(), "view")
    if shape == self._shape:
        return self._view_of(self._shape, self._stride, self._offset)
    stride = _view_strides(self._shape, self._stride, shape)
    if stride is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.")
    return self._view_of(shape, stride, self._offset)


def _view_backward(ctx, g, self, *rest):
    shape = ctx.meta(0)[0]
    # PyTorch's grad.reshape(self.sizes()); a contiguous gradient (the usual one) is a view
    return (view_op(g, shape) if _contiguous(g._shape, g._stride) else reshape(g, shape),)


view_op = define("view(Tensor self, int[] size) -> Tensor", composite=_view,
                 derivative=Derivative(_view_backward, view=True, complex_ok=True))


@view_op.def_onnx
@foldable
def _view_onnx(b, c, x, size, *rest):
    return b.op("Reshape", [x, c.shape_tensor(size)])


def _unsafe_view(self, size):
    stride = _view_strides(self._shape, self._stride, size)
    if stride is None:
        raise RuntimeError(f"_unsafe_view: shape {list(size)} is not a view of a tensor of "
                           f"shape {list(self._shape)} and strides {list(self._stride)}")
    # the result shares the storage but is not recorded as a view: PyTorch uses _unsafe_view
    # on results no one else holds (a product's output, a fresh copy), so in-place ops on it
    # need no view bookkeeping
    return Tensor._make(self._storage, tuple(size), stride, self._offset, self.dtype,
                        self.device)


def _reshape_alias(self, size, stride):
    return self._view_of(tuple(size), tuple(stride), self._offset)


unsafe_view_op = define("_unsafe_view(Tensor self, int[] size) -> Tensor", composite=_unsafe_view,
                        derivative=Derivative(_view_backward, complex_ok=True,
                                              name="UnsafeViewBackward0"))
reshape_alias_op = define("_reshape_alias(Tensor self, int[] size, int[] stride) -> Tensor",
                          composite=_reshape_alias,
                          derivative=Derivative(_view_backward, view=True, complex_ok=True,
                                                name="ReshapeAliasBackward0"))


@unsafe_view_op.def_onnx
@reshape_alias_op.def_onnx
@foldable
def _reshape_onnx(b, c, x, size, *rest):
    return b.op("Reshape", [x, c.shape_tensor(size)])


@tensor_method()
def view(self, *shape):
    if len(shape) == 1 and not isinstance(shape[0], (list, tuple, int)) and \
            not hasattr(shape[0], "__index__"):
        return _view_dtype(self, shape[0])
    return view_op(self, _sizes(shape))


def _view_dtype(self, dtype):
    """``view(dtype)``: the same bytes read as another dtype. With a different itemsize the last
    dimension scales (it must have stride 1), as in PyTorch."""
    dt = _dtype.as_dtype(dtype)
    old, new = self.dtype.itemsize, dt.itemsize
    if old == new:
        return Tensor._make(self._storage, self._shape, self._stride, self._offset, dt,
                            self.device)
    if self.ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 to view {self.dtype} as {dt} (different "
                           f"element sizes)")
    if self._stride[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 to view {self.dtype} as {dt} (different "
                           f"element sizes), but got {self._stride[-1]}")
    shape, stride = list(self._shape), list(self._stride)
    if old > new:
        ratio = old // new
        shape[-1] *= ratio
        stride = [s * ratio for s in stride[:-1]] + [1]
        offset = self._offset * ratio
    else:
        ratio = new // old
        if shape[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view {self.dtype} "
                               f"as {dt} (different element sizes), but got {shape[-1]}")
        if self._offset % ratio:
            raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} to view "
                               f"{self.dtype} as {dt} (different element sizes), but got "
                               f"{self._offset}")
        if any(s % ratio for s in stride[:-1]):
            raise RuntimeError(f"self.stride(i) must be divisible by {ratio} for every i < dim-1 "
                               f"to view {self.dtype} as {dt} (different element sizes), but got "
                               f"{stride}")
        shape[-1] //= ratio
        stride = [s // ratio for s in stride[:-1]] + [1]
        offset = self._offset // ratio
    return Tensor._make(self._storage, tuple(shape), tuple(stride), offset, dt, self.device)


# -- complex-part views ---------------------------------------------------------------------------
def _view_as_real(self):
    if self.dtype.category != _dtype.COMPLEX:
        raise RuntimeError(f"view_as_real is only supported for complex tensors, got a tensor of "
                           f"dtype {self.dtype} and shape {list(self._shape)}")
    t = Tensor._make(self._storage, self._shape + (2,), tuple(s * 2 for s in self._stride) + (1,),
                     self._offset * 2, self.dtype.to_real(), self.device)
    t._view_base = self
    return t


def _view_as_complex(self):
    d = self.dtype
    if d not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, "
                           f"but got a tensor of scalar type: {d} (shape {list(self._shape)})")
    if self.ndim == 0:
        raise RuntimeError("view_as_complex: Input tensor must have one or more dimensions")
    if self._shape[-1] != 2:
        raise RuntimeError(f"view_as_complex: Tensor must have a last dimension of size 2, got "
                           f"shape {list(self._shape)}")
    if self._stride[-1] != 1:
        raise RuntimeError(f"view_as_complex: Tensor must have a last dimension with stride 1, "
                           f"got strides {list(self._stride)}")
    if any(s % 2 for s in self._stride[:-1]):
        raise RuntimeError(f"view_as_complex: Tensor must have a stride divisible by 2 for all "
                           f"but last dimension, got strides {list(self._stride)}")
    if self._offset % 2:
        raise RuntimeError(f"view_as_complex: Tensor must have a storage_offset divisible by 2, "
                           f"got {self._offset}")
    t = Tensor._make(self._storage, self._shape[:-1], tuple(s // 2 for s in self._stride[:-1]),
                     self._offset // 2, d.to_complex(), self.device)
    t._view_base = self
    return t


def _view_as_real_backward(ctx, g, self):
    return (view_as_complex_op(g.contiguous()),)


def _view_as_complex_backward(ctx, g, self):
    return (view_as_real_op(g.contiguous()),)


# dtype-changing views: autograd treats their outputs as new tensors (an in-place op through
# one is not replayed onto the base's history)
view_as_real_op = define("view_as_real(Tensor self) -> Tensor", composite=_view_as_real,
                         derivative=Derivative(_view_as_real_backward, complex_ok=True,
                                               name="ViewAsRealBackward0"))
view_as_complex_op = define("view_as_complex(Tensor self) -> Tensor", composite=_view_as_complex,
                            derivative=Derivative(_view_as_complex_backward, complex_ok=True,
                                                  name="ViewAsComplexBackward0"))


def view_as_real(input):
    """A real view of a complex tensor with a trailing dimension of 2 (real, imaginary)."""
    return view_as_real_op(input)


def view_as_complex(input):
    """A complex view of a float tensor whose last dimension (size 2, stride 1) holds pairs."""
    return view_as_complex_op(input)


def _complex_part(self, part):
    if self.dtype.category != _dtype.COMPLEX:
        if part == 0:
            return self
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    # PyTorch's composite: differentiable through view_as_real and select
    return view_as_real_op(self).select(-1, part)


Tensor.real = property(lambda self: _complex_part(self, 0))
Tensor.imag = property(lambda self: _complex_part(self, 1))


def real(input):
    """The real part of a complex tensor as a view (the tensor itself when it is real)."""
    return _complex_part(input, 0)


def imag(input):
    """The imaginary part of a complex tensor as a view."""
    return _complex_part(input, 1)


def _sizes(shape):
    if len(shape) == 1 and isinstance(shape[0], (list, tuple)):
        shape = shape[0]
    return tuple(int(s) for s in shape)


@tensor_method()
def view_as(self, other):
    return view_op(self, other._shape)


def reshape(input, *shape):
    # PyTorch's reshape: a view of a contiguous tensor, an alias with the computed strides of
    # any other tensor that allows one, else a contiguous copy viewed as the shape
    shape = _infer_size(_sizes(shape), input.numel(), "reshape")
    stride = _view_strides(input._shape, input._stride, shape)
    if stride is None:
        return unsafe_view_op(input.contiguous(), shape)
    if _contiguous(input._shape, input._stride):
        return view_op(input, shape)
    return reshape_alias_op(input, shape, stride)


@_remember
def _contiguous(shape, stride):
    """Tensor.is_contiguous of a geometry."""
    if 0 in shape:
        return True
    expected = 1
    for size, step in zip(reversed(shape), reversed(stride)):
        if size != 1 and step != expected:
            return False
        expected *= size
    return True
_primitives.provide(reshape=reshape)


Tensor.reshape = reshape


@tensor_method()
def reshape_as(self, other):
    return reshape(self, other._shape)


def flatten(input, start_dim=0, end_dim=-1):
    if input.ndim == 0:
        return reshape(input, (1,))
    s = _wrap_dim(start_dim, input.ndim, "flatten")
    e = _wrap_dim(end_dim, input.ndim, "flatten")
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    n = 1
    for d in input._shape[s:e + 1]:
        n *= d
    return reshape(input, input._shape[:s] + (n,) + input._shape[e + 1:])


Tensor.flatten = flatten


def unflatten(input, dim, sizes):
    d = _wrap_dim(dim, input.ndim, "unflatten")
    sizes = tuple(int(s) for s in sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    try:
        sizes = _infer_size(sizes, input._shape[d], "unflatten")
    except RuntimeError:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({input._shape[d]}) in the input tensor") from None
    return view_op(input, input._shape[:d] + sizes + input._shape[d + 1:])


Tensor.unflatten = unflatten


# -- permutations -------------------------------------------------------------------------------
def _permute(self, dims):
    shape, stride = self._shape, self._stride
    return self._view_of(tuple([shape[d] for d in dims]), tuple([stride[d] for d in dims]),
                         self._offset)


def _inverse(dims):
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return tuple(inv)


def _permute_backward(ctx, g, self, dims):
    return (permute_op(g, _inverse(dims)),)


permute_op = define("permute(Tensor self, int[] dims) -> Tensor", composite=_permute,
                    derivative=Derivative(_permute_backward, view=True, complex_ok=True))


@permute_op.def_onnx
@foldable
def _permute_onnx(b, c, x, dims, *rest):
    return b.op("Transpose", [x], perm=list(dims))


def permute(input, *dims):
    dims = _sizes(dims)
    n = input.ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(): number of dimensions in the tensor input does not match "
                           f"the length of the desired ordering of dimensions i.e. input.dim() = "
                           f"{n} is not equal to len(dims) = {len(dims)}")
    dims = tuple(_wrap_dim(d, n, "permute") for d in dims)
    if len(set(dims)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return permute_op(input, dims)


Tensor.permute = permute


def _transpose(self, dim0, dim1):
    if dim0 == dim1:   # a 0-d tensor's transpose(0, -1) among them
        return self._view_of(self._shape, self._stride, self._offset)
    shape, stride = list(self._shape), list(self._stride)
    shape[dim0], shape[dim1] = shape[dim1], shape[dim0]
    stride[dim0], stride[dim1] = stride[dim1], stride[dim0]
    return self._view_of(tuple(shape), tuple(stride), self._offset)


def _transpose_backward(ctx, g, self, dim0, dim1):
    return (transpose_op(g, dim0, dim1),)


def _t(self):
    if len(self._shape) < 2:
        return self._view_of(self._shape, self._stride, self._offset)
    return self._view_of(self._shape[::-1], self._stride[::-1], self._offset)


def _t_backward(ctx, g, self):
    return (t_op(g),)


# PyTorch records t() and transpose() as their own nodes (TBackward0, TransposeBackward0),
# not as permute; the dims come wrapped, as permute's do
transpose_op = define("transpose(Tensor self, int dim0, int dim1) -> Tensor", composite=_transpose,
                      derivative=Derivative(_transpose_backward, view=True, complex_ok=True))
t_op = define("t(Tensor self) -> Tensor", composite=_t,
              derivative=Derivative(_t_backward, view=True, complex_ok=True))


@transpose_op.def_onnx
@foldable
def _transpose_onnx(b, c, x, dim0, dim1, *rest):
    perm = list(range(len(c.out_shape)))
    perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
    return b.op("Transpose", [x], perm=perm)


@t_op.def_onnx
@foldable
def _t_onnx(b, c, x, *rest):
    return b.op("Transpose", [x], perm=list(range(len(c.out_shape)))[::-1])


def transpose(input, dim0, dim1):
    n = len(input._shape)
    if n == 2 and dim0.__class__ is int and dim1.__class__ is int and \
            -2 <= dim0 < 2 and -2 <= dim1 < 2 and dim0 % 2 != dim1 % 2:
        return transpose_op(input, 0, 1)   # a matrix's transpose: the common case
    if n == 0:
        _wrap_dim(dim0, 0, "transpose"), _wrap_dim(dim1, 0, "transpose")
        return transpose_op(input, 0, 0)
    return transpose_op(input, _wrap_dim(dim0, n, "transpose"), _wrap_dim(dim1, n, "transpose"))


Tensor.transpose = transpose
swapaxes = swapdims = transpose
Tensor.swapaxes = Tensor.swapdims = transpose


def t(input):
    if len(input._shape) > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return t_op(input)


Tensor.t = t
Tensor.T = property(lambda self: permute_op(self, tuple(range(self.ndim - 1, -1, -1))))


def _mT(self):
    n = len(self._shape)
    if n < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                           f"{n}-D tensor.")
    return transpose_op(self, n - 2, n - 1)


def _mH(self):
    if len(self._shape) < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got "
                           f"{self.ndim}-D tensor.")
    return adjoint(self)


def _H(self):
    n = len(self._shape)
    if n == 2:
        return adjoint(self)
    if n == 0:
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().",
                      stacklevel=user_stacklevel())
        return self.conj()
    raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {n}-D tensor."
                       + (" For batches of matrices, consider using tensor.mH" if n > 2 else ""))


Tensor.mT = property(_mT)
Tensor.H = property(_H)
Tensor.mH = property(_mH)


def movedim(input, source, destination):
    n = input.ndim
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({src} dims) "
                           f"should contain the same number of dims as destination ({dst} dims)")
    src = [_wrap_dim(d, n, "movedim") for d in src]
    dst = [_wrap_dim(d, n, "movedim") for d in dst]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({src})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({dst})")
    order = [d for d in range(n) if d not in src]
    result = [None] * n
    for s, d in zip(src, dst):
        result[d] = s
    it = iter(order)
    result = [r if r is not None else next(it) for r in result]
    return permute_op(input, tuple(result))


Tensor.movedim = movedim
moveaxis = movedim
Tensor.moveaxis = movedim


# -- expand -----------------------------------------------------------------------------------
def _expand(self, size):
    shape, stride = _expanded_geometry(self._shape, self._stride, tuple(size))
    return self._view_of(shape, stride, self._offset)


@_remember
def _expanded_geometry(old_shape, old_stride, size):
    n_new, n_old = len(size), len(old_shape)
    if n_new < n_old:
        raise RuntimeError(f"expand: the number of sizes provided ({n_new}) must be greater or "
                           f"equal to the number of dimensions in the tensor ({n_old})")
    shape, stride = [], []
    for i, s in enumerate(size):
        j = i - (n_new - n_old)
        if j < 0:
            if s < 0:
                raise RuntimeError(f"expand: the expanded size of the tensor ({s}) isn't allowed "
                                   f"in a leading, non-existing dimension {i}")
            shape.append(s)
            stride.append(0)
            continue
        old = old_shape[j]
        if s == -1:
            s = old
        if old == s:
            shape.append(s)
            stride.append(old_stride[j])
        elif old == 1:
            shape.append(s)
            stride.append(0)
        else:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                               f"size ({old}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(size)}.  Tensor sizes: {list(old_shape)}")
    return tuple(shape), tuple(stride)


def _expand_backward(ctx, g, self, size):
    return (_grad.sum_to(g, ctx.meta(0)[0]),)


expand_op = define("expand(Tensor self, int[] size) -> Tensor", composite=_expand,
                   derivative=Derivative(_expand_backward, view=True, complex_ok=True))
_primitives.provide(view_op=view_op, expand_op=expand_op)


@expand_op.def_onnx
@foldable
def _expand_onnx(b, c, x, size, *rest):
    if any(c.is_symbolic(s) for s in size):
        return b.op("Expand", [x, c.shape_tensor([1 if s == -1 else s for s in size])])
    shape = [1 if (s == -1 or s in c.dyn_sizes) else s for s in size]
    return b.op("Expand", [x, b.ints(shape)])


@tensor_method()
def expand(self, *sizes, implicit=False):
    # implicit marks expansions torch's tracer inserted; it changes nothing here
    return expand_op(self, _sizes(sizes))


@tensor_method()
def expand_as(self, other):
    return expand_op(self, other._shape)


def broadcast_to(input, shape):
    try:
        return expand_op(input, tuple(shape))
    except RuntimeError as e:
        raise RuntimeError(f"broadcast_to: {e}") from None


Tensor.broadcast_to = broadcast_to


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    shape = broadcast_shapes(*(t._shape for t in tensors))
    return [expand_op(t, shape) for t in tensors]




# -- ember.func: the batch stays in front of each view; views are linear (the tangent's view) ---
view_op.def_batch_rule(_batching.view_rule(view_op))
unsafe_view_op.def_batch_rule(_batching.view_rule(unsafe_view_op))
_view_batch_rule = _batching.view_rule(view_op)


def _reshape_alias_batch_rule(args, bdims, layer):
    # the strides are one example's: the batched tensor is reshaped as a view would be
    return _view_batch_rule(args[:2], bdims[:2], layer)


_reshape_alias_batch_rule.family = "view"
reshape_alias_op.def_batch_rule(_reshape_alias_batch_rule)


def _dtype_view_batch_rule(op):
    """view_as_real / view_as_complex act on the last dim only: the physical tensor (batch in
    dim 0) is reinterpreted as it is, its trailing layout being each example's."""
    def rule(args, bdims, layer):
        return op(args[0]), bdims[0]
    return rule


view_as_real_op.def_batch_rule(_dtype_view_batch_rule(view_as_real_op))
view_as_complex_op.def_batch_rule(_dtype_view_batch_rule(view_as_complex_op))
view_as_real_op.def_jvp(_tangents.linear(view_as_real_op))
view_as_complex_op.def_jvp(_tangents.linear(view_as_complex_op))
permute_op.def_batch_rule(_batching.permute_rule(permute_op))
transpose_op.def_batch_rule(_batching.shift_dims(transpose_op, 1, 2))
expand_op.def_batch_rule(_batching.expand_rule(expand_op))


def _t_batch_rule(args, bdims, layer):
    x = args[0]
    if bdims[0] is None:
        return t_op(x), None
    # an example's matrix is dims 1 and 2 of the physical tensor; t() of a vector is itself
    return (transpose_op(x, 1, 2) if x.ndim == 3 else permute_op(x, tuple(range(x.ndim)))), 0


_t_batch_rule.family = "view"
t_op.def_batch_rule(_t_batch_rule)
for _op in (view_op, unsafe_view_op, reshape_alias_op, permute_op, transpose_op, t_op,
            expand_op):
    _op.def_jvp(_tangents.linear(_op))


@tensor_method()
def adjoint(input):
    """The conjugate transpose of the last two dims, as a view."""
    require_tensor(input, "adjoint")
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           "matrices. Got 1-D tensor." if input.ndim == 1 else
                           "tensor.adjoint() is only supported on matrices or batches of "
                           "matrices. Got 0-D tensor.")
    t = input.transpose(-2, -1)
    return t.conj() if input.is_complex() else t
