"""Storage: one block of device memory, shared by every tensor that views it."""
from __future__ import annotations


class Storage:
    """``data`` is the backend's handle (a numpy/cupy array, an OpenCL buffer, …).

    The memory goes back to the backend's allocator when the last Storage reference dies; tensors
    and views hold the Storage, never the handle. ``version`` is the version counter shared by all
    views (bumped by in-place ops; autograd compares it with the value it saved). ``cache`` is a
    slot a backend may use for a derived handle (the CPU backend keeps a flat byte view there).
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
