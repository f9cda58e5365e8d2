"""View ops: computed from metadata alone, so every backend shares them (no kernel needed).

Each is an ``Op`` whose composite builds the view; a backend may still register a kernel (the
meta device, a backend with non-strided memory). Writing through a view changes the base because
both hold the same Storage.
"""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor, _wrap_dim
from ..dispatch.dispatcher import define
from ._util import as_shape, contiguous_strides, tensor_method


# -- the primitive ------------------------------------------------------------------------------
def _as_strided(self, size, stride, storage_offset):
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided: mismatch in length of strides and shape ({len(size)} vs "
                           f"{len(stride)})")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: negative strides are not supported, got {list(stride)}")
    if any(n == 0 for n in size):
        needed = 0
    else:
        needed = (storage_offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1) * \
            self.dtype.itemsize
    if needed > self._storage.nbytes:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                           f"offset {storage_offset}, and itemsize {self.dtype.itemsize} requiring "
                           f"a storage size of {needed} are out of bounds for storage of size "
                           f"{self._storage.nbytes}")
    return self._view_of(size, stride, storage_offset)


as_strided_op = define("as_strided(Tensor self, int[] size, int[] stride, int storage_offset) -> "
                       "Tensor", composite=_as_strided)


@tensor_method()
def as_strided(self, size, stride, storage_offset=None):
    return as_strided_op(self, tuple(size), tuple(stride),
                         self._offset if storage_offset is None else storage_offset)


# -- view / reshape -----------------------------------------------------------------------------
def _infer_size(shape, numel, op):
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
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


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


view_op = define("view(Tensor self, int[] size) -> Tensor", composite=_view)


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


def _complex_part(self, part):
    if self.dtype.category != _dtype.COMPLEX:
        if part == 0:
            return self
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return Tensor._make(self._storage, self._shape, tuple(s * 2 for s in self._stride),
                        self._offset * 2 + part, self.dtype.to_real(), self.device)


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
    shape = _infer_size(_sizes(shape), input.numel(), "reshape")
    if _view_strides(input._shape, input._stride, shape) is not None:
        return view_op(input, shape)
    return view_op(input.contiguous(), shape)


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
    return self._view_of(tuple(self._shape[d] for d in dims),
                         tuple(self._stride[d] for d in dims), self._offset)


permute_op = define("permute(Tensor self, int[] dims) -> Tensor", composite=_permute)


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


def transpose(input, dim0, dim1):
    n = input.ndim
    if n == 0:
        _wrap_dim(dim0, 0, "transpose"), _wrap_dim(dim1, 0, "transpose")
        return permute_op(input, ())
    a, b = _wrap_dim(dim0, n, "transpose"), _wrap_dim(dim1, n, "transpose")
    dims = list(range(n))
    dims[a], dims[b] = dims[b], dims[a]
    return permute_op(input, tuple(dims))


Tensor.transpose = transpose
swapaxes = swapdims = transpose
Tensor.swapaxes = Tensor.swapdims = transpose


def t(input):
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    if input.ndim == 2:
        return transpose(input, 0, 1)
    return permute_op(input, tuple(range(input.ndim)))


Tensor.t = t
Tensor.T = property(lambda self: permute_op(self, tuple(range(self.ndim - 1, -1, -1))))


def _mT(self):
    if self.ndim < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got "
                           f"{self.ndim}-D tensor.")
    return transpose(self, -2, -1)


Tensor.mT = property(_mT)
Tensor.H = property(lambda self: Tensor.T.fget(self).conj())
Tensor.mH = property(lambda self: _mT(self).conj())


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


# -- expand / squeeze ---------------------------------------------------------------------------
def _expand(self, size):
    n_new, n_old = len(size), self.ndim
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
        old = self._shape[j]
        if s == -1:
            s = old
        if old == s:
            shape.append(s)
            stride.append(self._stride[j])
        elif old == 1:
            shape.append(s)
            stride.append(0)
        else:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                               f"size ({old}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(size)}.  Tensor sizes: {list(self._shape)}")
    return self._view_of(tuple(shape), tuple(stride), self._offset)


expand_op = define("expand(Tensor self, int[] size) -> Tensor", composite=_expand)


@tensor_method()
def expand(self, *sizes):
    return expand_op(self, _sizes(sizes))


@tensor_method()
def expand_as(self, other):
    return expand_op(self, other._shape)


def broadcast_to(input, shape):
    return expand_op(input, tuple(shape))


Tensor.broadcast_to = broadcast_to


def broadcast_tensors(*tensors):
    from ._util import broadcast_shapes
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    shape = broadcast_shapes(*(t._shape for t in tensors))
    return [expand_op(t, shape) for t in tensors]


def squeeze(input, dim=None):
    n = input.ndim
    if dim is None:
        dims = [i for i, s in enumerate(input._shape) if s == 1]
    else:
        ds = dim if isinstance(dim, (list, tuple)) else (dim,)
        wrapped = [_wrap_dim(d, n, "squeeze") for d in ds]
        if len(set(wrapped)) != len(wrapped):
            repeated = next(d for i, d in enumerate(wrapped) if d in wrapped[:i])
            raise RuntimeError(f"dim {repeated} appears multiple times in the list of dims")
        dims = [d for d in wrapped if n and input._shape[d] == 1]
    keep = [i for i in range(n) if i not in dims]
    return as_strided_op(input, tuple(input._shape[i] for i in keep),
                         tuple(input._stride[i] for i in keep), input._offset)


Tensor.squeeze = squeeze


def unsqueeze(input, dim):
    n = input.ndim
    d = _wrap_dim(dim, n + 1, "unsqueeze")
    shape, stride = list(input._shape), list(input._stride)
    new_stride = shape[d] * stride[d] if d < n else 1
    shape.insert(d, 1)
    stride.insert(d, new_stride)
    return as_strided_op(input, tuple(shape), tuple(stride), input._offset)


Tensor.unsqueeze = unsqueeze


# -- slicing ------------------------------------------------------------------------------------
def _slice_view(self, dim, start, end, step):
    size = self._shape[dim]
    if step <= 0:
        raise ValueError("step must be greater than zero")
    start = 0 if start is None else start
    end = size if end is None else end
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    length = (end - start + step - 1) // step
    shape = list(self._shape)
    stride = list(self._stride)
    shape[dim] = length
    offset = self._offset + start * stride[dim]
    stride[dim] *= step
    return self._view_of(tuple(shape), tuple(stride), offset)


slice_op = define("slice(Tensor self, int dim, int? start, int? end, int step) -> Tensor",
                  composite=_slice_view)


def _select(self, dim, index):
    size = self._shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(self._shape)} at dimension {dim}")
    if index < 0:
        index += size
    return self._view_of(self._shape[:dim] + self._shape[dim + 1:],
                         self._stride[:dim] + self._stride[dim + 1:],
                         self._offset + index * self._stride[dim])


select_op = define("select(Tensor self, int dim, int index) -> Tensor", composite=_select)


def select(input, dim, index):
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    return select_op(input, _wrap_dim(dim, input.ndim, "select"), int(index))


Tensor.select = select


def narrow(input, dim, start, length):
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, input.ndim, "narrow")
    size = input._shape[d]
    start, length = int(start), int(length)
    if not -size <= start <= size:
        raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but "
                         f"got {start})")
    if start < 0:
        start += size
    if not 0 <= start <= size or length < 0 or start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return slice_op(input, d, start, start + length, 1)


Tensor.narrow = narrow


def _unfold(self, dim, size, step):
    n = self._shape[dim] if self.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {dim} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    count = (n - size) // step + 1
    if self.ndim == 0:
        return self._view_of((size,), (1,), self._offset)
    shape = self._shape[:dim] + (count,) + self._shape[dim + 1:] + (size,)
    stride = self._stride[:dim] + (self._stride[dim] * step,) + self._stride[dim + 1:] + \
        (self._stride[dim],)
    return self._view_of(shape, stride, self._offset)


unfold_op = define("unfold(Tensor self, int dimension, int size, int step) -> Tensor",
                   composite=_unfold)


@tensor_method()
def unfold(self, dimension, size, step):
    d = _wrap_dim(dimension, self.ndim, "unfold") if self.ndim else 0
    return unfold_op(self, d, int(size), int(step))


def _diagonal(self, offset, dim1, dim2):
    s1, s2 = self._shape[dim1], self._shape[dim2]
    if offset >= 0:
        length = max(min(s1, s2 - offset), 0)
        start = self._offset + offset * self._stride[dim2] if length else self._offset
    else:
        length = max(min(s1 + offset, s2), 0)
        start = self._offset - offset * self._stride[dim1] if length else self._offset
    keep = [i for i in range(self.ndim) if i not in (dim1, dim2)]
    shape = tuple(self._shape[i] for i in keep) + (length,)
    stride = tuple(self._stride[i] for i in keep) + (self._stride[dim1] + self._stride[dim2],)
    return self._view_of(shape, stride, start)


diagonal_op = define("diagonal(Tensor self, int offset, int dim1, int dim2) -> Tensor",
                     composite=_diagonal)


def diagonal(input, offset=0, dim1=0, dim2=1):
    n = input.ndim
    if n < 2:
        raise RuntimeError(f"diagonal dimensions requires ndim larger than 1, got {n}")
    a, b = _wrap_dim(dim1, n, "diagonal"), _wrap_dim(dim2, n, "diagonal")
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return diagonal_op(input, int(offset), a, b)


Tensor.diagonal = diagonal


# -- split family (lists of views) --------------------------------------------------------------
def split(tensor, split_size_or_sections, dim=0):
    d = _wrap_dim(dim, tensor.ndim, "split")
    size = tensor._shape[d]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got "
                               f"split_size={step}")
        if step == 0 and size != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                               f"dimension size of {size}")
        if size == 0:
            return [slice_op(tensor, d, 0, 0, 1)]
        return [slice_op(tensor, d, s, min(s + step, size), 1) for s in range(0, size, step)]
    sections = [int(s) for s in split_size_or_sections]
    if any(s < 0 for s in sections):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, "
                           f"but got split_sizes={sections}")
    if sum(sections) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input "
                           f"tensor's size at dimension {d}), but got split_sizes={sections}")
    out, start = [], 0
    for s in sections:
        out.append(slice_op(tensor, d, start, start + s, 1))
        start += s
    return out


Tensor.split = split


def chunk(input, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = _wrap_dim(dim, input.ndim, "chunk")
    size = input._shape[d]
    if size == 0:  # PyTorch: `chunks` empty pieces
        return [slice_op(input, d, 0, 0, 1) for _ in range(chunks)]
    return split(input, -(-size // chunks), d)


Tensor.chunk = chunk


def tensor_split(input, indices_or_sections, dim=0):
    d = _wrap_dim(dim, input.ndim, "tensor_split")
    size = input._shape[d]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.ndim > 1 or indices_or_sections.dtype.category != _dtype.INTEGRAL:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-"
                               "dimensional or one-dimensional tensor of integers, but got a "
                               f"tensor with {indices_or_sections.ndim} dims and dtype "
                               f"{indices_or_sections.dtype}")
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        bounds = [0]
        for i in range(n):
            bounds.append(bounds[-1] + q + (1 if i < r else 0))
    else:
        # each index is a slice bound: negative ones count from the end
        bounds = [0] + [min(max(int(i) + size if int(i) < 0 else int(i), 0), size)
                        for i in indices_or_sections] + [size]
    return [slice_op(input, d, bounds[i], max(bounds[i + 1], bounds[i]), 1)
            for i in range(len(bounds) - 1)]


Tensor.tensor_split = tensor_split


def unbind(input, dim=0):
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = _wrap_dim(dim, input.ndim, "unbind")
    return tuple(select_op(input, d, i) for i in range(input._shape[d]))


Tensor.unbind = unbind


def _resize_empty_(t, shape):
    """Give an empty tensor a fresh storage of ``shape`` (used by ``out=``)."""
    fresh = t._backend().empty(tuple(shape), t.dtype, t.device)
    t._storage, t._shape, t._stride, t._offset = (fresh._storage, fresh._shape, fresh._stride,
                                                  fresh._offset)
    t._native = None
