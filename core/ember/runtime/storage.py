"""``Storage``: one block of device memory, shared by every tensor that views it."""
from __future__ import annotations


class Storage:
    """``Storage(data, nbytes, device)``: the memory under one or more tensors.

    ``data`` is the backend's handle (a numpy/cupy array, an OpenCL buffer, None on the meta
    device); only the backend that made it reads it. ``nbytes`` is the size in bytes; ``device``
    the concrete ``ember.device`` it lives on. The memory goes back to the backend's allocator
    when the last reference to the Storage dies: tensors and views hold the Storage, never the
    handle. ``version`` is the version counter shared by all views (in-place ops bump it;
    autograd compares it with the value it saved). ``cache`` is a slot the backend may use for a
    derived handle or to keep an allocator block alive (the CPU keeps a flat byte view there,
    OpenReg its arena block).
    """

    __slots__ = ("data", "nbytes", "device", "version", "cache", "__weakref__")

    def __init__(self, data, nbytes: int, device):
        self.data = data
        self.nbytes = nbytes
        self.device = device
        self.version = 0
        self.cache = None

    def __repr__(self):
        return f"<Storage {self.nbytes} bytes on {self.device}>"
