"""A backend's kernel table: op name -> callable.

A kernel is called with exactly the arguments of its op (see the op's ``schema``) and returns the
op's outputs as Tensors on the backend's device. Writing a table entry invalidates the
dispatcher's resolution cache for that op, so kernels can be registered at any time.
"""
from __future__ import annotations


class KernelTable:
    def __init__(self, backend_name: str):
        self.backend_name = backend_name
        self._kernels: dict = {}

    def register(self, name: str, fn=None):
        """``table.register("add", fn)`` or ``@table.register("add")``."""
        if fn is None:
            return lambda f: self.register(name, f)
        self._kernels[name] = fn
        from ..dispatch.dispatcher import invalidate
        invalidate(name)
        return fn

    def update(self, mapping) -> None:
        for name, fn in mapping.items():
            self.register(name, fn)

    def get(self, name: str):
        return self._kernels.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._kernels

    def __len__(self) -> int:
        return len(self._kernels)

    def names(self):
        return sorted(self._kernels)
