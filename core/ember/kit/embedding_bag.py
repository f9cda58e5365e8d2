"""Kernels for ``ember.ops.embedding_bag`` on array-module backends: bags are contiguous
segments of the index list; the reductions are ``add.at``/``maximum.at`` of the
gathered rows into their bags (the ufunc methods cupy has too; empty bags stay zero) -- on a
device, max by sorting -- and the backward is one ``add.at`` into the weight's gradient."""
from __future__ import annotations

from ..ops.embedding_bag import MAX, MEAN
from .binding import bind
from .sorting import sort_keys


def _bounds(be, offsets, m, include_last_offset):
    xp = be.xp
    off = be.native(offsets).astype(xp.int64)
    if include_last_offset:
        starts, ends = off[:-1], off[1:]
    else:
        starts = off
        ends = xp.concatenate([off[1:], xp.asarray([m], dtype=xp.int64)])
    return xp.clip(starts, 0, m), xp.clip(ends, 0, m)


def _first_max_at(xp, rows, valid, offset2bag, b):
    """Per bag and feature: the first valid row holding the bag's largest value (any row for a
    bag without valid rows: the caller masks those) and that value, by ``maximum.at`` and
    ``minimum.at``."""
    m = rows.shape[0]
    vals = xp.where(valid[:, None], rows, xp.asarray(-xp.inf, dtype=rows.dtype))
    top = xp.full((b, rows.shape[1]), -xp.inf, dtype=rows.dtype)
    xp.maximum.at(top, offset2bag, vals)
    pos = xp.where((vals == top[offset2bag]) & valid[:, None],
                   xp.arange(m, dtype=xp.int64)[:, None], m)
    first = xp.full(top.shape, m, dtype=xp.int64)
    xp.minimum.at(first, offset2bag, pos)
    return xp.minimum(first, m - 1), top


def _first_max_sorted(xp, rows, valid, offset2bag, b):
    """``_first_max_at``'s result by sorting, for device arrays: cupy's ``maximum.at`` rounded a
    float64 target through float32 on an H200, so no row equalled its bag's maximum. Per
    feature, the rows are ranked largest first (ties in row order, padding last); keyed
    ``bag * m + rank`` they sort bag by bag, and a bag's first key is its first maximum."""
    m = rows.shape[0]
    key = sort_keys(xp, xp.where(valid[:, None], -rows, xp.asarray(xp.nan, dtype=rows.dtype)))
    order = xp.argsort(key, axis=0, kind="stable")
    rank = xp.argsort(order, axis=0)
    keys = xp.sort(offset2bag[:, None] * m + rank, axis=0)
    bags = xp.arange(b, dtype=xp.int64)
    starts = xp.minimum(xp.searchsorted(offset2bag, bags), m - 1)
    first_rank = xp.clip(keys[starts] - (bags * m)[:, None], 0, m - 1)  # empty bags: masked
    first = xp.take_along_axis(order, first_rank, axis=0)
    return first, xp.take_along_axis(rows, first, axis=0)


def embedding_bag(be, weight, indices, offsets, mode, psw, include_last_offset, padding_idx):
    xp = be.xp
    w = be.native(weight)
    idx = be.native(indices).astype(xp.int64)
    m, d = idx.shape[0], w.shape[1]
    starts, ends = _bounds(be, offsets, m, include_last_offset)
    b = starts.shape[0]
    counts = ends - starts
    offset2bag = xp.repeat(xp.arange(b, dtype=xp.int64), counts)
    if offset2bag.shape[0] < m:  # indices past the last bag belong to none: give them bag b-1
        offset2bag = xp.concatenate([offset2bag, xp.full(m - offset2bag.shape[0], max(b - 1, 0),
                                                          dtype=xp.int64)])
    valid = idx != padding_idx if padding_idx >= 0 else xp.ones(m, dtype=bool)
    if b:  # indices past the last bag's end (include_last_offset) take part in no bag
        valid = valid & (xp.arange(m) < ends[-1])
    rows = w[idx]
    bag_size = xp.zeros(b, dtype=xp.int64)
    nonempty = counts > 0
    if m:
        xp.add.at(bag_size, offset2bag, valid.astype(xp.int64))
    max_indices = xp.zeros((b, d) if mode == MAX else (b,), dtype=xp.int64)
    if m == 0 or b == 0:
        return (be.wrap(xp.zeros((b, d), dtype=w.dtype), weight.device),
                be.wrap(offset2bag, weight.device), be.wrap(bag_size, weight.device),
                be.wrap(max_indices, weight.device))
    if mode == MAX:
        filled = (bag_size > 0)[:, None]
        first, top = (_first_max_at if be.values_on_host else _first_max_sorted)(
            xp, rows, valid, offset2bag, b)
        max_indices = xp.where(filled, idx[first], 0)
        out = xp.where(filled, top, 0)
    else:
        if psw is not None:
            rows = rows * be.native(psw)[:, None]
        rows = xp.where(valid[:, None], rows, 0)
        out = xp.zeros((b, d), dtype=rows.dtype)
        be.add_at("embedding_bag", out, offset2bag, rows)
        out = xp.where(nonempty[:, None], out, 0)
        if mode == MEAN:
            out = xp.where((bag_size > 0)[:, None], out / xp.maximum(bag_size, 1)[:, None], 0)
    return (be.wrap(xp.ascontiguousarray(out.astype(w.dtype, copy=False)), weight.device),
            be.wrap(offset2bag, weight.device), be.wrap(bag_size, weight.device),
            be.wrap(max_indices, weight.device))


def embedding_bag_backward(be, grad, indices, offset2bag, bag_size, max_indices, num_weights,
                           mode, psw, padding_idx):
    xp = be.xp
    g = be.native(grad)
    d = g.shape[1]
    gw = xp.zeros((num_weights, d), dtype=g.dtype)
    if mode == MAX:
        mi = be.native(max_indices)
        filled = (be.native(bag_size) > 0)[:, None]
        # every (bag, feature) adds at weight row mi, column feature -- an empty bag adds zero
        # at its (valid) row 0, so no boolean mask and no host read of how many bags are filled
        flat = (mi * d + xp.arange(d, dtype=mi.dtype)).reshape(-1)
        be.add_at("embedding_bag_backward", gw.reshape(-1), flat,
                  xp.where(filled, g, 0).reshape(-1))
        return be.wrap(gw, grad.device)
    idx = be.native(indices).astype(xp.int64)
    bags = be.native(offset2bag)
    contrib = g[bags] if idx.shape[0] else xp.zeros((0, d), dtype=g.dtype)
    if mode == MEAN:
        contrib = contrib / xp.maximum(be.native(bag_size), 1)[bags][:, None]
    elif psw is not None:
        contrib = contrib * be.native(psw)[:, None]
    if padding_idx >= 0:
        keep = idx != padding_idx
        idx, contrib = idx[keep], contrib[keep]
    be.add_at("embedding_bag_backward", gw, idx, contrib.astype(g.dtype, copy=False))
    return be.wrap(gw, grad.device)


TABLE = {"embedding_bag": embedding_bag, "embedding_bag_backward": embedding_bag_backward}


def register(backend) -> None:
    bind(backend, TABLE)
