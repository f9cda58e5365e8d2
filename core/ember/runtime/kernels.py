"""``KernelTable``: a backend's kernels, op name -> callable.

A kernel is called with exactly the arguments of its op, positionally, in the order of the op's
schema (``ember.runtime.get_op(name).schema``), and returns the op's outputs as Tensors on the
backend's device (a tuple of Tensors for ops with several outputs; the mutated argument itself
for in-place ops). Writing an entry publishes ``events.KERNEL_CHANGED``, on which the dispatcher
forgets what it had resolved for that op, so kernels can be registered or replaced at any time.
"""
from __future__ import annotations

from . import events


class KernelTable:
    """Op name -> kernel, for one backend.

    ``on_missing(name)``, when given, is asked for a kernel the table does not hold (a backend
    that makes kernels on demand, like the meta device, which builds them from meta functions);
    a kernel it returns is kept; None means "no kernel" (asked again next time).
    """

    def __init__(self, backend_name: str, on_missing=None):
        self.backend_name = backend_name
        self._kernels: dict = {}
        self._on_missing = on_missing

    def register(self, name: str, fn=None):
        """``table.register("add", fn)`` or, as a decorator, ``@table.register("add")``.
        Replaces an existing entry. Returns ``fn``."""
        if fn is None:
            return lambda f: self.register(name, f)
        if not callable(fn):
            raise TypeError(f"{self.backend_name}: the kernel for '{name}' must be callable, "
                            f"got {type(fn).__name__}")
        self._kernels[name] = fn
        events.publish(events.KERNEL_CHANGED, self.backend_name, name)
        return fn

    def update(self, mapping) -> None:
        """Register every ``name: fn`` of ``mapping``."""
        for name, fn in mapping.items():
            self.register(name, fn)

    def remove(self, name: str) -> None:
        """Forget the kernel of ``name`` (no error when there is none)."""
        if self._kernels.pop(name, None) is not None:
            events.publish(events.KERNEL_CHANGED, self.backend_name, name)

    def get(self, name: str):
        """The kernel of ``name``, or None."""
        fn = self._kernels.get(name)
        if fn is None and self._on_missing is not None:
            fn = self._on_missing(name)
            if fn is not None:
                self._kernels[name] = fn
        return fn

    def __contains__(self, name: str) -> bool:
        return self.get(name) is not None

    def __len__(self) -> int:
        return len(self._kernels)

    def names(self) -> list:
        """The op names with a kernel, sorted."""
        return sorted(self._kernels)

    def __repr__(self):
        return f"<KernelTable of '{self.backend_name}': {len(self)} kernels>"
