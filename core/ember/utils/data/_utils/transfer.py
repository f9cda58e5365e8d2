"""Moving batches from DataLoader workers to the main process without pickling their data.

A worker pickles the batch's structure with a pickler that takes every ember tensor (and every
numpy array of at least ``_ARRAY_MIN_BYTES``) out of the stream; their bytes are copied, once,
into one POSIX shared-memory segment per batch, and only the segment's name, offsets, shapes
and dtypes travel through the result queue. The main process maps the segment, unlinks its
name at once (the mapping lives as long as the tensors that view it) and rebuilds each tensor
as ``ember.from_numpy`` over the mapping: no copy on the receiving side.

Small batches (under ``_INLINE_LIMIT`` bytes in all) ride inside the pickle instead: a segment
costs a few system calls, a small copy less. When shared memory is missing (no
``_posixshmem``) or full (``posix_fallocate`` fails), batches also go inline, with a warning.
Segments a crashed main process never received keep the name prefix
``ember_dl_<main pid>_<loader>_``; ``cleanup_segments`` removes them at shutdown.
"""
from __future__ import annotations

import io
import itertools
import mmap
import os
import pickle
import warnings

import numpy as np

try:
    import _posixshmem
except ImportError:  # not POSIX: every batch goes inline
    _posixshmem = None

_INLINE_LIMIT = 32 * 1024
_ARRAY_MIN_BYTES = 4096
_ALIGN = 64
_SHM_DIR = "/dev/shm"
_loader_ids = itertools.count()
_warned_inline = [False]


def new_prefix() -> str:
    """Segment-name prefix for one DataLoader iterator of this (main) process."""
    return f"ember_dl_{os.getpid()}_{next(_loader_ids)}_"


class _Encoder(pickle.Pickler):
    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.arrays = []

    def persistent_id(self, obj):
        from ...._tensor import Tensor
        if type(obj) is Tensor:
            if obj.requires_grad and not obj.is_leaf:
                raise RuntimeError(
                    "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
                    "autograd does not support crossing process boundaries.  If you just want to "
                    "transfer the data, call detach() on the tensor before serializing (e.g., "
                    "putting it on the queue).")
            host = np.ascontiguousarray(obj._host())
            self.arrays.append(host)
            return ("t", len(self.arrays) - 1, obj.dtype, tuple(obj.shape), str(obj.device),
                    obj.requires_grad)
        if type(obj) is np.ndarray and obj.dtype.kind in "biufcmM" and \
                obj.nbytes >= _ARRAY_MIN_BYTES:
            self.arrays.append(np.ascontiguousarray(obj))
            return ("a", len(self.arrays) - 1, obj.dtype, obj.shape)
        return None


def _layout(arrays):
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        total += -(-a.nbytes // _ALIGN) * _ALIGN
    return offsets, max(total, 1)


def _create_segment(name, size):
    fd = _posixshmem.shm_open("/" + name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, size)  # ENOSPC here, not SIGBUS on a later write
        else:
            os.ftruncate(fd, size)
        return mmap.mmap(fd, size)
    except BaseException:
        _posixshmem.shm_unlink("/" + name)
        raise
    finally:
        os.close(fd)


def encode(obj, prefix, counter):
    """The message a worker puts on the result queue for ``obj``."""
    buf = io.BytesIO()
    encoder = _Encoder(buf)
    encoder.dump(obj)
    arrays = encoder.arrays
    offsets, size = _layout(arrays)
    if arrays and size >= _INLINE_LIMIT and _posixshmem is not None:
        name = f"{prefix}{counter}"
        try:
            segment = _create_segment(name, size)
        except OSError as e:
            if not _warned_inline[0]:
                _warned_inline[0] = True
                warnings.warn(f"DataLoader worker: cannot place a {size}-byte batch in shared "
                              f"memory ({e}); sending batches through the result queue instead "
                              f"(slower). Free space in {_SHM_DIR} or use smaller batches.",
                              RuntimeWarning, stacklevel=2)
        else:
            try:
                for a, off in zip(arrays, offsets):
                    view = np.ndarray(a.shape, a.dtype, buffer=segment, offset=off)
                    np.copyto(view, a, casting="no")
                    del view
            finally:
                segment.close()
            return ("shm", buf.getvalue(), name, size, offsets)
    return ("inline", buf.getvalue(), [a.tobytes() for a in arrays])


def _attach(name, size):
    fd = _posixshmem.shm_open("/" + name, os.O_RDWR, 0o600)
    try:
        return mmap.mmap(fd, size)
    finally:
        os.close(fd)
        _posixshmem.shm_unlink("/" + name)


class _Decoder(pickle.Unpickler):
    def __init__(self, data, arrays):
        super().__init__(io.BytesIO(data))
        self.arrays = arrays

    def persistent_load(self, pid):
        import ember
        if pid[0] == "t":
            _, k, dtype, shape, device, requires_grad = pid
            t = ember.from_numpy(self.arrays(k, dtype.np, shape))
            if device != "cpu":
                t = t.to(device)
            if requires_grad:
                t.requires_grad_(True)
            return t
        _, k, dtype, shape = pid
        return self.arrays(k, dtype, shape)


def decode(message):
    """Rebuild what ``encode`` sent (in the main process)."""
    kind, data = message[0], message[1]
    if kind == "shm":
        _, _, name, size, offsets = message
        segment = _attach(name, size)

        def arrays(k, dtype, shape):
            return np.ndarray(shape, dtype, buffer=segment, offset=offsets[k])
    else:
        blobs = message[2]

        def arrays(k, dtype, shape):
            return np.frombuffer(bytearray(blobs[k]), dtype=dtype).reshape(shape)
    return _Decoder(data, arrays).load()


def discard(message):
    """Release the segment of a message that will not be decoded."""
    if isinstance(message, tuple) and message and message[0] == "shm" and \
            _posixshmem is not None:
        try:
            _posixshmem.shm_unlink("/" + message[2])
        except OSError:
            pass


def cleanup_segments(prefix) -> None:
    """Unlink segments with ``prefix`` that no one received (Linux lists them in /dev/shm)."""
    if _posixshmem is None or not os.path.isdir(_SHM_DIR):
        return
    try:
        names = os.listdir(_SHM_DIR)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix):
            try:
                _posixshmem.shm_unlink("/" + name)
            except OSError:
                pass
