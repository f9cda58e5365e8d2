"""Which implementation of the hot path runs: the compiled ``ember._C`` or the Python reference.

The per-op path (dispatch, tensor construction, a kernel result's wrapping, autograd's
recording) is written in Python — dispatcher.py, _tensor.py, kit/array_backend.py,
autograd/record.py — and transcribed in C in ``core/ember/csrc/`` (issue #31). The Python
stays the reference and the readable form; ``C`` is the compiled module when it was built and
``EMBER_PURE_PYTHON`` is unset (or 0), else None, and each hot module installs the C
functions over its own only when ``C`` is not None.
"""
from __future__ import annotations

import functools
import os

C = None
REASON = ""

if os.environ.get("EMBER_PURE_PYTHON", "0") not in ("", "0"):
    REASON = "EMBER_PURE_PYTHON is set"
else:
    try:
        from . import _C as C
    except ImportError as e:  # not built (no compiler at install time): the Python runs
        REASON = f"ember._C is not built ({e})"


def describe() -> str:
    """One line for ``ember info``."""
    if C is not None:
        return "compiled (ember._C, C with the CPython API)"
    return f"Python reference ({REASON})"


# ApiFunction kinds (csrc/api.c): which API function's first test it transcribes
API_ADD_SUB, API_BINARY, API_DIV, API_UNARY = 0, 1, 2, 3


def compiled_parts(obj):
    """(kind, op, Python function) of a compiled API function, or None for anything else: what
    the binding layer needs to put its wrapper behind the same compiled first test."""
    if C is not None and isinstance(obj, C.ApiFunction):
        return obj.kind, obj.op, obj.fallback
    return None


def api_function(kind, op, fn):
    """``fn`` (an elementwise API function) behind its compiled first test, which calls ``op``
    directly for a tensor and an operand that need no rule, and ``fn`` for everything else;
    ``fn`` itself when the hot path is not compiled. The result looks like ``fn`` (name, doc,
    signature through ``__wrapped__``) and binds as a method."""
    if C is None:
        return fn
    fast = C.ApiFunction(kind, op, fn)
    functools.update_wrapper(fast, fn)
    return fast
