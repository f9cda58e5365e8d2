"""What ember knows about one op, for ``ember info --op NAME``: every facet, which backends
run it natively, and the file and line where each piece is defined."""
from __future__ import annotations

import functools
import inspect
import os

from ..runtime.registry import registry
from .dispatcher import get_op
from .facets import NOT_DIFFERENTIABLE, CustomDerivative, Derivative


def where_defined(obj) -> str:
    """``path:line`` of a function (through partials, bound methods and wrappers), or ''."""
    seen = 0
    while seen < 8:
        seen += 1
        if isinstance(obj, functools.partial):
            obj = obj.func
        elif inspect.ismethod(obj):
            obj = obj.__func__
        elif hasattr(obj, "__wrapped__"):
            obj = obj.__wrapped__
        elif not inspect.isfunction(obj) and callable(obj) and \
                inspect.isfunction(getattr(type(obj), "__call__", None)):
            obj = type(obj).__call__
        else:
            break
    code = getattr(obj, "__code__", None)
    if code is None:
        return ""
    return f"{_short(code.co_filename)}:{code.co_firstlineno}"


def _short(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _name(fn) -> str:
    if isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__qualname__", None) or type(fn).__name__


def _derivative_row(op):
    d = op.derivative
    if d is None:
        how = "decomposes through its composite" if op.composite is not None else \
            "none: a backward through it raises, naming the op"
        return ("derivative", how, "")
    if d is NOT_DIFFERENTIABLE:
        return ("derivative", "not differentiable (outputs never require grad)", "")
    if isinstance(d, CustomDerivative):
        return ("derivative", f"custom (ember.library): {_name(d.backward)}",
                where_defined(d.backward))
    assert isinstance(d, Derivative)
    node = d.name if isinstance(d.name, str) or d.name is None else "by overload"
    node = node or d.node_name(op.name)
    saves = d.save if isinstance(d.save, (tuple, list)) else dict(d.save)
    return ("derivative", f"{_name(d.backward)} → node {node}; saves {saves or 'nothing'}"
            f"{'; complex ok' if d.complex_ok else ''}", where_defined(d.backward))


def describe(name: str) -> list:
    """Rows ``(facet, value, defined at)`` describing the op called ``name``."""
    op = get_op(name)
    file, line = op.defined_at or ("", 0)
    rows = [("schema", str(op.schema), f"{_short(file)}:{line}" if file else "")]
    if op.meta is not None:
        rows.append(("meta", _name(op.meta), where_defined(op.meta)))
    else:
        rows.append(("meta", "none", ""))
    rows.append(_derivative_row(op))
    if op.functional is not None:
        rows.append(("functional twin", op.functional.name, ""))
    for facet in ("composite", "jvp", "batch_rule", "decomposition"):
        fn = getattr(op, facet)
        rows.append((facet, _name(fn) if fn is not None else "none",
                     where_defined(fn) if fn is not None else ""))
    for backend_name in registry.names():
        reason = registry.unavailable_reason(backend_name)
        if reason is not None:
            rows.append((f"kernel: {backend_name}", f"backend unavailable ({reason})", ""))
            continue
        backend = registry.get(backend_name)
        kernel = backend.kernels.get(op.name)
        if kernel is not None:
            rows.append((f"kernel: {backend_name}", _name(kernel), where_defined(kernel)))
        elif op.composite is not None:
            rows.append((f"kernel: {backend_name}", "none: runs the composite", ""))
        elif backend.cpu_fallback and backend_name != "cpu":
            rows.append((f"kernel: {backend_name}", "none: runs on the CPU fallback", ""))
        else:
            rows.append((f"kernel: {backend_name}", "none: raises NotImplementedError", ""))
    return rows
