"""Histograms (issue #25): ``histogram`` and ``histogramdd`` of the flattened values / the
points in the rows, over equal bins of a range (the data's when none is given) or given edges,
the last bin closed, as compositions of comparisons and one ``scatter_add``."""
from __future__ import annotations

from collections import namedtuple

from .. import _dtype
from .._tensor import Tensor
from ._util import ember_namespace as _ember, require_tensor

__all__ = ["histogram", "histogramdd"]


# -- histograms and gradients -------------------------------------------------------------------
def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    """(hist, bin_edges) of the flattened input: ``bins`` equal bins over ``range`` (the data's
    when None) or the given increasing edges; the last bin is closed."""
    require_tensor(input, "histogram")
    em = _ember()
    if not input.is_floating_point():
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the "
                           f"same dtype, but got input {input.dtype}")
    x = input.detach().reshape(-1)
    if isinstance(bins, Tensor):
        edges = bins.to(input.dtype)
        if edges.ndim != 1 or edges.numel() < 2:
            raise RuntimeError("torch.histogram(): bins tensor should have one dimension and at "
                               "least 2 elements")
    else:
        if bins <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins}")
        if range is not None:
            lo, hi = float(range[0]), float(range[1])
        elif x.numel():
            lo, hi = float(x.min().item()), float(x.max().item())
        else:
            lo, hi = 0.0, 1.0           # no data: numpy's and PyTorch's unit range
        if lo > hi:
            raise ValueError(f"torch.histogram(): min should not exceed max, but got min {lo} "
                             f"max {hi}")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges = em.linspace(lo, hi, bins + 1, dtype=input.dtype, device=input.device)
    nb = edges.numel() - 1
    pos = (edges.unsqueeze(0).le(x.unsqueeze(1))).to(_dtype.int64).sum(1) - 1
    inside = x.ge(edges[0]) & x.le(edges[-1])
    pos = em.where(x.eq(edges[-1]), em.full((), nb - 1, dtype=_dtype.int64,
                                            device=x.device), pos).clamp(0, nb - 1)
    w = inside.to(input.dtype)
    if weight is not None:
        w = w * weight.detach().reshape(-1).to(input.dtype)
    hist = em.zeros(nb, dtype=input.dtype, device=input.device).scatter_add(0, pos, w)
    if density:
        widths = edges[1:] - edges[:-1]
        hist = hist / (hist.sum() * widths)
    result = namedtuple("histogram", ["hist", "bin_edges"])(hist, edges)
    if out is not None:
        out[0].copy_(hist), out[1].copy_(edges)
        return out
    return result


def _bin_of(x, edges, nb):
    """Bin index of each value among increasing ``edges`` (the last bin closed) and whether
    it falls inside them."""
    em = _ember()
    pos = (edges.unsqueeze(0).le(x.unsqueeze(1))).to(_dtype.int64).sum(1) - 1
    pos = em.where(x.eq(edges[-1]), em.full((), nb - 1, dtype=_dtype.int64, device=x.device),
                   pos).clamp(0, nb - 1)
    return pos, x.ge(edges[0]) & x.le(edges[-1])


def histogramdd(input, bins, range=None, weight=None, density=False):
    """(hist, bin_edges) of the points in the rows of ``input`` (..., D): per dim ``bins[d]``
    equal bins over its range (``range`` flat as [lo0, hi0, lo1, hi1, ...], else the data's)
    or given edges."""
    require_tensor(input, "histogramdd")
    em = _ember()
    if input.ndim < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension")
    n_dims = input.shape[-1]
    pts = input.detach().reshape(-1, n_dims)
    if isinstance(bins, int):
        bins = [bins] * n_dims
    bins = list(bins)
    if len(bins) != n_dims:
        raise RuntimeError(f"torch.histogramdd: expected {n_dims} sequences of bin edges for "
                           f"each of the {n_dims} input dimensions, but got {len(bins)}")
    if range is not None and len(range) != 2 * n_dims:
        raise RuntimeError(f"torch.histogramdd: for a {n_dims}-dimensional histogram, range "
                           f"should have {2 * n_dims} elements, but got {len(range)}")
    edges = []
    for d, b in enumerate(bins):
        if isinstance(b, Tensor):
            edges.append(b.to(input.dtype))
            continue
        col = pts[:, d]
        if range is not None:
            lo, hi = float(range[2 * d]), float(range[2 * d + 1])
        elif col.numel():
            lo, hi = float(col.min().item()), float(col.max().item())
        else:
            lo, hi = 0.0, 1.0           # no data: numpy's and PyTorch's unit range
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        edges.append(em.linspace(lo, hi, int(b) + 1, dtype=input.dtype, device=input.device))
    counts = [e.numel() - 1 for e in edges]
    flat = em.zeros(pts.shape[0], dtype=_dtype.int64, device=input.device)
    inside = em.ones(pts.shape[0], dtype=_dtype.bool_, device=input.device)
    for d, e in enumerate(edges):
        pos, ok = _bin_of(pts[:, d], e, counts[d])
        flat = flat * counts[d] + pos
        inside = inside & ok
    w = inside.to(input.dtype)
    if weight is not None:
        w = w * weight.detach().reshape(-1).to(input.dtype)
    total = 1
    for c in counts:
        total *= c
    hist = em.zeros(total, dtype=input.dtype, device=input.device).scatter_add(0, flat, w)
    hist = hist.reshape(counts)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            shape = [1] * n_dims
            shape[d] = -1
            hist = hist / (e[1:] - e[:-1]).reshape(shape)
    return namedtuple("histogramdd", ["hist", "bin_edges"])(hist, edges)


if "histogram" not in Tensor.__dict__:
    Tensor.histogram = histogram
