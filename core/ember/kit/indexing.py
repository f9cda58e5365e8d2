"""Kernels for ``ember.ops.indexing`` on array-module backends.

Index tensors arrive validated for dtype and broadcastability but not for bounds (that needs
their values), so each kernel checks bounds on the indices it reads. As in PyTorch, ``index``
and ``index_put_`` accept negative indices; gather, scatter, index_select and index_add do not.
"""
from __future__ import annotations


def register(backend):
    xp, native, wrap = backend.xp, backend.native, backend.wrap
    K = backend.kernels.register

    def check_bounds(idx, size, dim, exc=IndexError, prefix="", negative=False):
        if idx.size:
            hi, lo = int(idx.max()), int(idx.min())
            if hi >= size or lo < (-size if negative else 0):
                raise exc(f"{prefix}index {hi if hi >= size else lo} is out of bounds for "
                          f"dimension {dim} with size {size}")

    def key(indices, a):
        out = []
        for d, t in enumerate(indices):
            if t is None:
                out.append(slice(None))
            else:
                i = native(t)
                check_bounds(i, a.shape[d], d, negative=True)
                out.append(i)
        return tuple(out)

    def index(x, indices):
        a = native(x)
        r = a[key(indices, a)]
        # advanced indexing copies; a key of slices only would be a view
        return wrap(r if any(t is not None for t in indices) else r.copy(), x.device)

    def index_put_(x, indices, values, accumulate):
        a = native(x)
        k = key(indices, a)
        if accumulate:
            xp.add.at(a, k, native(values))
        else:
            a[k] = native(values)
        return x

    def _trim(a, shape, dim):
        """``a`` restricted to ``shape`` in every dim but ``dim`` (the index may be smaller)."""
        return a[tuple(slice(None) if k == dim else slice(0, s) for k, s in enumerate(shape))]

    def gather(x, dim, index):
        a, i = native(x), native(index)
        if a.ndim == 0 or i.ndim == 0:
            check_bounds(i, a.shape[dim] if a.ndim else 1, dim, RuntimeError)
            return wrap(xp.broadcast_to(a.reshape(-1)[i.reshape(-1)].reshape(i.shape),
                                        i.shape).copy(), x.device)
        check_bounds(i, a.shape[dim], dim, RuntimeError)
        return wrap(xp.take_along_axis(_trim(a, i.shape, dim), i, axis=dim), x.device)

    def scatter(x, dim, index, src, reduce):
        out = native(x).copy()
        i, s = native(index), native(src)
        if out.ndim == 0 or i.ndim == 0:
            view = out.reshape(-1)
            check_bounds(i, view.shape[0], dim, RuntimeError)
            i, s = i.reshape(-1), s.reshape(-1)[:i.size]
            k = (i,)
        else:
            check_bounds(i, out.shape[dim], dim, RuntimeError)
            view = out
            s = _trim(s, i.shape, -1) if s.ndim else xp.broadcast_to(s, i.shape)
            k = list(xp.indices(i.shape, sparse=True))
            k[dim] = i
            k = tuple(k)
        if reduce == "add":
            xp.add.at(view, k, s)
        elif reduce == "multiply":
            xp.multiply.at(view, k, s)
        else:
            view[k] = s
        return wrap(out, x.device)

    def index_select(x, dim, index):
        a, i = native(x), native(index)
        if a.ndim == 0:
            check_bounds(i, 1, 0, prefix="index_select(): ")
            return wrap(a.reshape(1)[i].reshape(()), x.device)
        check_bounds(i, a.shape[dim], dim, prefix="index_select(): ")
        return wrap(xp.take(a, i, axis=dim), x.device)

    def index_add(x, dim, index, source, alpha):
        out = native(x).copy()
        view = out.reshape(1) if out.ndim == 0 else out
        i, s = native(index), native(source)
        check_bounds(i, view.shape[dim], dim, RuntimeError)
        s = s.reshape(view.shape[:dim] + (i.size,) + view.shape[dim + 1:])
        if alpha != 1:
            s = (s * alpha).astype(out.dtype, copy=False)
        xp.add.at(view, (slice(None),) * dim + (i,), s)
        return wrap(out, x.device)

    def masked_fill(x, mask, value):
        a = native(x)
        return wrap(xp.where(native(mask), native(value), a).astype(a.dtype, copy=False),
                    x.device)

    def masked_select(x, mask):
        a, m = xp.broadcast_arrays(native(x), native(mask))
        return wrap(a[m], x.device)

    def nonzero(x):
        a = native(x)
        if a.ndim == 0:
            return wrap(xp.zeros((1 if a.item() else 0, 0), dtype=xp.int64), x.device)
        return wrap(xp.ascontiguousarray(xp.stack(xp.nonzero(a), axis=1).astype(xp.int64)),
                    x.device)

    for name, fn in (("index", index), ("index_put_", index_put_), ("gather", gather),
                     ("scatter", scatter), ("index_select", index_select),
                     ("index_add", index_add), ("masked_fill", masked_fill),
                     ("masked_select", masked_select), ("nonzero", nonzero)):
        K(name, fn)
