"""A graph as Python source (torch.fx's codegen): one line per node, ``del`` where a value is
last used, compiled once with ``exec``.

Replaying by walking the node list costs a recursive argument lookup per argument per call
(~6 us per node on a training step); the generated function reads its operands from local
variables, so a replay costs what the op calls themselves cost. Non-literal arguments (ops,
dtypes, devices, generators, ``SymInt``s) are bound in the function's namespace."""
from __future__ import annotations

from .dynamic import SymInt, has_symbols
from .graph import Ref, _refs
from .._device import device as device_cls
from ..dispatch import keys as K
from ..dispatch.dispatcher import Op, _backend_handler

_LITERALS = (int, float, bool, str, type(None))


def python_function(graph, direct=False):
    """``fn(inputs) -> output`` running ``graph``'s nodes in order. ``direct``: the replay
    needs no autograd recording (a training step under no_grad, a compiled forward or
    backward, a graph no input of which requires grad) — each op whose arguments were plain
    tensors of one device (no sparse/batched/autocast/Python-mode key at capture) calls the
    device's handler (its kernel, or its composite) itself, skipping the dispatcher's key-set
    walk and the autograd layer (~3 us a node)."""
    direct = direct and getattr(graph, "plain", False)
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
        has_tensor = bool(_refs([node.args, node.kwargs]))
        device = next((a for a in node.args if isinstance(a, device_cls)), None)
        handler = _direct_handler(node, has_tensor, device) if direct else None
        view = node.view_of if direct and handler is not None else None
        if view is not None and node.layout is not None and not has_symbols(node.args):
            # a view as captured: same storage, the geometry recorded (no op call)
            stride, offset = node.layout
            call = f"{args[view]}._view_of({tuple(node.meta[0])!r}, {tuple(stride)!r}, {offset})"
        elif handler is not None:
            call = f"{bind(handler, 'k')}({', '.join(args)})"
        elif not has_tensor and device is not None:   # a factory: dispatched on its device
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


def _direct_handler(node, has_tensor, device):
    """The device handler the dispatcher would reach for ``node`` with no functionality key,
    or None when the node must go through the dispatcher."""
    op = node.op
    if not isinstance(op, Op) or node.kwargs:
        return None
    if has_tensor:
        if node.keys & K.FUNCTIONALITY_MASK & ~K.AUTOGRAD:
            return None
        devices = K.devices_in(node.keys)
        if len(devices) != 1:
            return None
        device = devices[0]
    elif device is None:
        return None
    try:
        return _backend_handler(op, device)
    except NotImplementedError:
        return None
