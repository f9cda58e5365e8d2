"""``scatter_reduce`` and ``index_reduce`` (issue #25) as compositions: every source element is
compared with every output position along ``dim`` (a one-hot mask over the index), the masked
values reduced along ``dim``, then combined with the input where anything arrived. Memory is
index elements x output positions, which suits the sizes graph and pooling code uses; the
gradients are the composites'. amax/amin with ``include_self`` reduce the input and the sources
in one amax/amin, so a tie splits the gradient evenly between every tied value, self included,
as PyTorch's scatter_reduce_backward does. (Without ``include_self`` torch still counts an
input equal to the result among the ties, although it took no part: ember does not, so a
unique extremum among the sources gets the whole gradient.)"""
from __future__ import annotations

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .view_copies import _scatter_into
from ._util import ember_namespace as _ember

__all__ = ["scatter_reduce", "index_reduce"]

_SCATTER_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.is_floating_point:
        return float("-inf") if reduce == "amax" else float("inf")
    info = np.iinfo(dtype.np) if dtype is not _dtype.bool_ else None
    if info is None:
        return reduce == "amin"
    return int(info.min) if reduce == "amax" else int(info.max)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True, out=None):
    """``input`` with ``src[i]`` reduced into position ``index[i]`` along ``dim``."""
    em = _ember()
    for name, t in (("input", input), ("index", index), ("src", src)):
        if not isinstance(t, Tensor):
            raise TypeError(f"scatter_reduce(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
    if reduce not in _SCATTER_REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if index.dtype is not _dtype.int64:
        raise RuntimeError(f"scatter_reduce(): Expected dtype int64 for index, got "
                           f"{index.dtype}")
    if src.dtype is not input.dtype:
        raise RuntimeError(f"scatter_reduce(): Expected self.dtype to be equal to src.dtype, "
                           f"got {input.dtype} and {src.dtype}")
    nd = max(input.ndim, 1)
    if index.ndim != input.ndim or src.ndim != input.ndim:
        raise RuntimeError("scatter_reduce(): Index tensor must have the same number of "
                           "dimensions as self tensor and src tensor")
    d = dim % nd
    x = input.reshape(1) if input.ndim == 0 else input
    idx = index.reshape(1) if index.ndim == 0 else index
    s = src.reshape(1) if src.ndim == 0 else src
    for k in range(nd):
        if idx.shape[k] > s.shape[k] or (k != d and idx.shape[k] > x.shape[k]):
            raise RuntimeError(f"Expected index {list(index.shape)} to be smaller than self "
                               f"{list(input.shape)} apart from dimension {d} and to be "
                               f"smaller size than src {list(src.shape)}")
    if idx.numel() == 0:
        return input.clone()
    # src restricted to the index's extent, then the one-hot mask over output positions
    s = s[tuple(slice(0, n) for n in idx.shape)]
    n_out = x.shape[d]
    positions = em.arange(n_out, device=x.device)
    hit = idx.unsqueeze(-1).eq(positions)                          # idx.shape + (n_out,)
    ident = em.full((), _identity(reduce, x.dtype), dtype=x.dtype, device=x.device)
    vals = em.where(hit, s.unsqueeze(-1), ident)
    # the region of the input the index reaches (every dim but d limited to the index's)
    region = tuple(slice(0, idx.shape[k]) if k != d else slice(None) for k in range(nd))
    base = x[region]
    if include_self and reduce in ("amax", "amin"):
        # the input as one more candidate of the same reduction: ties share evenly
        vals = em.cat([vals, base.movedim(d, -1).unsqueeze(d)], d)
    if reduce in ("sum", "mean"):
        red = vals.sum(d)
    elif reduce == "prod":
        red = vals.prod(d)
    elif reduce == "amax":
        red = vals.amax(d)
    else:
        red = vals.amin(d)
    red = red.to(x.dtype)     # sum/prod promote bool and small ints; the result keeps self's
    count = hit.to(_dtype.int64).sum(d)                            # other dims + (n_out,)
    red, count = red.movedim(-1, d), count.movedim(-1, d)
    arrived = count.gt(0)
    if include_self:
        if reduce == "sum":
            combined = base + red
        elif reduce == "prod":
            combined = base * red
        elif reduce == "mean":
            total = base + red
            combined = total / (count + 1).to(x.dtype) if x.is_floating_point() else \
                em.div(total, count + 1, rounding_mode="floor")
        else:   # amax, amin: the input was one of the candidates
            combined = red
    else:
        if reduce == "mean":
            safe = count.clamp_min(1)
            combined = red / safe.to(x.dtype) if x.is_floating_point() else \
                em.div(red, safe, rounding_mode="floor")
        else:
            combined = red
    updated = em.where(arrived, combined, base)
    if tuple(base.shape) == tuple(x.shape):
        result = updated
    else:
        result = _scatter_into(x, updated, lambda t: t[region], "scatter_reduce")
    result = result.reshape(input.shape)
    return out.copy_(result) if out is not None else result


def index_reduce(input, dim, index, source, reduce, *, include_self=True, out=None):
    """``input`` with the slices of ``source`` along ``dim`` reduced into the slices
    ``index`` names (prod, mean, amax or amin)."""
    em = _ember()
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if not isinstance(index, Tensor) or index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got "
                           f"{index.dtype}")
    d = dim % max(input.ndim, 1)
    if source.ndim != input.ndim or index.numel() != (source.shape[d] if source.ndim else 1):
        raise IndexError(f"index_reduce_(): Index should have the same number of elements as "
                         f"dimension {d} of source, got {index.numel()} and "
                         f"{list(source.shape)}")
    shape = [1] * max(source.ndim, 1)
    shape[d] = -1
    full = index.to(_dtype.int64).reshape(shape)
    if source.ndim:
        full = full.expand(*source.shape)
    del em
    if input.ndim == 0:           # a 0-d self and source: one slice, as a 1-element vector
        r = scatter_reduce(input.reshape(1), 0, full, source.reshape(1), reduce,
                           include_self=include_self).reshape(())
        return out.copy_(r) if out is not None else r
    return scatter_reduce(input, dim, full, source, reduce, include_self=include_self, out=out)


def _inplace(fn):
    def method(self, *args, **kwargs):
        return self.copy_(fn(self, *args, **kwargs))
    method.__name__ = fn.__name__ + "_"
    return method


for _name in ("scatter_reduce", "index_reduce"):
    if _name not in Tensor.__dict__:
        setattr(Tensor, _name, globals()[_name])
        setattr(Tensor, _name + "_", _inplace(globals()[_name]))
del _name
