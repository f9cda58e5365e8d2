"""Structural functions of torch's surface as compositions of ember ops (issue #25): diagonal
and block construction (``diag_embed``, ``diagflat``, ``block_diag``), index products
(``cartesian_prod``, ``combinations``, ``meshgrid``), gathers and fills (``take_along_dim``,
``index_fill``, ``masked_scatter``, ``put``), membership (``isin``) and sorted search
(``searchsorted``, ``bucketize``), counting (``bincount``, ``histc``), and the Vandermonde
matrix (``vander``, issue #30)."""
from __future__ import annotations

import itertools
import warnings

from .. import _dtype
from .._tensor import Size, Tensor
from .indexing import advanced as _advanced
from .view_copies import diagonal_scatter
from ._util import ember_namespace as _ember
from .._warn import user_stacklevel

__all__ = ["broadcast_shapes", "diag_embed", "diagflat", "block_diag", "cartesian_prod", "combinations",
           "meshgrid", "take_along_dim", "index_fill", "masked_scatter", "put", "isin",
           "searchsorted", "bucketize", "bincount", "histc", "vander"]


def _tensor(x, fn, name="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' must be Tensor, not {type(x).__name__}")


def vander(x, N=None, increasing=False):
    """The columns ``x**(N-1), …, x**0`` (``increasing``: the other way round) of a 1-D ``x``, as
    running products, so the gradient flows through every power; integers widen to int64."""
    _tensor(x, "vander", "x")
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    em = _ember()
    if x.dtype.category < _dtype.FLOATING:
        x = x.to(_dtype.int64)
    if n == 0:
        return em.empty((x.shape[0], 0), dtype=x.dtype, device=x.device)
    ones = em.ones((x.shape[0], 1), dtype=x.dtype, device=x.device)
    powers = em.cat([ones, x.unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1)], 1)
    return powers if increasing else powers.flip(1)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (without making tensors)."""
    out = []
    for shape in shapes:
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if any(not isinstance(d, int) or d < 0 for d in shape):
            raise RuntimeError(f"Trying to create tensor with negative dimension: {shape}")
        if len(shape) > len(out):
            out = [1] * (len(shape) - len(out)) + out
        for k, d in enumerate(shape):
            k += len(out) - len(shape)
            if out[k] == 1:
                out[k] = d
            elif d != 1 and d != out[k]:
                raise RuntimeError(f"Shape mismatch: objects cannot be broadcast to a single "
                                   f"shape.  Mismatch is at dim {k} with sizes {out[k]} and "
                                   f"{d}")
    return Size(out)


# -- diagonals and blocks -----------------------------------------------------------------------
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose ``diagonal(offset, dim1, dim2)`` is ``input``'s last dim, 0 elsewhere."""
    _tensor(input, "diag_embed")
    em = _ember()
    nd = input.ndim + 1
    d1, d2 = dim1 % nd, dim2 % nd
    if not (-nd <= dim1 < nd and -nd <= dim2 < nd):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, "
                         f"{nd - 1}], but got {dim1 if not -nd <= dim1 < nd else dim2})")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = input.shape[-1] + abs(offset)
    rest = list(input.shape[:-1])
    shape = []
    for k in range(nd):
        shape.append(n if k in (d1, d2) else rest.pop(0))
    zeros = em.zeros(shape, dtype=input.dtype, device=input.device)
    return diagonal_scatter(zeros, input, offset, d1, d2)


def diagflat(input, offset=0):
    """The flattened input on the ``offset`` diagonal of a square matrix."""
    _tensor(input, "diagflat")
    return diag_embed(input.reshape(-1), offset, 0, 1)


def block_diag(*tensors):
    """The tensors (0-, 1- or 2-D) as the blocks of a block-diagonal matrix."""
    em = _ember()
    if not tensors:
        return em.empty(1, 0)
    mats = []
    for i, t in enumerate(tensors):
        _tensor(t, "block_diag", f"tensors[{i}]")
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        mats.append(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t)
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = _dtype.promote_types(dt, m.dtype)
    device = mats[0].device
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        parts = [em.zeros(r, left, dtype=dt, device=device), m.to(dt),
                 em.zeros(r, width - left - c, dtype=dt, device=device)]
        rows.append(em.cat(parts, 1))
        left += c
    return em.cat(rows, 0)


# -- index products -----------------------------------------------------------------------------
def meshgrid(*tensors, indexing=None):
    """Coordinate grids of 0- or 1-D tensors ("ij": the first varies along dim 0; "xy":
    the first two swapped), as expanded views."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=user_stacklevel())
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if not tensors:
        raise RuntimeError("torch.meshgrid expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        _tensor(t, "meshgrid", f"tensors[{i}]")
        if t.ndim > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t.ndim}D")
        if t.dtype is not tensors[0].dtype or t.device != tensors[0].device:
            raise RuntimeError("torch.meshgrid: Expected all tensors in the tensor list to have "
                               "the same dtype and device")
    flat = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = [t.shape[0] for t in flat]
    grids = []
    for k, t in enumerate(flat):
        view = [1] * len(flat)
        view[k] = -1
        grids.append(t.reshape(view).expand(*shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    """Every combination of the 1-D tensors' elements, one per row."""
    em = _ember()
    for i, t in enumerate(tensors):
        _tensor(t, "cartesian_prod", f"tensors[{i}]")
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return em.stack([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of a 1-D tensor's elements, one per row (the order of
    ``itertools.combinations``)."""
    _tensor(input, "combinations")
    em = _ember()
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return em.empty(0, dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    index = em.tensor(rows, dtype=_dtype.int64, device=input.device).reshape(-1)
    # (no rows still selects: the empty result is part of input's graph, as PyTorch's stack)
    return input.index_select(0, index).reshape(len(rows), r)


# -- gathers and fills --------------------------------------------------------------------------
def take_along_dim(input, indices, dim=None):
    """``gather`` with broadcasting (the flattened input when ``dim`` is None)."""
    _tensor(input, "take_along_dim")
    _tensor(indices, "take_along_dim", "indices")
    em = _ember()
    if indices.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be int64 but got "
                           f"{indices.dtype} instead")
    if dim is None:
        flat = input.reshape(-1)
        return flat.gather(0, _wrapped(indices.reshape(-1), flat.shape[0]))
    if input.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {input.ndim} dimensions for input, "
                           f"and {indices.ndim} dimensions for indices")
    dim = dim % max(input.ndim, 1)
    shape_i = list(input.shape)
    shape_x = list(indices.shape)
    shape_i[dim] = shape_x[dim] = 1
    b = list(broadcast_shapes(tuple(shape_i), tuple(shape_x)))
    bi, bx = list(b), list(b)
    bi[dim], bx[dim] = input.shape[dim], indices.shape[dim]
    return input.expand(*bi).gather(dim, _wrapped(indices.expand(*bx), input.shape[dim]))


def _wrapped(indices, size):
    """int64 indices with negative ones counted from the end, as take_along_dim allows."""
    idx = indices.to(_dtype.int64)
    return _ember().where(idx.lt(0), idx + size, idx)


def _dim_mask(input, dim, index, fn):
    em = _ember()
    if index.ndim > 1:
        raise IndexError(f"{fn}(): Index is supposed to be a vector")
    if index.dtype is not _dtype.int64:
        raise IndexError(f"{fn}(): Expected dtype int64 for index")
    dim = dim % max(input.ndim, 1)
    size = input.shape[dim] if input.ndim else 1
    idx = index.reshape(-1)
    idx = em.where(idx.lt(0), idx + size, idx)
    hit = em.arange(size, device=input.device).reshape(-1, 1).eq(idx.reshape(1, -1)).any(1)
    shape = [1] * input.ndim
    if input.ndim:
        shape[dim] = size
    return hit.reshape(shape)


def index_fill(input, dim, index, value):
    """``input`` with the entries at ``index`` along ``dim`` set to ``value``."""
    _tensor(input, "index_fill")
    em = _ember()
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but "
                               f"got tensor with {value.ndim} dimension(s).")
        value = value.to(input.dtype)
    else:
        value = em.tensor(value, dtype=input.dtype, device=input.device)
    return em.where(_dim_mask(input, dim, index, "index_fill"), value, input)


def masked_scatter(input, mask, source):
    """``input`` with the positions where ``mask`` is True filled by ``source``'s elements in
    order."""
    _tensor(input, "masked_scatter")
    em = _ember()
    if mask.dtype is not _dtype.bool_:
        raise RuntimeError(f"masked_scatter_only supports boolean masks, but got mask with "
                           f"dtype {mask.dtype}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got {input.dtype} and {source.dtype}")
    shape = broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    m = mask.expand(*shape).reshape(-1)
    base = input.expand(*shape)
    if source.numel() == 0:
        return em.where(m.reshape(shape), base, base)
    pos = m.to(_dtype.int64).cumsum(0) - 1
    pos = pos.clamp(0, source.numel() - 1)
    taken = source.reshape(-1).index_select(0, pos).reshape(shape)
    return em.where(m.reshape(shape), taken, base)


def put(input, index, source, accumulate=False):
    """``input`` (flattened) with ``source`` put (or added) at ``index``."""
    return _advanced.put(input, index, source, accumulate)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of ``elements`` occurs in ``test_elements``."""
    em = _ember()
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments: expected at "
                        "least one Tensor")
    if not isinstance(elements, Tensor):
        elements = em.tensor(elements, device=test_elements.device)
    if not isinstance(test_elements, Tensor):
        test_elements = em.tensor(test_elements, device=elements.device)
    hit = elements.unsqueeze(-1).eq(test_elements.reshape(-1)).any(-1) \
        if test_elements.numel() else em.zeros(elements.shape, dtype=_dtype.bool_,
                                                device=elements.device)
    return hit.logical_not() if invert else hit


# -- sorted search and counting -----------------------------------------------------------------
def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """For each value, the index where inserting it keeps the innermost rows of
    ``sorted_sequence`` sorted (the first such index, or the last with ``right``)."""
    em = _ember()
    _tensor(sorted_sequence, "searchsorted", "sorted_sequence")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    values = em.tensor(input, dtype=sorted_sequence.dtype, device=sorted_sequence.device) \
        if scalar else input
    seq = sorted_sequence
    if sorter is not None:
        if tuple(sorter.shape) != tuple(seq.shape):
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq.shape)}and got sorter "
                               f"tensor {list(sorter.shape)}")
        seq = seq.gather(-1, sorter)
    if seq.ndim > 1 and (values.ndim != seq.ndim or
                         tuple(values.shape[:-1]) != tuple(seq.shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor "
                           f"{list(seq.shape)} and input value tensor {list(values.shape)}")
    dt = em.result_type(seq, values)
    seq, values = seq.to(dt), values.to(dt)
    v = values.unsqueeze(-1)
    s = seq.unsqueeze(-2) if seq.ndim > 1 else seq
    before = s.le(v) if right else s.lt(v)
    out_dtype = _dtype.int32 if out_int32 else _dtype.int64
    result = before.to(_dtype.int64).sum(-1).to(out_dtype)
    if out is not None:
        return out.copy_(result)
    return result


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The bucket of each value among 1-D ``boundaries`` (``right``: buckets closed on the
    left)."""
    _tensor(boundaries, "bucketize", "boundaries")
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right, out=out)


def bincount(input, weights=None, minlength=0):
    """Occurrences of each value of a 1-D non-negative integer tensor (summed ``weights``);
    like PyTorch's, the length reads the maximum value."""
    _tensor(input, "bincount")
    em = _ember()
    if input.ndim != 1:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs.")
    if input.is_floating_point() or input.is_complex() or input.dtype is _dtype.bool_:
        raise RuntimeError(f"\"bincount_cpu\" not implemented for "
                           f"'{ {'float32': 'Float', 'float64': 'Double'}.get(input.dtype.name, input.dtype.name)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if input.numel():
        lo, hi = int(input.min().item()), int(input.max().item())
        if lo < 0:
            raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
        length = max(hi + 1, minlength)
    else:
        length = minlength
    idx = input.to(_dtype.int64)
    if weights is None:
        out = em.zeros(length, dtype=_dtype.int64, device=input.device)
        return out.scatter_add(0, idx, em.ones(idx.shape, dtype=_dtype.int64,
                                               device=input.device))
    wdt = weights.dtype if weights.dtype in (_dtype.float32, _dtype.float64) else _dtype.float64
    out = em.zeros(length, dtype=wdt, device=input.device)
    return out.scatter_add(0, idx, weights.to(wdt))


def histc(input, bins=100, min=0, max=0, *, out=None):
    """Counts of the elements in ``bins`` equal-width bins over [min, max] (the data's range
    when both are 0); elements outside are ignored."""
    _tensor(input, "histc")
    em = _ember()
    if not input.is_floating_point():
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{input.dtype}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc: bins must be > 0, but got {bins} for bins")
    lo, hi = float(min), float(max)
    if lo == hi and input.numel():
        lo, hi = float(input.min().item()), float(input.max().item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError(f"torch.histc: max must be larger than min, but got min {lo} and "
                           f"max {hi}")
    x = input.detach().reshape(-1)
    inside = x.ge(lo) & x.le(hi)
    pos = ((x - lo) * (bins / (hi - lo))).floor().clamp(0, bins - 1).to(_dtype.int64)
    counts = em.zeros(bins, dtype=input.dtype, device=input.device)
    result = counts.scatter_add(0, pos, inside.to(input.dtype))
    return out.copy_(result) if out is not None else result


def _inplace(fn):
    def method(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))
    method.__name__ = fn.__name__ + "_"
    return method


for _name in ("diag_embed", "diagflat", "take_along_dim", "index_fill", "masked_scatter",
              "put", "bincount", "histc"):
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, globals()[_name])
for _name in ("index_fill", "masked_scatter", "put"):
    if not hasattr(Tensor, _name + "_"):
        setattr(Tensor, _name + "_", _inplace(globals()[_name]))
del _name
