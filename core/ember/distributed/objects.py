"""Object collectives: ``broadcast_object_list``, ``all_gather_object``, ``gather_object``,
``scatter_object_list``.

PyTorch pickles the objects and unpickles whatever arrives. ember sends the bytes
``ember.save`` writes to a file (safetensors + a JSON tree) and receivers read them with
``ember.load``'s default, safe loader, so receiving never runs code named by the data. Plain
data — tensors (any device; they arrive on the device they were sent from), dict/OrderedDict/
Counter, list, tuple, None, bool, int, float, complex, str, ember.dtype, ember.device,
ember.Size — always works; other objects only as far as ``ember.load`` accepts them. The sender
loads its own bytes first: an object the receivers would refuse raises a TypeError on the
sending rank, and the other ranks raise too instead of waiting.

The bytes go through the group's MPI instance on host buffers (sizes first, then the payload
padded to the largest size).
"""
from __future__ import annotations

import io

import numpy as np
import ember

from .collectives import _group_rank, _skip
from .process_group import resolve_group
from ..ops.factories import from_numpy

__all__ = ["broadcast_object_list", "all_gather_object", "gather_object",
           "scatter_object_list"]

_FAILED = -1


def _formats():
    """``ember.save``/``ember.load``: serialization rebuilds nn's classes (``Parameter``), and nn
    holds DistributedDataParallel, which runs on this package: the objects travel through the
    public namespace rather than an import of ``ember.serialization``."""
    return ember


def _encode(obj, fn):
    """``obj`` as ember.save's bytes, checked by loading them the way the receivers will (so an
    object they would refuse fails here, on its own rank, and the peers are told)."""
    buf = io.BytesIO()
    try:
        _formats().save(obj, buf)
        data = buf.getvalue()
        _formats().load(io.BytesIO(data))
    except Exception as e:  # noqa: BLE001 - any refusal becomes one clear error
        raise TypeError(f"{fn}: objects travel in ember.save's format and are read back by "
                        f"ember.load's safe loader (no code runs on receipt); this object "
                        f"can't be: {type(e).__name__}: {e}") from None
    return np.frombuffer(data, dtype=np.uint8)


def _decode(arr):
    return _formats().load(io.BytesIO(arr.tobytes()))


def _tensor(arr):
    return from_numpy(np.ascontiguousarray(arr))


def _run(impl, method, *args):
    impl_method = getattr(impl, method)
    impl_method(*args).wait()


def _sizes_or_raise(sizes, fn, ranks):
    bad = [ranks[i] for i, s in enumerate(sizes) if s == _FAILED]
    if bad:
        raise RuntimeError(f"{fn}: rank(s) {bad} could not serialize their object (see the "
                           f"error on that rank)")


def _root_encodes(impl, pg, root, objects, n, fn):
    """The root pickles ``objects`` (``n`` of them) and every rank learns their byte sizes:
    (the root's encoded parts or None, sizes). A pickling error reaches every rank: the root
    raises it, the others a RuntimeError naming the root."""
    sizes = np.zeros(n, dtype=np.int64)
    parts, error = None, None
    if pg.rank() == root:
        try:
            parts = [_encode(o, fn) for o in objects]
            sizes[:] = [len(p) for p in parts]
        except TypeError as e:
            error = e
            sizes[:] = _FAILED
    sizes_t = _tensor(sizes)
    _run(impl, "broadcast", sizes_t, root)
    sizes = sizes_t.numpy()
    if error is not None:
        raise error
    _sizes_or_raise(sizes[:1], fn, [pg._ranks[root]])
    return parts, sizes


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Every rank's ``object_list`` becomes ``src``'s (same length on every rank)."""
    fn = "broadcast_object_list"
    if not isinstance(object_list, list):
        raise TypeError(f"{fn}: object_list must be a list, got {type(object_list).__name__}")
    if _skip(group, fn):
        return
    pg = resolve_group(group, fn)
    root = _group_rank(pg, src, group_src, fn, "src")
    impl = pg._mpi()
    parts, sizes = _root_encodes(impl, pg, root, object_list, len(object_list), fn)
    data = _tensor(np.concatenate(parts) if parts else np.zeros(int(sizes.sum()), np.uint8))
    _run(impl, "broadcast", data, root)
    if pg.rank() != root:
        arr = data.numpy()
        start = 0
        for i, s in enumerate(sizes):
            object_list[i] = _decode(arr[start:start + s])
            start += int(s)


def _gather_sizes(impl, pg, mine):
    sizes = _tensor(np.zeros(pg.size(), dtype=np.int64))
    _run(impl, "allgather_into", sizes, _tensor(np.array([mine], dtype=np.int64)))
    return sizes.numpy()


def _encode_and_share_sizes(impl, pg, obj, fn):
    """This rank's pickled ``obj`` and every rank's pickle size. A rank that cannot pickle its
    object still takes part in the size exchange (sending ``_FAILED``) before raising, so the
    other ranks fail too instead of waiting."""
    mine, error = None, None
    try:
        mine = _encode(obj, fn)
    except TypeError as e:
        error = e
    sizes = _gather_sizes(impl, pg, _FAILED if error else len(mine))
    if error is not None:
        raise error
    _sizes_or_raise(sizes, fn, pg._ranks)
    return mine, sizes


def _padded(arr, width):
    out = np.zeros(width, dtype=np.uint8)
    if arr is not None:
        out[:len(arr)] = arr
    return out


def all_gather_object(object_list, obj, group=None):
    """``object_list[i]`` = rank i's ``obj`` on every rank."""
    fn = "all_gather_object"
    if _skip(group, fn):
        return
    pg = resolve_group(group, fn)
    if not isinstance(object_list, list) or len(object_list) != pg.size():
        raise ValueError(f"{fn}: object_list must be a list of length world size "
                         f"({pg.size()}), got {object_list!r:.60}")
    impl = pg._mpi()
    mine, sizes = _encode_and_share_sizes(impl, pg, obj, fn)
    width = int(sizes.max()) if len(sizes) else 0
    out = _tensor(np.zeros(width * pg.size(), np.uint8))
    _run(impl, "allgather_into", out, _tensor(_padded(mine, width)))
    arr = out.numpy()
    for i, s in enumerate(sizes):
        object_list[i] = _decode(arr[i * width:i * width + int(s)])


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """On ``dst``, ``object_gather_list[i]`` = rank i's ``obj``."""
    fn = "gather_object"
    if _skip(group, fn):
        return
    pg = resolve_group(group, fn)
    root = _group_rank(pg, dst, group_dst, fn, "dst")
    if pg.rank() == root:
        if not isinstance(object_gather_list, list) or len(object_gather_list) != pg.size():
            raise ValueError(f"{fn}: object_gather_list on the destination rank must be a list "
                             f"of length world size ({pg.size()})")
    elif object_gather_list is not None:
        raise ValueError("Argument ``object_gather_list`` must NOT be specified on "
                         "non-destination ranks.")
    impl = pg._mpi()
    mine, sizes = _encode_and_share_sizes(impl, pg, obj, fn)
    width = int(sizes.max())
    out = _tensor(np.zeros(width * pg.size(), np.uint8)) if pg.rank() == root else None
    _run(impl, "gather_into", out, _tensor(_padded(mine, width)), root)
    if out is not None:
        arr = out.numpy()
        for i, s in enumerate(sizes):
            object_gather_list[i] = _decode(arr[i * width:i * width + int(s)])


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """``scatter_object_output_list[0]`` = ``src``'s ``scatter_object_input_list[rank]``."""
    fn = "scatter_object_list"
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at "
                         "least 1.")
    if _skip(group, fn):
        return
    pg = resolve_group(group, fn)
    root = _group_rank(pg, src, group_src, fn, "src")
    impl = pg._mpi()
    if pg.rank() == root and (not isinstance(scatter_object_input_list, list)
                              or len(scatter_object_input_list) != pg.size()):
        raise ValueError(f"{fn}: scatter_object_input_list on the source rank must be a "
                         f"list of length world size ({pg.size()})")
    parts, sizes = _root_encodes(impl, pg, root, scatter_object_input_list, pg.size(), fn)
    width = int(sizes.max())
    flat = None
    if parts is not None:
        flat = _tensor(np.concatenate([_padded(p, width) for p in parts]))
    out = _tensor(np.zeros(width, np.uint8))
    _run(impl, "scatter_from", out, flat, root)
    scatter_object_output_list[0] = _decode(out.numpy()[:int(sizes[pg.rank()])])
