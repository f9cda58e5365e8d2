"""Moving batches from DataLoader workers to the main process without pickling their data.

A worker pickles the batch's structure with a pickler that takes every ember tensor (and every
numpy array of at least ``_ARRAY_MIN_BYTES``) out of the stream. Their bytes are copied once
into a *slot*: a POSIX shared-memory segment from the worker's pool; only the slot's id,
offsets, shapes and dtypes travel through the result queue. The main process maps each slot
once (then unlinks its name: both mappings stay valid) and rebuilds each tensor with
``ember.from_numpy`` over the mapping, so the receiving side copies nothing.

A slot goes back to its worker when every array of its batch has been garbage-collected in the
main process (a ``weakref.finalize`` on the batch's buffer); the ids ride back on the next
index message. A worker whose slots are all in use makes a new one, so a program that keeps
batches only grows the pool (as torch's shared-memory tensors would); past ``_MAX_FREE_SLOTS``
idle slots are retired.

Batches under ``_INLINE_LIMIT`` bytes ride inside the pickle (a copy is cheaper than a slot);
so do all batches when shared memory is missing (no ``_posixshmem``) or full
(``posix_fallocate`` fails, reported once). Segment names start with
``ember_dl_<main pid>_<loader>_``; ``cleanup_segments`` unlinks any never attached.
"""
from __future__ import annotations

import io
import itertools
import mmap
import os
import pickle
import warnings
import weakref
from collections import deque

import numpy as np
import ember

from ...._tensor import Tensor
from ...._warn import user_stacklevel

try:
    import _posixshmem
except ImportError:  # not POSIX: every batch goes inline
    _posixshmem = None

_INLINE_LIMIT = 32 * 1024
_ARRAY_MIN_BYTES = 4096
_ALIGN = 64
_MAX_FREE_SLOTS = 6
_SHM_DIR = "/dev/shm"
_loader_ids = itertools.count()


def new_prefix() -> str:
    """Segment-name prefix for one DataLoader iterator of this (main) process."""
    return f"ember_dl_{os.getpid()}_{next(_loader_ids)}_"


class _Encoder(pickle.Pickler):
    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.arrays = []

    def persistent_id(self, obj):
        if type(obj) is Tensor:
            if obj.requires_grad and not obj.is_leaf:
                raise RuntimeError(
                    "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
                    "autograd does not support crossing process boundaries.  If you just want to "
                    "transfer the data, call detach() on the tensor before serializing (e.g., "
                    "putting it on the queue).")
            self.arrays.append(np.ascontiguousarray(obj._host()))
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
    return offsets, max(total, _ALIGN)


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


class Sender:
    """Worker side: encodes batches into messages, owning a pool of shared-memory slots."""

    def __init__(self, prefix, worker_id):
        self.prefix = prefix
        self.worker_id = worker_id
        self.slots = {}  # id -> (name, size, mmap)
        self.free = []
        self.retired = []
        self.ids = itertools.count()
        self.shm_ok = _posixshmem is not None

    def release(self, slot_ids):
        self.free.extend(slot_ids)
        while len(self.free) > _MAX_FREE_SLOTS:
            slot = self.free.pop(0)
            self.slots.pop(slot)[2].close()
            self.retired.append(slot)

    def _slot_for(self, size):
        fitting = [s for s in self.free if self.slots[s][1] >= size]
        if fitting:
            slot = min(fitting, key=lambda s: self.slots[s][1])
            self.free.remove(slot)
            return slot
        slot = next(self.ids)
        name = f"{self.prefix}{self.worker_id}_{slot}"
        self.slots[slot] = (name, size, _create_segment(name, size))
        return slot

    def encode(self, obj):
        buf = io.BytesIO()
        encoder = _Encoder(buf)
        encoder.dump(obj)
        arrays = encoder.arrays
        offsets, size = _layout(arrays)
        if arrays and size >= _INLINE_LIMIT and self.shm_ok:
            try:
                slot = self._slot_for(size)
            except OSError as e:
                self.shm_ok = False
                warnings.warn(f"DataLoader worker {self.worker_id}: cannot place a {size}-byte "
                              f"batch in shared memory ({e}); sending batches through the "
                              f"result queue instead (slower). Free space in {_SHM_DIR} or use "
                              f"smaller batches.", RuntimeWarning, stacklevel=user_stacklevel())
            else:
                name, slot_size, segment = self.slots[slot]
                for a, off in zip(arrays, offsets):
                    view = np.ndarray(a.shape, a.dtype, buffer=segment, offset=off)
                    np.copyto(view, a, casting="no")
                    del view
                retired, self.retired = self.retired, []
                return ("shm", self.worker_id, buf.getvalue(), slot, name, slot_size, offsets,
                        retired)
        return ("inline", self.worker_id, buf.getvalue(), [a.tobytes() for a in arrays])

    def close(self):
        for _, _, segment in self.slots.values():
            segment.close()
        self.slots.clear()


def _attach(name, size):
    fd = _posixshmem.shm_open("/" + name, os.O_RDWR, 0o600)
    try:
        return mmap.mmap(fd, size)
    finally:
        os.close(fd)
        _posixshmem.shm_unlink("/" + name)  # both sides have it mapped; the name can go


class _Decoder(pickle.Unpickler):
    def __init__(self, data, arrays):
        super().__init__(io.BytesIO(data))
        self.arrays = arrays

    def persistent_load(self, pid):
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


def _give_back(returns, slot):
    returns.append(slot)


class Receiver:
    """Main-process side: decodes messages; tracks which slots each worker may reuse."""

    def __init__(self, num_workers):
        self.segments = {}  # (worker, slot) -> mmap
        self.returns = [deque() for _ in range(num_workers)]

    def take_returns(self, worker_id):
        """Slot ids of ``worker_id`` freed since the last call (thread-safe)."""
        q, out = self.returns[worker_id], []
        while q:
            out.append(q.popleft())
        return out

    def decode(self, message):
        kind, worker_id, data = message[0], message[1], message[2]
        if kind == "inline":
            blobs = message[3]

            def arrays(k, dtype, shape):
                return np.frombuffer(bytearray(blobs[k]), dtype=dtype).reshape(shape)
            return _Decoder(data, arrays).load()
        _, _, _, slot, name, size, offsets, retired = message
        for old in retired:
            self.segments.pop((worker_id, old), None)
        segment = self.segments.get((worker_id, slot))
        if segment is None:
            segment = self.segments[worker_id, slot] = _attach(name, size)
        whole = np.frombuffer(segment, dtype=np.uint8)
        weakref.finalize(whole, _give_back, self.returns[worker_id], slot)

        def arrays(k, dtype, shape):
            dtype = np.dtype(dtype)
            count = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            return whole[offsets[k]:offsets[k] + count].view(dtype).reshape(shape)
        return _Decoder(data, arrays).load()

    def close(self):
        self.segments.clear()  # mappings stay alive while batches still use them


def is_message(data) -> bool:
    return isinstance(data, tuple) and len(data) > 2 and data[0] in ("shm", "inline")


def cleanup_segments(prefix) -> None:
    """Unlink segments with ``prefix`` that were never attached (Linux lists /dev/shm)."""
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
