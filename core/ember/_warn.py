"""Where ember's warnings point: at the user's line, as PyTorch's do.

A fixed ``stacklevel`` counts ember's own frames, and their number depends on the path a call
took (the binding layer, autocast, the compiled fast path, a tensor method or a function), so
a warning would name ``ember/amp/dispatch.py`` instead of the script that called softmax.
``user_stacklevel()`` counts instead: the first frame outside ember and its backends (and
outside importlib, for warnings raised while a module is imported) is the one shown, and a
user's hook called back from inside ember is outside it.
"""
from __future__ import annotations

import sys

# ember, its backends and plug-ins (ember_cpu, ember_opencl, ember_conformance, ...), importlib
_OWN_PACKAGES = ("ember", "importlib")
_OWN_PREFIXES = ("ember.", "ember_", "importlib.")


def _own(module_name: str) -> bool:
    return module_name in _OWN_PACKAGES or module_name.startswith(_OWN_PREFIXES)


def user_stacklevel() -> int:
    """The ``stacklevel`` of ``warnings.warn`` called by the caller of this function that names
    the first frame outside ember."""
    frame = sys._getframe(1)   # the function calling warnings.warn: stacklevel 1
    level = 1
    while frame is not None and _own(frame.f_globals.get("__name__", "")):
        frame = frame.f_back
        level += 1
    return level


# torch.set_warn_always: warnings torch gives once per process (TORCH_WARN_ONCE) every time
_WARN_ALWAYS = [False]


def set_warn_always(b: bool) -> None:
    """When True, warnings ember gives once per process are given every time (torch's
    ``set_warn_always``); useful in tests that check for them."""
    _WARN_ALWAYS[0] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether once-per-process warnings are given every time (``set_warn_always``)."""
    return _WARN_ALWAYS[0]


def first_time(seen: set, key) -> bool:
    """Whether a once-per-process warning about ``key`` is due now: the first time ``key`` is
    seen, or every time under ``set_warn_always(True)``."""
    if key in seen:
        return _WARN_ALWAYS[0]
    seen.add(key)
    return True
