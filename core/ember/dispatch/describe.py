"""What ember knows about one op, for ``ember info --op NAME``: every facet, which backends
run it natively, and the file and line where each piece is defined; and, for ``ember info
--missing-lowering``, which ops lack a lowering facet."""
from __future__ import annotations

import functools
import inspect
import os
from pathlib import Path

from ..runtime.registry import registry
from .dispatcher import all_ops, get_op
from .facets import NOT_DIFFERENTIABLE, CustomDerivative, Derivative

_OPS_DIR = Path(__file__).resolve().parents[1] / "ops"


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


def _lowering_rows(op):
    rule = op.pointwise
    if rule is not None:
        marks = getattr(rule, "operands", None)
        pointwise = (_name(rule) + (f" ({marks} operands)" if marks else ""), where_defined(rule))
    elif inlined(op):
        pointwise = ("none: recorded as its composite's ops", "")
    elif pointwise_shaped(op) and not op.mutates:
        pointwise = ("none: stays op by op in compiled graphs (not fused)", "")
    else:
        pointwise = ("none", "")
    rule = op.onnx
    if rule is not None:
        onnx = (_name(rule) + (" (folded when its inputs are constants)"
                               if getattr(rule, "fold", False) else ""), where_defined(rule))
    elif inlined(op):
        onnx = ("none: exported as its composite's ops", "")
    else:
        onnx = ("none: ember.onnx.export refuses it", "")
    rows = [("pointwise", *pointwise), ("onnx", *onnx)]
    if op.applies is not None:
        rows.append(("applies", f"{op.applies.name} at each index of its lists", ""))
    return rows


def pointwise_shaped(op) -> bool:
    """Whether ``op`` maps elements to elements: an op of the elementwise family, or one with
    the elementwise batching rule (output the broadcast of its inputs)."""
    if getattr(op.batch_rule, "family", None) == "elementwise":
        return True
    return family(op).startswith("elementwise")


def inlined(op) -> bool:
    """Whether ember.compile and ember.export record ``op`` as the ops its composite runs (a
    pure decomposition without a derivative of its own or a CPU kernel): it lowers through
    them."""
    if op.composite is None or op.derivative is not None:
        return False
    cpu = registry.get("cpu") if "cpu" in registry.names() else None
    return cpu is None or cpu.kernels.get(op.name) is None


def family(op) -> str:
    """The op family that defines ``op``: its module under ``ember/ops`` (``elementwise.unary``),
    or ``library <namespace>`` for an op defined through ``ember.library``."""
    if "::" in op.name:
        return f"library {op.name.split('::', 1)[0]}"
    file = Path(op.defined_at[0]).resolve() if op.defined_at else None
    if file is None or _OPS_DIR not in file.parents:
        return "other"
    return ".".join(file.relative_to(_OPS_DIR).with_suffix("").parts)


def missing_lowering() -> dict:
    """``{"compile": {family: [op names]}, "export": {family: [op names]}}``: the pointwise-shaped
    functional ops without a ``pointwise`` facet, which compiled graphs run op by op instead of
    fusing, and the ops without an ``onnx`` facet, which ``ember.onnx.export`` refuses. Ops
    recorded as their composite's ops lower through those and are left out; in-place ops never
    fuse (a mutation ends a fused group) and are left out of the first list."""
    out = {"compile": {}, "export": {}}
    for name in sorted(all_ops()):
        op = get_op(name)
        if inlined(op):
            continue
        if op.pointwise is None and not op.mutates and pointwise_shaped(op):
            out["compile"].setdefault(family(op), []).append(name)
        if op.onnx is None:
            out["export"].setdefault(family(op), []).append(name)
    return {k: dict(sorted(v.items())) for k, v in out.items()}


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
    rows += _lowering_rows(op)
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
