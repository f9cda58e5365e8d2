"""PyTorch's ``*_copy`` functions (the view ops returning new memory), the split variants,
the ``*_scatter`` functions that write a view's values into a copy, and small predicates
(``is_same_size``, ``is_nonzero``, ``is_signed``, ``isreal``...): compositions of ember's view
and copy ops, so every backend runs them and autograd sees through them (issue #25)."""
from __future__ import annotations

from .. import _dtype
from .._tensor import Tensor
from . import elementwise as _ew, factories as _fac
from .._memory_format import contiguous_format
from ._util import require_tensor
from .views import view_as_complex, view_as_real
from .views.slicing import split_with_sizes

__all__ = ["alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy",
           "permute_copy", "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy",
           "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy",
           "unsqueeze_copy", "view_copy", "narrow_copy", "split_with_sizes", "unsafe_split",
           "unsafe_split_with_sizes", "unsafe_chunk", "ravel", "hsplit", "vsplit", "dsplit",
           "select_scatter", "slice_scatter", "diagonal_scatter", "is_same_size", "is_nonzero",
           "is_signed", "isreal", "get_device", "view_as_real_copy", "view_as_complex_copy"]


def _fresh(view):
    """A copy of ``view`` in new (contiguous) memory."""
    return view.clone(memory_format=contiguous_format)


def alias_copy(input):
    require_tensor(input, "alias_copy")
    return input.clone()


def as_strided_copy(input, size, stride, storage_offset=None):
    return _fresh(input.as_strided(size, stride, storage_offset))


def detach_copy(input):
    require_tensor(input, "detach_copy")
    return input.detach().clone()


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    return _fresh(input.diagonal(offset, dim1, dim2))


def expand_copy(input, size, *, implicit=False):
    return _fresh(input.expand(*size))


def permute_copy(input, dims):
    return _fresh(input.permute(*dims))


def view_as_real_copy(input, *, out=None):
    result = _fresh(view_as_real(input))
    return result if out is None else out.copy_(result)


def view_as_complex_copy(input, *, out=None):
    result = _fresh(view_as_complex(input))
    return result if out is None else out.copy_(result)


def select_copy(input, dim, index):
    return _fresh(input.select(dim, index))


def slice_copy(input, dim=0, start=None, end=None, step=1):
    index = [slice(None)] * input.ndim
    index[dim] = slice(start, end, step)
    return _fresh(input[tuple(index)])


def split_copy(input, split_size, dim=0):
    return [_fresh(p) for p in input.split(split_size, dim)]


def split_with_sizes_copy(input, split_sizes, dim=0):
    return [_fresh(p) for p in split_with_sizes(input, split_sizes, dim)]


# PyTorch's unsafe_* variants differ only in not tracking the outputs as views
def unsafe_split(input, split_size, dim=0):
    return tuple(_fresh(p) for p in input.split(split_size, dim))


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    return tuple(_fresh(p) for p in split_with_sizes(input, split_sizes, dim))


def unsafe_chunk(input, chunks, dim=0):
    return tuple(_fresh(p) for p in input.chunk(chunks, dim))


def squeeze_copy(input, dim=None):
    return _fresh(input.squeeze() if dim is None else input.squeeze(dim))


def t_copy(input):
    return _fresh(input.t())


def transpose_copy(input, dim0, dim1):
    return _fresh(input.transpose(dim0, dim1))


def unbind_copy(input, dim=0):
    return tuple(_fresh(p) for p in input.unbind(dim))


def unfold_copy(input, dimension, size, step):
    return _fresh(input.unfold(dimension, size, step))


def unsqueeze_copy(input, dim):
    return _fresh(input.unsqueeze(dim))


def view_copy(input, *size, dtype=None):
    if dtype is not None or (len(size) == 1 and not isinstance(size[0], (int, tuple, list))):
        return _fresh(input.view(dtype if dtype is not None else size[0]))
    return _fresh(input.view(*size))


def narrow_copy(input, dim, start, length):
    return _fresh(input.narrow(dim, start, length))


def ravel(input):
    require_tensor(input, "ravel")
    return input.contiguous().view(-1)   # PyTorch's definition (and its graph)


def _split_at(input, indices_or_sections, dim, fn, min_dim):
    require_tensor(input, fn)
    if input.ndim < min_dim:
        raise RuntimeError(f"torch.{fn} requires a tensor with at least {min_dim} dimension, "
                           f"but got a tensor with {input.ndim} dimensions!")
    if isinstance(indices_or_sections, int):
        size = input.shape[dim]
        if indices_or_sections <= 0 or size % indices_or_sections:
            raise RuntimeError(f"torch.{fn} attempted to split along dimension {dim}, but the "
                               f"size of the dimension {size} is not divisible by the "
                               f"split_size {indices_or_sections}!")
    return input.tensor_split(indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    return _split_at(input, indices_or_sections, 1 if input.ndim > 1 else 0, "hsplit", 1)


def vsplit(input, indices_or_sections):
    return _split_at(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input, indices_or_sections):
    return _split_at(input, indices_or_sections, 2, "dsplit", 3)


def _scatter_into(input, src, view_of, fn):
    """``input`` with the elements of ``view_of(input)`` replaced by ``src``: the view taken of
    the element positions picks them, and a ``where`` over a gather of ``src`` writes them out of place
    (the index tables are unbatched, so ember.func.vmap batches only the gather and the
    ``where``)."""
    require_tensor(input, fn)
    require_tensor(src, fn, "src")
    positions = view_of(_fac.arange(input.numel(), device=input.device).reshape(input.shape))
    if tuple(positions.shape) != tuple(src.shape):
        raise RuntimeError(f"{fn}: expected src to have a size equal to the slice of self. src "
                           f"size = {list(src.shape)}, slice size = {list(positions.shape)}")
    if src.dtype is not input.dtype:
        raise RuntimeError(f"{fn}: expected src to have the dtype of self ({input.dtype}), "
                           f"got {src.dtype}")
    pos = positions.reshape(-1)
    n = input.numel()
    hit = _fac.zeros(n, dtype=_dtype.bool_, device=input.device)
    hit[pos] = True
    source_of = _fac.zeros(n, dtype=_dtype.int64, device=input.device)
    source_of[pos] = _fac.arange(pos.numel(), device=input.device)
    if src.numel() == 0:
        return input.clone()
    taken = src.reshape(-1).index_select(0, source_of).reshape(input.shape)
    return _ew.where(hit.reshape(input.shape), taken, input)


def select_scatter(input, src, dim, index):
    """A copy of ``input`` whose ``select(dim, index)`` holds ``src``."""
    return _scatter_into(input, src, lambda t: t.select(dim, index), "select_scatter")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of ``input`` whose slice ``start:end:step`` along ``dim`` holds ``src``."""
    def view(t):
        index = [slice(None)] * t.ndim
        index[dim] = slice(start, end, step)
        return t[tuple(index)]
    return _scatter_into(input, src, view, "slice_scatter")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of ``input`` whose ``diagonal(offset, dim1, dim2)`` holds ``src``."""
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2),
                         "diagonal_scatter")


def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def is_nonzero(input):
    require_tensor(input, "is_nonzero")
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def is_signed(input):
    return input.dtype not in (_dtype.bool_, _dtype.uint8) and \
        input.dtype.name not in ("uint16", "uint32", "uint64")


def isreal(input):
    """True where the element is real (its imaginary part is 0); always True off complex."""
    require_tensor(input, "isreal")
    if input.is_complex():
        return input.imag == 0
    return input.new_ones(input.shape, dtype=_dtype.bool_)


def get_device(input):
    """The device index, -1 on the CPU (PyTorch's convention)."""
    return -1 if input.device.type == "cpu" else (input.device.index or 0)


for _name in ("split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk",
              "ravel", "hsplit", "vsplit", "dsplit", "select_scatter", "slice_scatter",
              "diagonal_scatter", "is_same_size", "is_nonzero", "is_signed", "isreal", "get_device", "narrow_copy"):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, globals()[_name])
del _name
