"""Public dotted names of ember's functions (``ember.relu``, ``ember.nn.functional.gelu``), so
generated code and node printouts name them as a user would."""
from __future__ import annotations

import importlib

_NAMESPACES = ("ember", "ember.nn.functional", "ember.special", "ember.linalg", "ember.fft",
               "ember.nn.init", "ember.func")
_table = None


def _build():
    table = {}
    for ns in _NAMESPACES:
        try:
            mod = importlib.import_module(ns)
        except ImportError:
            continue
        for name in dir(mod):
            if name.startswith("__"):
                continue
            try:
                obj = getattr(mod, name)
            except Exception:  # noqa: BLE001 - lazy attributes that fail are not functions
                continue
            if callable(obj) and not isinstance(obj, type):
                table.setdefault(id(obj), (obj, f"{ns}.{name}"))
    return table


def lookup(fn):
    """``fn``'s public dotted name, or None."""
    global _table
    if _table is None:
        _table = _build()
    hit = _table.get(id(fn))
    return hit[1] if hit is not None and hit[0] is fn else None


def functions():
    """(namespace module, name, function) of every public ember function."""
    out = []
    for ns in _NAMESPACES:
        try:
            mod = importlib.import_module(ns)
        except ImportError:
            continue
        for name, obj in list(vars(mod).items()):
            if name.startswith("__") or isinstance(obj, type) or not callable(obj):
                continue
            if type(obj).__name__ in ("module",):
                continue
            out.append((mod, name, obj))
    return out
