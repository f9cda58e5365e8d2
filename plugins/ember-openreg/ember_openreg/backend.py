"""``OpenRegBackend``: devices, memory, streams and data movement. Kernels live in ``kernels``.

A Storage's ``data`` is the tensor's bytes in the device arena (a numpy ``uint8`` view nobody
outside this package touches) and its ``cache`` holds the allocator ``Block``: while a Storage
lives, its block is not reused. ``native(t)`` is the strided numpy view a kernel computes on;
only code running on a stream's worker may read or write it.
"""
from __future__ import annotations

import math
import os
import threading
import weakref

import numpy as np

import ember
from ember.runtime import (Backend, Storage, from_numpy_dtype, get_native, make_tensor,
                           registry, set_native, to_numpy_dtype)

from . import memory
from .random import OpenRegGenerator
from .streams import Event, Stream


class OpenRegBackend(Backend):
    name = "openreg"
    # ops without a native kernel here run on the CPU (inputs copied out, results copied back)
    cpu_fallback = True
    Stream = Stream
    Event = Event  # Backend.__init__ binds a subclass to this backend: ember.openreg.Event()

    def __init__(self):
        super().__init__()
        self._count = int(os.environ.get("EMBER_OPENREG_DEVICES", "2"))
        self._allocators = {}
        self._workers = {}                       # index -> WeakSet of live stream workers
        self._default_streams = {}
        self._tls = threading.local()            # the current stream is per host thread
        self._lock = threading.Lock()
        self._stream_lock = threading.Lock()
        from . import kernels, random
        kernels.register(self)
        random.register(self)

    # -- devices --------------------------------------------------------------------------------
    def device_count(self) -> int:
        return self._count

    def device_name(self, index: int) -> str:
        return f"OpenReg emulated accelerator {index}"

    def check_index(self, index: int) -> None:
        if not 0 <= index < self._count:
            raise RuntimeError(f"openreg: invalid device index {index}; this machine has "
                               f"{self._count} openreg device(s)")

    def _concrete(self, device):
        return device if device.index is not None else ember.device(self.name,
                                                                    self.current_device())

    # -- memory ---------------------------------------------------------------------------------
    def allocator(self, index: int):
        a = self._allocators.get(index)
        if a is None:
            self.check_index(index)
            with self._lock:
                a = self._allocators.get(index)
                if a is None:
                    a = self._allocators[index] = memory.make_allocator(f"openreg:{index}")
        return a

    def new_tensor(self, shape, dtype, device):
        """A fresh C-contiguous tensor in the device arena (every kernel output is one)."""
        device = self._concrete(device)
        shape = tuple(shape)
        nbytes = math.prod(shape) * dtype.itemsize
        block = self.allocator(device.index).allocate(nbytes)
        storage = Storage(block.handle.mem[:nbytes], nbytes, device)
        storage.cache = block  # the block returns to the allocator when the storage dies
        return make_tensor(storage, shape, dtype)

    def native(self, t):
        """The tensor as a numpy array over its arena bytes. Kernels only: see the module doc."""
        arr = get_native(t)
        if arr is None:
            isz = t.dtype.itemsize
            shape = tuple(t.shape)
            # an empty slice may start past the end of its storage (x[5:] of a 4-element x)
            offset = t.storage_offset() * isz if 0 not in shape else 0
            arr = np.ndarray(shape, to_numpy_dtype(t.dtype), buffer=t.untyped_storage().data, offset=offset,
                             strides=[s * isz for s in t.stride()])
            set_native(t, arr)
        return arr

    # -- streams --------------------------------------------------------------------------------
    def workers(self, index: int):
        with self._lock:
            return self._workers.setdefault(index, weakref.WeakSet())

    def current_stream(self, index: int):
        cur = self._tls.__dict__.get("streams")
        s = cur.get(index) if cur else None
        if s is None:
            s = self._default_streams.get(index)
            if s is None:
                with self._stream_lock:
                    s = self._default_streams.get(index)
                    if s is None:
                        s = self._default_streams[index] = Stream(self, index)
        return s

    def set_stream(self, stream) -> None:
        self._tls.__dict__.setdefault("streams", {})[stream.device_index] = stream

    def launch(self, device, name, fn, *args):
        """Queue kernel ``name`` (``fn(*args)``) on the current stream of ``device``."""
        return self.current_stream(device.index).launch(name, fn, *args)

    def synchronize(self, index=None) -> None:
        """Wait for every stream of device ``index`` (the current device when None)."""
        index = self.current_device() if index is None else index
        self.check_index(index)
        for w in list(self.workers(index)):
            w.wait(w.launched)
        for w in list(self.workers(index)):
            w.raise_pending(ember.device(self.name, index))

    # -- random numbers -------------------------------------------------------------------------
    def create_generator(self, index: int, seed: int):
        return OpenRegGenerator(seed)

    # -- data movement --------------------------------------------------------------------------
    def empty(self, shape, dtype, device):
        return self.new_tensor(shape, dtype, device)

    def from_numpy(self, array, device, non_blocking=False):
        """Upload: a private host copy (the caller may reuse ``array`` at once), then a queued
        write into the arena."""
        dtype = from_numpy_dtype(array.dtype)
        dst = self.new_tensor(array.shape, dtype, device)
        host = np.array(array, order="C", copy=True)
        self.launch(dst.device, "upload", _write, self, dst, host)
        return dst

    def to_numpy(self, tensor):
        """Download into a fresh host array: queued on the current stream, then waited for."""
        host = np.empty(tuple(tensor.shape), dtype=to_numpy_dtype(tensor.dtype))
        stream = self.current_stream(tensor.device.index)
        stream.launch("download", _read, self, tensor, host)
        stream.synchronize()
        return host

    def copy_(self, dst, src, non_blocking=False):
        """``dst[...] = src``; ``src`` may live on the CPU or another device (the CPU fallback
        writes in-place results back this way)."""
        if src.device is not dst.device:
            host = registry.get(src.device.type).to_numpy(src)
            src = self.from_numpy(host, dst.device)
        self.launch(dst.device, "copy_", copy_body, self, dst, src)
        return dst

    def storage_nbytes(self, data) -> int:
        return data.nbytes


# -- device-side bodies of the copies (run on a worker) -------------------------------------------
def _write(backend, dst, host):
    backend.native(dst)[...] = host


def _read(backend, src, host):
    host[...] = backend.native(src)


def copy_body(backend, dst, src):
    """The device half of `copy_` and `_to_copy` (shared by the kernels module)."""
    s, d = backend.native(src), backend.native(dst)
    if s.dtype.kind == "c" and d.dtype.kind != "c":
        s = (s != 0) if d.dtype.kind == "b" else s.real  # PyTorch: complex -> bool is "!= 0"
    np.copyto(d, np.broadcast_to(s, d.shape), casting="unsafe")
