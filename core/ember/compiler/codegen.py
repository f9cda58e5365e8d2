"""A graph as Python source (torch.fx's codegen): one line per node, ``del`` where a value is
last used, compiled once with ``exec``.

Replaying by walking the node list costs a recursive argument lookup per argument per call
(~6 us per node on a training step); the generated function reads its operands from local
variables, so a replay costs what the op calls themselves cost. Non-literal arguments (ops,
dtypes, devices, generators, ``SymInt``s) are bound in the function's namespace."""
from __future__ import annotations

from .dynamic import SymInt
from .graph import Ref

_LITERALS = (int, float, bool, str, type(None))


def python_function(graph):
    """``fn(inputs) -> output`` running ``graph``'s nodes in order."""
    from .._device import device as device_cls
    namespace = {}
    counter = [0]

    def bind(value, hint="k"):
        counter[0] += 1
        name = f"{hint}{counter[0]}"
        namespace[name] = value
        return name

    def ref(r):
        base = {"input": "x", "const": "c", "node": "v"}[r.kind] + str(r.index)
        return base if r.item is None else f"{base}[{r.item}]"

    def emit(a):
        if isinstance(a, Ref):
            return ref(a)
        if isinstance(a, SymInt):
            return f"{bind(a, 's')}.value(inputs)"
        if isinstance(a, list):
            return "[" + ", ".join(emit(v) for v in a) + "]"
        if isinstance(a, tuple):
            items = "".join(emit(v) + ", " for v in a)
            # a named tuple (max(dim)'s values/indices) is rebuilt as its own type
            return f"{bind(type(a), 'T')}({items})" if hasattr(a, "_fields") else f"({items})"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {emit(v)}" for k, v in a.items()) + "}"
        if type(a) in _LITERALS and (not isinstance(a, float) or a == a and abs(a) != float("inf")):
            return repr(a)
        return bind(a)

    lines = ["def replay(inputs):"]
    if graph.n_inputs:
        lines.append("    " + "".join(f"x{i}, " for i in range(graph.n_inputs)) +
                     "= inputs")
    for i, c in enumerate(graph.constants):
        namespace[f"c{i}"] = c
    release = graph.release_plan()
    for i, node in enumerate(graph.nodes):
        op = bind(node.op, "op")
        args = [emit(a) for a in node.args]
        args += [f"{k}={emit(v)}" for k, v in node.kwargs.items()]
        has_tensor = any(True for _ in _refs([node.args, node.kwargs]))
        device = next((a for a in node.args if isinstance(a, device_cls)), None)
        if not has_tensor and device is not None:   # a factory: dispatched on its device
            call = f"{op}.on({bind(device, 'dev')}, {', '.join(args)})"
        else:
            call = f"{op}({', '.join(args)})"
        lines.append(f"    v{i} = {call}")
        dead = release[i]
        if dead:
            lines.append("    del " + ", ".join(f"v{j}" for j in dead))
    lines.append(f"    return {emit(graph.output)}")
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<ember.compile graph {id(graph):x}>", "exec"), namespace)
    fn = namespace["replay"]
    fn.source = source
    return fn


def _refs(x):
    if isinstance(x, Ref):
        yield x
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _refs(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _refs(v)
