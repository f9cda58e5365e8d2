"""CPU storages in shared memory: ``Tensor.share_memory_()`` / ``is_shared()`` and what
``ember.multiprocessing`` sends to other processes.

A CPU storage's memory is a numpy array. Sharing it moves its bytes into an anonymous
shared-memory file (``memfd_create``, else an unlinked file in /dev/shm) mapped with
``MAP_SHARED``, and gives the Storage an array of the same shape, dtype and strides over that
mapping. Every tensor viewing the Storage caches a numpy view of the old memory
(``Tensor._native``, and ``Storage.cache`` the flat bytes), so the move clears those caches on
every tensor that holds the Storage (found by the garbage collector's referrer walk; the move
happens once per storage). Another process maps the same file from a duplicate of its
descriptor (``ember.multiprocessing``'s reducers send one), so in-place writes on either side
are seen by both: torch's ``file_descriptor`` sharing strategy.
"""
from __future__ import annotations

import gc
import mmap
import os
import tempfile
import weakref

import numpy as np

# Storage -> the descriptor of its shared-memory file (closed when the Storage dies)
_SHARED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
# (st_dev, st_ino) of a file this process mapped -> its Storage, so tensors sent over one
# storage share one storage here too
_MAPPED: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


def _anonymous_file(nbytes: int) -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("ember_shared", os.MFD_CLOEXEC)
    else:  # pragma: no cover - systems without memfd
        with tempfile.NamedTemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None,
                                         delete=False) as f:
            fd = os.dup(f.fileno())
            os.unlink(f.name)
    os.ftruncate(fd, max(nbytes, 1))
    return fd


def _map(fd: int, nbytes: int) -> np.ndarray:
    """The file's first ``nbytes`` as a writable uint8 array over a shared mapping."""
    if nbytes == 0:
        return np.empty(0, dtype=np.uint8)
    return np.frombuffer(mmap.mmap(fd, nbytes, mmap.MAP_SHARED), dtype=np.uint8)


def _span(data: np.ndarray) -> int:
    """Bytes from the array's first element to the end of its last."""
    if data.size == 0:
        return 0
    return data.itemsize + sum((n - 1) * s for n, s in zip(data.shape, data.strides))


def _over(flat: np.ndarray, like: np.ndarray) -> np.ndarray:
    return np.ndarray(like.shape, like.dtype, buffer=flat, offset=0, strides=like.strides)


def is_shared(storage) -> bool:
    return storage in _SHARED


def descriptor(storage) -> int:
    """The shared-memory file descriptor of a shared storage."""
    return _SHARED[storage]


def share_storage(storage) -> None:
    """Move a CPU storage's bytes into shared memory, in place (no-op when already shared or
    not a numpy-array CPU storage)."""
    share_storages([storage])


def share_storages(storages) -> None:
    """``share_storage`` for several storages, with one referrer walk for all of them."""
    moved = []
    for storage in storages:
        data = storage.data
        if storage in _SHARED or storage.device.type != "cpu" or \
                not isinstance(data, np.ndarray) or any(s < 0 for s in data.strides):
            continue
        nbytes = _span(data)
        fd = _anonymous_file(nbytes)
        flat = _map(fd, nbytes)
        shared = _over(flat, data)
        shared[...] = data
        storage.data = shared
        storage.cache = None
        _SHARED[storage] = fd
        weakref.finalize(storage, os.close, fd)
        moved.append(storage)
    if moved:
        _forget_views(moved)


def _forget_views(storages) -> None:
    """Drop the cached numpy views of the old memory on every tensor holding these storages."""
    ids = {id(s) for s in storages}
    for holder in gc.get_referrers(*storages):
        storage = getattr(holder, "_storage", None) if hasattr(holder, "_native") else None
        if storage is not None and id(storage) in ids:
            holder._native = None


def attach(fd: int, nbytes: int, like_shape, like_strides, np_dtype, make_storage):
    """The storage over another process's shared file (``fd`` is ours to keep or close): one
    storage per file in this process."""
    st = os.fstat(fd)
    key = (st.st_dev, st.st_ino)
    storage = _MAPPED.get(key)
    if storage is not None:
        os.close(fd)
        return storage
    flat = _map(fd, nbytes)
    data = np.ndarray(tuple(like_shape), np.dtype(np_dtype), buffer=flat, offset=0,
                      strides=tuple(like_strides))
    storage = make_storage(data)
    _SHARED[storage] = fd
    weakref.finalize(storage, os.close, fd)
    _MAPPED[key] = storage
    return storage
