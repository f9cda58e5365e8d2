"""Sorting kernels for array-module backends."""
from __future__ import annotations


def register(backend):
    xp, native, wrap = backend.xp, backend.native, backend.wrap

    def sort(x, dim, descending, stable):
        a = native(x)
        if a.ndim == 0:
            return wrap(a.copy(), x.device), wrap(xp.zeros((), dtype=xp.int64), x.device)
        if descending:
            # sort the reversed array ascending (NaN last, ties in order) and reverse back:
            # NaN first, ties still in their original order
            rev = xp.flip(a, axis=dim)
            idx = xp.flip(xp.argsort(rev, axis=dim, kind="stable"), axis=dim)
            idx = a.shape[dim] - 1 - idx
        else:
            idx = xp.argsort(a, axis=dim, kind="stable")
        values = xp.take_along_axis(a, idx, axis=dim)
        return (wrap(xp.ascontiguousarray(values), x.device),
                wrap(xp.ascontiguousarray(idx.astype(xp.int64)), x.device))

    backend.kernels.register("sort", sort)
