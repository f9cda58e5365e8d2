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

_OWN = ("ember", "importlib")


def user_stacklevel() -> int:
    """The ``stacklevel`` of ``warnings.warn`` called by the caller of this function that names
    the first frame outside ember."""
    frame = sys._getframe(1)   # the function calling warnings.warn: stacklevel 1
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith(_OWN):
        frame = frame.f_back
        level += 1
    return level
