"""Kernels for ``ember.ops.shape`` on array-module backends."""
from __future__ import annotations


def register(backend):
    xp, native, wrap = backend.xp, backend.native, backend.wrap
    K = backend.kernels.register

    def cat(tensors, dim, dtype):
        arrays = [native(t).astype(dtype.np, copy=False) for t in tensors]
        return wrap(xp.concatenate(arrays, axis=dim), tensors[0].device)

    def flip(x, dims):
        # copy: flip over no dims is the input itself
        return wrap(xp.flip(native(x), axis=dims).copy(), x.device)

    def roll(x, shifts, dims):
        return wrap(xp.roll(native(x), shifts, axis=dims), x.device)

    def tile(x, reps):
        a = native(x)
        a = a.reshape((1,) * (len(reps) - a.ndim) + a.shape)
        return wrap(xp.tile(a, reps), x.device)

    def tril(x, k):
        return wrap(xp.tril(native(x), k), x.device)

    def triu(x, k):
        return wrap(xp.triu(native(x), k), x.device)

    for name, fn in (("cat", cat), ("flip", flip), ("roll", roll), ("tile", tile),
                     ("tril", tril), ("triu", triu)):
        K(name, fn)
