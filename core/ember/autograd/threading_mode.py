"""torch's per-thread switch for multithreaded backward (``set_multithreading_enabled``).

torch runs the backward of accelerator work on one worker thread per device, and CPU work on
the calling thread; ``mode=False`` asks for the calling thread everywhere. ember's engine
always runs backward on the calling thread, which is what ``mode=False`` asks for, so the
switch is kept (per thread, as torch keeps it) and reported, and changes no result."""
from __future__ import annotations

import threading

__all__ = ["is_multithreading_enabled", "set_multithreading_enabled"]

_local = threading.local()


def is_multithreading_enabled() -> bool:
    """This thread's setting of ``set_multithreading_enabled`` (True by default)."""
    return getattr(_local, "enabled", True)


class set_multithreading_enabled:
    """``set_multithreading_enabled(mode)``: set this thread's switch, as a function call or
    for a ``with`` block (restored at its end) or as a decorator."""

    def __init__(self, mode: bool) -> None:
        self.prev = is_multithreading_enabled()
        _local.enabled = bool(mode)
        self.mode = mode

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _local.enabled = self.prev

    def clone(self) -> "set_multithreading_enabled":
        return self.__class__(self.mode)

    def __call__(self, fn):
        _local.enabled = self.prev  # as a decorator, the switch applies inside fn only
        mode = self.mode

        def wrapper(*args, **kwargs):
            with set_multithreading_enabled(mode):
                return fn(*args, **kwargs)
        wrapper.__wrapped__ = fn
        wrapper.__name__ = getattr(fn, "__name__", "wrapper")
        return wrapper
