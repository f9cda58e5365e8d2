"""What the compile loggers say about guards (``EMBER_LOGS=recompiles,guards,graph_breaks``):
a guard key (``CompiledFunction._guards``) in words, and how a new key differs from the cached
ones. Formatting only, called where a capture happens (never on a replay)."""
from __future__ import annotations

import logging

log = logging.getLogger("ember.compile")
recompiles = logging.getLogger("ember.compile.recompiles")
guards = logging.getLogger("ember.compile.guards")
graph_breaks = logging.getLogger("ember.compile.graph_breaks")

_TENSOR_FIELDS = ("shape", "dtype", "device", "requires_grad", "strides", "storage offset")
_PARTS = ("tensor arguments", "argument aliasing", "non-tensor arguments", "grad mode",
          "module training mode", "module parameters", "module buffers")


def name_of(fn) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def describe(key) -> list:
    """The guards of one case, a line each."""
    shapes, aliases, structure, grad = key[:4]
    lines = [f"x{i}: " + ", ".join(f"{f}={v}" for f, v in zip(_TENSOR_FIELDS, t))
             for i, t in enumerate(shapes)]
    lines += [f"aliasing {aliases}", f"non-tensor arguments {structure}",
              f"grad mode {'on' if grad else 'off'}"]
    if len(key) > 4:
        lines += [f"module training={key[4]}", f"module parameters: {len(key[5])}",
                  f"module buffers: {len(key[6])}"]
    return lines


def difference(old, new) -> str:
    """The first guard of ``old`` that ``new`` fails, in words."""
    if len(old[0]) != len(new[0]):
        return f"{len(new[0])} tensor arguments instead of {len(old[0])}"
    for i, (a, b) in enumerate(zip(old[0], new[0])):
        for field, x, y in zip(_TENSOR_FIELDS, a, b):
            if x != y:
                return f"{field} of x{i} changed: {x} -> {y}"
    for part, x, y in zip(_PARTS[1:], old[1:], new[1:]):
        if x != y:
            return f"{part} changed"
    return "a guard changed"


def nearest_difference(cached, new) -> str:
    """Why ``new`` matches none of the ``cached`` keys: its difference from the last one."""
    keys = list(cached)
    return difference(keys[-1], new) if keys else "first call"
