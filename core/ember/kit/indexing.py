"""Kernels for ``ember.ops.indexing`` on array-module backends."""
from __future__ import annotations


def register(backend):
    xp, native, wrap = backend.xp, backend.native, backend.wrap
    K = backend.kernels.register

    def key(indices, a):
        out = []
        for d, t in enumerate(indices):
            if t is None:
                out.append(slice(None))
                continue
            i = native(t)
            size = a.shape[d]
            if i.size and (int(i.max()) >= size or int(i.min()) < -size):
                bad = int(i.max()) if int(i.max()) >= size else int(i.min())
                raise IndexError(f"index {bad} is out of bounds for dimension {d} with size "
                                 f"{size}")
            out.append(i)
        return tuple(out)

    def index(x, indices):
        a = native(x)
        return wrap(xp.array(a[key(indices, a)], copy=True), x.device)

    def index_put_(x, indices, values, accumulate):
        a = native(x)
        k = key(indices, a)
        v = native(values)
        try:
            if accumulate:
                xp.add.at(a, k, v)
            else:
                a[k] = v
        except ValueError:
            target = a[k].shape
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot "
                               f"be broadcast to indexing result of shape {list(target)}") \
                from None
        return x

    def _check_bounds(idx, size, dim, op):
        if idx.size and (int(idx.max()) >= size or int(idx.min()) < -size):
            bad = int(idx.max()) if int(idx.max()) >= size else int(idx.min())
            raise RuntimeError(f"{op}(): index {bad} is out of bounds for dimension {dim} with "
                               f"size {size}")

    def _trim(a, shape, dim):
        """``a`` restricted to ``shape`` in every dim but ``dim`` (index may be smaller)."""
        return a[tuple(slice(None) if k == dim else slice(0, s) for k, s in enumerate(shape))]

    def gather(x, dim, index):
        a, i = native(x), native(index)
        if a.ndim == 0:
            _check_bounds(i, 1, 0, "gather")
            return wrap(xp.broadcast_to(a, i.shape).copy(), x.device)
        _check_bounds(i, a.shape[dim], dim, "gather")
        return wrap(xp.take_along_axis(_trim(a, i.shape, dim), i, axis=dim).copy(), x.device)

    def scatter(x, dim, index, src, reduce):
        out = native(x).copy()
        i, s = native(index), native(src)
        if out.ndim == 0:
            _check_bounds(i, 1, 0, "scatter")
            if i.size:
                val = s.reshape(-1)[0]
                out[...] = out + val if reduce == "add" else out * val if reduce else val
            return wrap(out, x.device)
        _check_bounds(i, out.shape[dim], dim, "scatter")
        s = s[tuple(slice(0, n) for n in i.shape)] if s.ndim else xp.broadcast_to(s, i.shape)
        grid = list(xp.indices(i.shape, sparse=True))
        grid[dim] = i
        k = tuple(grid)
        if reduce == "add":
            xp.add.at(out, k, s)
        elif reduce == "multiply":
            xp.multiply.at(out, k, s)
        else:
            out[k] = s
        return wrap(out, x.device)

    def index_select(x, dim, index):
        a, i = native(x), native(index)
        size = a.shape[dim] if a.ndim else 1
        _check_bounds(i, size, dim, "index_select")
        if a.ndim == 0:
            return wrap(xp.broadcast_to(a, i.shape).copy(), x.device)
        return wrap(xp.take(a, i, axis=dim), x.device)

    def index_add(x, dim, index, source, alpha):
        out = native(x).copy()
        i, s = native(index), native(source)
        _check_bounds(i, out.shape[dim] if out.ndim else 1, dim, "index_add")
        if alpha != 1:
            s = s * alpha
        if out.ndim == 0:
            out[...] = out + s.sum() if i.size else out
        else:
            xp.add.at(out, (slice(None),) * dim + (i,), s.astype(out.dtype, copy=False))
        return wrap(out, x.device)

    def masked_fill(x, mask, value):
        a = native(x)
        return wrap(xp.where(native(mask), native(value), a).astype(a.dtype, copy=False),
                    x.device)

    def masked_select(x, mask):
        a, m = xp.broadcast_arrays(native(x), native(mask))
        return wrap(a[m].copy(), x.device)

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
