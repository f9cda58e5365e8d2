"""The captured program: a flat list of op calls over numbered values (an SSA-style IR).

A value is a graph input (the compiled function's tensor arguments, in order), a constant the
function closed over (parameters, buffers, tensors made before the call), or the output of a
node. ``print(graph)`` shows one line per node, like torch.fx's readable form."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from ..utils._pytree import leaves_of_type


@dataclass(frozen=True)
class Ref:
    """A tensor slot in the graph: ``kind`` is "input", "const" or "node"; ``index`` the
    input position, constant number or node number; ``item`` the output of a multi-output
    node (None for a single output)."""
    kind: str
    index: int
    item: int | None = None

    def __str__(self):
        base = {"input": "x", "const": "c", "node": "v"}[self.kind] + str(self.index)
        return base if self.item is None else f"{base}[{self.item}]"


@dataclass
class Node:
    op: object                 # the dispatcher's Op
    args: tuple                # Refs where tensors were, Python values elsewhere (lists kept)
    kwargs: dict
    #: what the capture saw it make: (shape, dtype, device) for a tensor, a list of those for
    #: several outputs, None otherwise
    meta: object = None
    #: the dispatch key set of its tensor arguments at capture (device bits, autograd...):
    #: a replay that needs no autograd may call the device's kernel directly (codegen.py)
    keys: int = 0
    #: (strides, storage offset) of each output as captured (exporters tell a reshape from a
    #: general as_strided by it; replays rebuild views from it)
    layout: object = None
    #: for an op whose output is a view of one argument: that argument's position
    view_of: int | None = None

    def moved(self, op=None, args=None, kwargs=None, meta=None):
        """A copy with other arguments (and op/meta), keeping what the capture recorded."""
        return dataclasses.replace(self, op=self.op if op is None else op,
                                   args=self.args if args is None else args,
                                   kwargs=self.kwargs if kwargs is None else kwargs,
                                   meta=self.meta if meta is None else meta)

    def __str__(self):
        def show(a):
            if isinstance(a, (list, tuple)):
                return "[" + ", ".join(show(x) for x in a) + "]"
            return str(a) if isinstance(a, Ref) else repr(a)
        parts = [show(a) for a in self.args] + [f"{k}={show(v)}" for k, v in self.kwargs.items()]
        return f"{self.op.name}({', '.join(parts)})"


@dataclass
class Graph:
    nodes: list = field(default_factory=list)
    constants: list = field(default_factory=list)
    n_inputs: int = 0
    output: object = None      # the function's return structure with Refs for its tensors

    def __str__(self):
        lines = [f"graph({', '.join(f'x{i}' for i in range(self.n_inputs))}):"]
        for i, c in enumerate(self.constants):
            lines.append(f"  c{i} = constant {list(c.shape)} {c.dtype} {c.device}")
        for i, n in enumerate(self.nodes):
            lines.append(f"  v{i} = {n}")
        lines.append(f"  return {_show(self.output)}")
        return "\n".join(lines)

    def release_plan(self):
        """Per node, the node values no later node (nor the output) reads: a replay drops them
        right after, so temporaries are freed as early as in eager code."""
        plan = getattr(self, "_release", None)
        if plan is None or len(plan) != len(self.nodes):
            last = {}
            for i, node in enumerate(self.nodes):
                for r in _refs([node.args, node.kwargs]):
                    if r.kind == "node":
                        last[r.index] = i
            kept = {r.index for r in _refs([self.output]) if r.kind == "node"}
            plan = [[] for _ in self.nodes]
            for j in range(len(self.nodes)):
                if j not in kept:
                    plan[last.get(j, j)].append(j)
            self._release = plan
        return plan

    def op_names(self):
        return [n.op.name for n in self.nodes]


def rebuild(x, items):
    """A list or tuple of ``x``'s type holding ``items`` (named tuples — ``max(dim)``'s
    ``(values, indices)`` — take them as positional fields)."""
    if hasattr(x, "_fields"):
        return type(x)(*items)
    return type(x)(items)


def _show(x):
    if isinstance(x, Ref):
        return str(x)
    if isinstance(x, (list, tuple)):
        inner = ", ".join(_show(v) for v in x)
        return f"({inner})" if isinstance(x, tuple) else f"[{inner}]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {_show(v)}" for k, v in x.items()) + "}"
    return repr(x)


def _refs(x):
    return leaves_of_type(x, Ref)
