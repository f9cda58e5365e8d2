"""``traverse_dps``: the graph of DataPipes a pipe is built from.

torch finds a pipe's inputs by pickling it with hooks; ember walks the pipe's state (what
``__getstate__`` returns) through containers, ``functools.partial`` objects and plain objects,
which finds the same inputs without pickling (so lambdas and open files do not get in the way).
"""
from __future__ import annotations

import functools
import types
import warnings
from collections import deque

from .datapipes.datapipe import IterDataPipe, MapDataPipe
from ..._warn import user_stacklevel

__all__ = ["DataPipe", "DataPipeGraph", "traverse", "traverse_dps"]

DataPipe = (IterDataPipe, MapDataPipe)
DataPipeGraph = dict  # {id(pipe): (pipe, DataPipeGraph of its inputs)}

_SCALARS = (str, bytes, int, float, complex, bool, type(None))
_OPAQUE = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
           types.MethodType)
_MAX_DEPTH = 8


def _state_of(datapipe):
    try:
        return datapipe.__getstate__()
    except Exception:  # noqa: BLE001 - a pipe whose state cannot be taken has no visible inputs
        return getattr(datapipe, "__dict__", {})


def _list_connected_datapipes(datapipe, cache):
    found = []
    seen_objects = set()

    def visit(obj, depth):
        if isinstance(obj, _SCALARS) or depth > _MAX_DEPTH:
            return
        if isinstance(obj, DataPipe):
            if obj is not datapipe and id(obj) not in cache:
                cache.add(id(obj))
                found.append(obj)
            return
        if id(obj) in seen_objects:
            return
        seen_objects.add(id(obj))
        if isinstance(obj, (list, tuple, set, frozenset, deque)):
            for item in obj:
                if not isinstance(item, _SCALARS):
                    visit(item, depth + 1)
        elif isinstance(obj, dict):
            for key, value in obj.items():
                visit(key, depth + 1)
                visit(value, depth + 1)
        elif isinstance(obj, functools.partial):
            visit(obj.args, depth + 1)
            visit(obj.keywords, depth + 1)
        elif isinstance(obj, _OPAQUE):
            return
        else:
            inner = getattr(obj, "__dict__", None)
            if isinstance(inner, dict):
                visit(inner, depth + 1)

    visit(_state_of(datapipe), 0)
    return found


def _traverse_helper(datapipe, cache):
    if not isinstance(datapipe, DataPipe):
        raise RuntimeError(f"Expected `IterDataPipe` or `MapDataPipe`, but {type(datapipe)} is "
                           f"found")
    dp_id = id(datapipe)
    if dp_id in cache:
        return {}
    cache.add(dp_id)
    graph = {dp_id: (datapipe, {})}
    for item in _list_connected_datapipes(datapipe, set(cache)):
        graph[dp_id][1].update(_traverse_helper(item, set(cache)))
    return graph


def traverse_dps(datapipe) -> DataPipeGraph:
    """``{id(pipe): (pipe, {id(input): (input, {...}), ...})}`` for ``datapipe`` and its inputs,
    recursively; a pipe reachable twice appears under each parent, a cycle stops."""
    return _traverse_helper(datapipe, set())


def traverse(datapipe, only_datapipe=None) -> DataPipeGraph:
    warnings.warn("`traverse` function is deprecated and will be removed after 1.13. Please use "
                  "`traverse_dps` instead.", FutureWarning, stacklevel=user_stacklevel())
    return traverse_dps(datapipe)
