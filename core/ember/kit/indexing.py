"""Kernels for ``ember.ops.indexing`` on array-module backends.

Index tensors arrive validated for dtype and broadcastability but not for bounds (that needs
their values), so each kernel checks bounds on the indices it reads (``value_checks.bounds``:
at once on host arrays, on the device and at the next synchronization on a device backend). As
in PyTorch, ``index`` and ``index_put_`` accept negative indices; gather, scatter,
index_select and index_add do not.
"""
from __future__ import annotations

from .binding import bind
from .value_checks import bounds


def _key(be, indices, a, op):
    out = []
    for d, t in enumerate(indices):
        if t is None:
            out.append(slice(None))
        else:
            i = be.native(t)
            bounds(be, op, i, a.shape[d], d, prefix=f"{op}: ", negative=True)
            out.append(i)
    return tuple(out)


def _trim(a, shape, dim):
    """``a`` restricted to ``shape`` in every dim but ``dim`` (the index may be smaller)."""
    return a[tuple(slice(None) if k == dim else slice(0, s) for k, s in enumerate(shape))]


def index(be, x, indices):
    a = be.native(x)
    r = a[_key(be, indices, a, "index")]
    # advanced indexing copies; a key of slices only would be a view
    return be.wrap(r if any(t is not None for t in indices) else r.copy(), x.device)


def index_put_(be, x, indices, values, accumulate):
    a = be.native(x)
    k = _key(be, indices, a, "index_put_")
    if accumulate:
        be.xp.add.at(a, k, be.native(values))
    else:
        a[k] = be.native(values)
    return x


def take(be, x, index):
    # the op layer has checked the bounds; negative indices count from the end
    xp = be.xp
    flat = be.native(x).reshape(-1)
    return be.wrap(xp.asarray(flat[be.native(index)]), x.device)


def put(be, x, index, source, accumulate):
    xp = be.xp
    r = be.native(x).copy(order="C")
    flat = r.reshape(-1)
    i, v = be.native(index).reshape(-1), be.native(source).reshape(-1)
    if accumulate:
        xp.add.at(flat, i, v)
    else:
        flat[i] = v
    return be.wrap(r, x.device)


def gather(be, x, dim, index):
    xp = be.xp
    a, i = be.native(x), be.native(index)
    if a.ndim == 0 or i.ndim == 0:
        bounds(be, "gather", i, a.shape[dim] if a.ndim else 1, dim, RuntimeError, "gather: ")
        return be.wrap(xp.broadcast_to(a.reshape(-1)[i.reshape(-1)].reshape(i.shape),
                                       i.shape).copy(), x.device)
    bounds(be, "gather", i, a.shape[dim], dim, RuntimeError, "gather: ")
    return be.wrap(xp.take_along_axis(_trim(a, i.shape, dim), i, axis=dim), x.device)


def scatter(be, x, dim, index, src, reduce):
    xp = be.xp
    out = be.native(x).copy()
    i, s = be.native(index), be.native(src)
    op = "scatter_add" if reduce == "add" else "scatter"
    if out.ndim == 0 or i.ndim == 0:
        view = out.reshape(-1)
        bounds(be, op, i, view.shape[0], dim, RuntimeError, f"{op}: ")
        i, s = i.reshape(-1), s.reshape(-1)[:i.size]
        k = (i,)
    else:
        bounds(be, op, i, out.shape[dim], dim, RuntimeError, f"{op}: ")
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
    return be.wrap(out, x.device)


def index_select(be, x, dim, index):
    a, i = be.native(x), be.native(index)
    if a.ndim == 0:
        bounds(be, "index_select", i, 1, 0, prefix="index_select: ")
        return be.wrap(a.reshape(1)[i].reshape(()), x.device)
    bounds(be, "index_select", i, a.shape[dim], dim, prefix="index_select: ")
    return be.wrap(be.xp.take(a, i, axis=dim), x.device)


def embedding(be, weight, indices, padding_idx, scale_grad_by_freq):
    w, i = be.native(weight), be.native(indices)
    bounds(be, "embedding", i, w.shape[0], 0, prefix="embedding: ")
    return be.wrap(be.xp.take(w, i, axis=0), weight.device)


def index_add(be, x, dim, index, source, alpha):
    out = be.native(x).copy()
    view = out.reshape(1) if out.ndim == 0 else out
    i, s = be.native(index), be.native(source)
    bounds(be, "index_add", i, view.shape[dim], dim, RuntimeError, "index_add: ")
    s = s.reshape(view.shape[:dim] + (i.size,) + view.shape[dim + 1:])
    if alpha != 1:
        s = (s * alpha).astype(out.dtype, copy=False)
    if not (dim == 0 and _add_rows_into_zeros(be.xp, view, i, s)):
        be.xp.add.at(view, (slice(None),) * dim + (i,), s)
    return be.wrap(out, x.device)


def _add_rows_into_zeros(xp, out, i, s):
    """``out[i[j]] += s[j]`` for a numpy float ``out`` that is all zeros (sparse products and
    embedding gradients scatter into fresh zeros): one CSR product adds each row's sources in
    index order, 0 + s[j1] + s[j2] + ..., the sums np.add.at makes, an order of magnitude
    faster than its per-row loop. False (nothing done) in every other case."""
    if xp.__name__ != "numpy" or out.dtype.kind != "f" or i.ndim != 1 or i.size < 64 or \
            out.ndim < 1 or not out.flags.c_contiguous or out.any():
        return False
    import scipy.sparse as sparse  # start-up: scipy.sparse (~200 ms)
    rows = s.reshape(i.size, -1)
    pick = sparse.csr_matrix((xp.ones(i.size, out.dtype), (i, xp.arange(i.size))),
                             shape=(out.shape[0], i.size))
    out.reshape(out.shape[0], -1)[...] = pick @ rows
    return True


def masked_fill(be, x, mask, value):
    a = be.native(x)
    r = be.xp.where(be.native(mask), be.native(value), a).astype(a.dtype, copy=False)
    return be.wrap(r, x.device)


def masked_fill_(be, x, mask, value):
    # where() then one copy: numpy's copyto(where=) runs ~1.4x slower than both together
    a = be.native(x)
    be.xp.copyto(a, be.xp.where(be.native(mask), be.native(value), a))
    return x


def masked_select(be, x, mask):
    a, m = be.xp.broadcast_arrays(be.native(x), be.native(mask))
    return be.wrap(a[m], x.device)


def nonzero(be, x):
    xp = be.xp
    a = be.native(x)
    if a.ndim == 0:
        return be.wrap(xp.zeros((1 if a.item() else 0, 0), dtype=xp.int64), x.device)
    return be.wrap(xp.ascontiguousarray(xp.stack(xp.nonzero(a), axis=1).astype(xp.int64)),
                   x.device)


TABLE = {"index": index, "index_put_": index_put_, "take": take, "put": put, "gather": gather,
         "scatter": scatter, "index_select": index_select, "index_add": index_add,
         "masked_fill": masked_fill, "masked_fill_scalar": masked_fill,
         "masked_fill_": masked_fill_, "masked_fill_scalar_": masked_fill_,
         "masked_select": masked_select, "nonzero": nonzero, "embedding": embedding}


def register(backend) -> None:
    bind(backend, TABLE)
