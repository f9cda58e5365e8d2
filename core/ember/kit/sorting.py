"""Sorting kernels for array-module backends."""
from __future__ import annotations

from .binding import bind


def sort_keys(xp, a):
    """``a`` in a dtype the array module sorts correctly: numpy's sort has no NaN rule for
    extension dtypes (ml_dtypes' bfloat16 puts NaN anywhere), so those sort as float32, which
    holds every bfloat16 value exactly and in the same order."""
    return a.astype(xp.float32) if a.dtype.name == "bfloat16" else a


def stable_argsort(xp, a, dim, descending):
    """Indices that sort ``a`` along ``dim`` stably: NaN last ascending, first descending; ties
    keep input order either way."""
    a = sort_keys(xp, a)
    if not descending:
        return xp.argsort(a, axis=dim, kind="stable")  # NaN last, ties in input order
    # sort the reversed array ascending and reverse back: NaN first, ties still in order
    idx = xp.flip(xp.argsort(xp.flip(a, axis=dim), axis=dim, kind="stable"), axis=dim)
    return a.shape[dim] - 1 - idx


def sort(be, x, dim, descending, stable):
    xp = be.xp
    a = be.native(x)
    if a.ndim == 0:
        return be.wrap(a.copy(), x.device), be.wrap(xp.zeros((), dtype=xp.int64), x.device)
    idx = stable_argsort(xp, a, dim, descending)
    values = xp.take_along_axis(a, idx, axis=dim)
    return (be.wrap(xp.ascontiguousarray(values), x.device),
            be.wrap(xp.ascontiguousarray(idx.astype(xp.int64)), x.device))


def _run_starts(xp, starts, n):
    """For each position of each row, where its run of equal values starts: the start of the
    k-th run of the whole array is the k-th True of ``starts`` (every row starts a run). A
    running max of the start positions would do too, but cupy has no ``maximum.accumulate``."""
    flat = starts.reshape(-1)
    run = xp.cumsum(flat) - 1
    return (xp.nonzero(flat)[0][run] % n).reshape(starts.shape)


def mode(be, x, dim):
    xp = be.xp
    a = be.native(x)
    if a.ndim == 0:
        return be.wrap(a.copy(), x.device), be.wrap(xp.zeros((), dtype=xp.int64), x.device)
    rows = xp.moveaxis(a, dim, -1)
    out_shape, n = rows.shape[:-1], rows.shape[-1]
    rows = sort_keys(xp, rows.reshape(-1, n))
    idx = xp.argsort(rows, axis=1, kind="stable")
    s = xp.take_along_axis(rows, idx, axis=1)
    # runs of equal values in each sorted row (NaN != NaN: every NaN is its own run)
    differ = s[:, 1:] != s[:, :-1]
    true = xp.ones((s.shape[0], 1), dtype=bool)
    starts = xp.concatenate([true, differ], axis=1)
    ends = xp.concatenate([differ, true], axis=1)
    pos = xp.arange(n)
    length = xp.where(ends, pos - _run_starts(xp, starts, n) + 1, 0)
    # PyTorch: the smallest most frequent value, at its last position in the input
    best = xp.argmax(length, axis=1)[:, None]
    values = xp.take_along_axis(s, best, axis=1).reshape(out_shape).astype(a.dtype)
    indices = xp.take_along_axis(idx, best, axis=1).reshape(out_shape).astype(xp.int64)
    return be.wrap(values, x.device), be.wrap(indices, x.device)


def unique(be, x, dim):
    xp = be.xp
    a = be.native(x)
    flat = dim is None
    keys = sort_keys(xp, a)
    if not flat and keys.dtype == bool:
        keys = keys.view(xp.uint8)   # cupy's unique(axis=) subtracts rows, which bool refuses
    values, inverse, counts = xp.unique(keys.reshape(-1) if flat else keys, return_inverse=True,
                                        return_counts=True, axis=None if flat else dim,
                                        equal_nan=False)
    inverse = inverse.reshape(a.shape if flat else -1).astype(xp.int64)
    return (be.wrap(values.astype(a.dtype), x.device), be.wrap(inverse, x.device),
            be.wrap(counts.astype(xp.int64), x.device))


TABLE = {"sort": sort, "mode": mode, "unique": unique}


def register(backend) -> None:
    bind(backend, TABLE)
